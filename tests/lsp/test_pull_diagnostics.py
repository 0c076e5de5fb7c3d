"""Pull diagnostics: `textDocument/diagnostic` for open documents, `workspace/diagnostic` for
the workspace's closed `.qvr` files (bounded: no links out of it, no oversized files)."""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types as lsp

from tests.lsp.support import (
    CONFIG,
    EXAMPLES,
    WAIT_SECONDS,
    RecordingClient,
    change,
    open_document,
    pulling_capabilities,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")

QVR201 = EXAMPLES / "errors" / "QVR201_dimension_mismatch.qvr"


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("pulled")
    shutil.copy(QVR201, root / "mismatch.qvr")
    shutil.copy(EXAMPLES / "vanilla_rnn_lm.qvr", root / "clean.qvr")
    (root / "models").mkdir()
    shutil.copy(EXAMPLES / "errors" / "QVR101_undefined_name.qvr", root / "models" / "typo.qvr")
    (root / "opened.qvr").write_text("object A : Real 2\nlet f = nope\n")
    # Bounded: a link out of the workspace and an oversized file are not read.
    outside = tmp_path_factory.mktemp("outside") / "secret.qvr"
    outside.write_text("let leak = nope\n")
    (root / "link.qvr").symlink_to(outside)
    (root / "huge.qvr").write_text("# " + "x" * 1_100_000 + "\nlet f = nope\n")
    return root


@pytest_lsp.fixture(config=CONFIG, scope="module")
async def client(lsp_client: RecordingClient, workspace: Path):
    result = await lsp_client.initialize_session(
        lsp.InitializeParams(
            capabilities=pulling_capabilities(),
            root_uri=workspace.as_uri(),
            workspace_folders=[lsp.WorkspaceFolder(workspace.as_uri(), workspace.name)],
        )
    )
    lsp_client.server_capabilities = result.capabilities  # type: ignore[attr-defined]
    yield
    await lsp_client.shutdown_session()


async def pull(client, uri: str, previous: str | None = None) -> lsp.DocumentDiagnosticReport:
    return await client.text_document_diagnostic_async(
        lsp.DocumentDiagnosticParams(
            text_document=lsp.TextDocumentIdentifier(uri), previous_result_id=previous
        )
    )


async def test_the_server_offers_document_and_workspace_pulls(client):
    provider = client.server_capabilities.diagnostic_provider
    assert isinstance(provider, lsp.DiagnosticOptions)
    assert provider.workspace_diagnostics and not provider.inter_file_dependencies


def errors(items: list[lsp.Diagnostic]) -> list[str]:
    return [str(d.code) for d in items if d.severity == lsp.DiagnosticSeverity.Error]


async def test_an_open_document_is_pulled_and_not_pushed(client, workspace):
    uri = (workspace / "opened.qvr").as_uri()
    text = (workspace / "opened.qvr").read_text()
    open_document(client, uri, text)
    report = await pull(client, uri)
    assert isinstance(report, lsp.RelatedFullDocumentDiagnosticReport)
    assert errors(report.items) == ["QVR101"]
    assert report.result_id
    again = await pull(client, uri, report.result_id)
    assert isinstance(again, lsp.RelatedUnchangedDocumentDiagnosticReport)
    assert again.result_id == report.result_id
    change(client, uri, 2, None, text.replace("nope", "nope2"))
    changed = await pull(client, uri, report.result_id)
    assert isinstance(changed, lsp.RelatedFullDocumentDiagnosticReport)
    assert changed.result_id != report.result_id
    assert any("nope2" in d.message for d in changed.items)
    assert all(p.uri != uri for p in client.published), "a pulling client is not pushed to"


async def test_related_lines_come_with_a_pulled_mismatch(client, workspace):
    uri = (workspace / "mismatch.qvr").as_uri()
    report = await pull(client, uri)  # not open: read from disk
    (diagnostic,) = report.items
    assert diagnostic.code == "QVR201"
    messages = [r.message for r in diagnostic.related_information or []]
    assert "Combined is declared here as Real 96" in messages


async def test_workspace_diagnostics_cover_the_closed_files_within_bounds(client, workspace):
    result = await client.workspace_diagnostic_async(
        lsp.WorkspaceDiagnosticParams(previous_result_ids=[])
    )
    reports = {Path(item.uri.removeprefix("file://")).name: item for item in result.items}
    assert set(reports) == {"mismatch.qvr", "clean.qvr", "typo.qvr"}, "no link out, no huge file"
    assert errors(reports["mismatch.qvr"].items) == ["QVR201"]
    assert errors(reports["typo.qvr"].items) == ["QVR101"]
    assert errors(reports["clean.qvr"].items) == []
    assert all(r.version is None for r in reports.values())

    # Asked again after one file changed: that file in full, the others unchanged.
    typo = workspace / "models" / "typo.qvr"
    typo.write_text(typo.read_text().replace("scan(cel)", "scan(cell)"))
    os.utime(typo, ns=(1, 1))  # a different modification time whatever the clock's resolution
    previous = [lsp.PreviousResultId(uri=r.uri, value=r.result_id) for r in reports.values()]
    again = await client.workspace_diagnostic_async(
        lsp.WorkspaceDiagnosticParams(previous_result_ids=previous)
    )
    kinds = {Path(i.uri.removeprefix("file://")).name: type(i).__name__ for i in again.items}
    assert kinds == {
        "mismatch.qvr": "WorkspaceUnchangedDocumentDiagnosticReport",
        "clean.qvr": "WorkspaceUnchangedDocumentDiagnosticReport",
        "typo.qvr": "WorkspaceFullDocumentDiagnosticReport",
    }
    (fixed,) = [i for i in again.items if i.uri.endswith("typo.qvr")]
    assert errors(fixed.items) == []


async def test_new_settings_ask_the_client_to_pull_again(client, workspace):
    before = client.diagnostic_refresh_count
    client.workspace_did_change_configuration(
        lsp.DidChangeConfigurationParams(settings={"qvr": {"strict": True}})
    )
    deadline = asyncio.get_running_loop().time() + WAIT_SECONDS
    while client.diagnostic_refresh_count == before:
        assert asyncio.get_running_loop().time() < deadline, "no workspace/diagnostic/refresh"
        await asyncio.sleep(0.02)
