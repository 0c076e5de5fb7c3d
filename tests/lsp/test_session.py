"""Session behaviour: settings at initialisation, negotiated encodings, capabilities."""

from __future__ import annotations

import pytest
import pytest_lsp
from lsprotocol import types as lsp

from tests.lsp.support import (
    CONFIG,
    RecordingClient,
    diagnostics_for,
    example,
    fresh_uri,
    initialize_params,
    open_document,
)

STRICT = {"qvr": {"strict": True}}


@pytest_lsp.fixture(config=CONFIG)
async def strict_client(lsp_client: RecordingClient):
    await lsp_client.initialize_session(initialize_params("neovim", options=STRICT))
    yield
    await lsp_client.shutdown_session()


async def test_initialization_options_set_strictness(strict_client):
    uri = fresh_uri("strict-init")
    open_document(strict_client, uri, example("bidirectional_rnn_lm.qvr"))
    params = await diagnostics_for(strict_client, uri, 1)
    (d,) = [d for d in params.diagnostics if d.code == "QVR203"]
    assert d.severity == lsp.DiagnosticSeverity.Error


async def pulled(client: RecordingClient, uri: str) -> list[lsp.Diagnostic]:
    """The diagnostics of the document's current text, asked for (LSP 3.17 pull)."""
    report = await client.text_document_diagnostic_async(
        lsp.DocumentDiagnosticParams(text_document=lsp.TextDocumentIdentifier(uri))
    )
    assert isinstance(report, lsp.RelatedFullDocumentDiagnosticReport)
    return list(report.items)


@pytest_lsp.fixture(config=CONFIG)
async def utf8_client(lsp_client: RecordingClient):
    """Neovim 0.11 offers UTF-8 first; the server must take it and count bytes."""
    result = await lsp_client.initialize_session(initialize_params("neovim@v0.11.0"))
    lsp_client.init_result = result  # type: ignore[attr-defined]
    yield
    await lsp_client.shutdown_session()


async def test_utf8_is_negotiated_and_used_for_ranges_and_edits(utf8_client):
    assert utf8_client.init_result.capabilities.position_encoding == "utf-8"
    text = "# é😀 before\nlet m = tok # ü😀\n"
    uri = fresh_uri("utf8")
    open_document(utf8_client, uri, text)
    # Neovim 0.10+ pulls diagnostics (and is not pushed to).
    (d,) = [d for d in await pulled(utf8_client, uri) if d.code == "QVR101"]
    assert d.range.start == lsp.Position(1, 8) and d.range.end == lsp.Position(1, 11)

    # An edit after the astral character on line 0, in bytes: "# é😀 " is 1+1+2+4+1 = 9 bytes.
    at = lsp.Position(0, 9)
    utf8_client.text_document_did_change(
        lsp.DidChangeTextDocumentParams(
            text_document=lsp.VersionedTextDocumentIdentifier(version=2, uri=uri),
            content_changes=[
                lsp.TextDocumentContentChangePartial(
                    range=lsp.Range(at, lsp.Position(0, 15)), text="\nobject tok : Real 2 #"
                )
            ],
        )
    )
    diagnostics = await pulled(utf8_client, uri)
    # Now `tok` is an object declared on the inserted line, and `let m` moved to line 2.
    found = {(d.code, d.range.start.line, d.range.start.character) for d in diagnostics}
    assert found == {("QVR103", 2, 4), ("QVR104", 2, 8)}
    status = await utf8_client.protocol.send_request_async("qvr/serverStatus", None)
    assert status.encoding == "utf-8"


@pytest_lsp.fixture(config=CONFIG, params=["vscode", "neovim"])
async def plain(request: pytest.FixtureRequest, lsp_client: RecordingClient):
    lsp_client.flavour = request.param  # type: ignore[attr-defined]
    yield


async def test_capabilities_advertise_the_features(plain):
    result = await plain.initialize_session(initialize_params(plain.flavour))
    caps = result.capabilities
    sync = caps.text_document_sync
    assert sync.change == lsp.TextDocumentSyncKind.Incremental and sync.open_close
    assert caps.hover_provider and caps.definition_provider and caps.references_provider
    assert caps.document_highlight_provider and caps.document_symbol_provider
    assert caps.workspace_symbol_provider
    assert "~" in caps.completion_provider.trigger_characters
    assert caps.position_encoding == "utf-16"
    await plain.shutdown_session()
