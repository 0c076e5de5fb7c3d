"""The export target's QVR701 warnings for a client that pulls diagnostics (LSP 3.17), with
the setting given at `initialize`: open documents and the workspace's closed files."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types as lsp

from tests.lsp.support import (
    CONFIG,
    EXAMPLES,
    RecordingClient,
    open_document,
    position_of,
    pulling_capabilities,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")

NOT_EXPORTABLE = EXAMPLES / "errors" / "QVR701_not_exportable.qvr"
EIGHT_SCHOOLS = EXAMPLES / "models" / "eight_schools_noncentered.qvr"


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("exports")
    shutil.copy(NOT_EXPORTABLE, root / "closed_network.qvr")
    shutil.copy(EIGHT_SCHOOLS, root / "closed_model.qvr")
    return root


@pytest_lsp.fixture(config=CONFIG, scope="module")
async def client(lsp_client: RecordingClient, workspace: Path):
    await lsp_client.initialize_session(
        lsp.InitializeParams(
            capabilities=pulling_capabilities(),
            root_uri=workspace.as_uri(),
            workspace_folders=[lsp.WorkspaceFolder(workspace.as_uri(), workspace.name)],
            # quivers' name for the setting, at initialize
            initialization_options={"qvr": {"transpileTarget": "numpyro"}},
        )
    )
    yield
    await lsp_client.shutdown_session()


def qvr701(items: list[lsp.Diagnostic]) -> list[lsp.Diagnostic]:
    return [d for d in items if d.code == "QVR701"]


async def test_a_pulled_report_carries_the_targets_warnings(client, workspace):
    uri = (workspace / "open_network.qvr").as_uri()
    text = NOT_EXPORTABLE.read_text()
    open_document(client, uri, text)
    report = await client.text_document_diagnostic_async(
        lsp.DocumentDiagnosticParams(text_document=lsp.TextDocumentIdentifier(uri))
    )
    (warning,) = qvr701(report.items)
    start = position_of(text, "classify :")
    assert warning.range.start == start and "NumPyro" in warning.message
    assert not report.result_id.endswith("~"), "the pull waits for the target's warnings"
    # asked again with that id: unchanged
    again = await client.text_document_diagnostic_async(
        lsp.DocumentDiagnosticParams(
            text_document=lsp.TextDocumentIdentifier(uri), previous_result_id=report.result_id
        )
    )
    assert isinstance(again, lsp.RelatedUnchangedDocumentDiagnosticReport)


async def test_closed_files_get_them_too(client, workspace):
    report = await client.workspace_diagnostic_async(
        lsp.WorkspaceDiagnosticParams(previous_result_ids=[])
    )
    found = {Path(i.uri.removeprefix("file://")).name: qvr701(i.items) for i in report.items}
    assert [d.range.start.line for d in found["closed_network.qvr"]] == [7]
    assert found["closed_model.qvr"] == []
