"""Edges of what a client sends: line ends, other languages, URI spellings.

- A lone `\\r` ends a line like `\\n` and `\\r\\n` (a CR-only file was one
  long line, a syntax error, in the server).
- A document opened with another languageId (and not a `.qvr` path) is not
  QVR: no diagnostics, no state.
- One document is one document however its URI is spelled (`./`, percent
  escapes, `localhost`): state, answers and diagnostics follow the canonical
  spelling (`qvr_lsp.protocol.uris`).
"""

from __future__ import annotations

import asyncio

import pytest
import pytest_lsp
from lsprotocol import types as lsp

from qvr_core.check import check
from tests.lsp.support import (
    CONFIG,
    EXAMPLES,
    RecordingClient,
    change,
    codes,
    diagnostics_for,
    fresh_uri,
    initialize_params,
    versions_published,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")

CR_TEXT = (
    "object Token : FinSet 8\r"
    "object Hidden : Real 4\r"
    "\r"
    "morphism embed : Token -> Hidden [role=embed]\r"
    "morphism head : Hidden -> Token [role=kernel] ~ Categorical\r"
    "\r"
    "let model = embed >> head\r"
    "\r"
    "export model\r"
)


@pytest_lsp.fixture(config=CONFIG, scope="module")
async def server(lsp_client: RecordingClient):
    await lsp_client.initialize_session(initialize_params("vscode"))
    yield
    await lsp_client.shutdown_session()


def open_as(client: RecordingClient, uri: str, text: str, language_id: str = "qvr") -> None:
    client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(lsp.TextDocumentItem(uri, language_id, 1, text))
    )


async def hover(client: RecordingClient, uri: str, line: int, character: int) -> lsp.Hover | None:
    return await client.text_document_hover_async(
        lsp.HoverParams(lsp.TextDocumentIdentifier(uri), lsp.Position(line, character))
    )


# ------------------------------------------------------------ line ends


async def test_a_file_with_cr_line_ends_is_clean_and_its_positions_are_lines(server):
    uri = fresh_uri("cr")
    open_as(server, uri, CR_TEXT)
    params = await diagnostics_for(server, uri, 1)
    assert "QVR001" not in codes(params)
    assert codes(params) == [str(d.code) for d in check(CR_TEXT.replace("\r", "\n")).diagnostics]
    answer = await hover(server, uri, 6, 5)  # `model` on line 7
    assert answer is not None and "model" in str(answer.contents)
    symbols = await server.text_document_document_symbol_async(
        lsp.DocumentSymbolParams(lsp.TextDocumentIdentifier(uri))
    )
    lines = {s.name: s.range.start.line for s in symbols}
    assert lines == {"Token": 0, "Hidden": 1, "embed": 3, "head": 4, "model": 6}


async def test_formatting_a_cr_file_keeps_its_line_ends(server):
    uri = fresh_uri("cr-format")
    open_as(server, uri, "object A:Real 3\rexport A\r")
    await diagnostics_for(server, uri, 1)
    edits = await server.text_document_formatting_async(
        lsp.DocumentFormattingParams(
            lsp.TextDocumentIdentifier(uri), lsp.FormattingOptions(4, True)
        )
    )
    assert edits
    assert all("\n" not in e.new_text for e in edits)


# ------------------------------------------------------ other languages


async def test_a_document_of_another_language_is_ignored(server):
    other = (EXAMPLES / "notes-about-qvr.md").as_uri()
    open_as(server, other, "object A : Real\nthis is not qvr (\n", language_id="markdown")
    change(server, other, 2, None, "still not qvr\n")
    qvr = fresh_uri("after-markdown")
    open_as(server, qvr, "object A : Real 2\n")
    await diagnostics_for(server, qvr, 1)
    await asyncio.sleep(0.3)
    assert versions_published(server, other) == []
    assert await hover(server, other, 0, 8) is None
    symbols = await server.text_document_document_symbol_async(
        lsp.DocumentSymbolParams(lsp.TextDocumentIdentifier(other))
    )
    assert not symbols
    server.text_document_did_close(
        lsp.DidCloseTextDocumentParams(lsp.TextDocumentIdentifier(other))
    )


async def test_a_qvr_path_with_a_generic_language_id_is_still_checked(server):
    uri = fresh_uri("plaintext")
    open_as(server, uri, "object A : Real\n", language_id="plaintext")
    params = await diagnostics_for(server, uri, 1)
    assert "QVR001" in codes(params)


# ---------------------------------------------------------- URI spellings


async def test_one_document_under_every_spelling_of_its_uri(server):
    uri = fresh_uri("spelled")
    folder, name = uri.rsplit("/", 1)
    spellings = [
        f"{folder}/./{name}",
        f"{folder}/../{folder.rsplit('/', 1)[1]}/{name}",
        f"{folder}//{name}",
        f"{folder}/%{ord(name[0]):02x}{name[1:]}",
        uri.replace("file:///", "file://localhost/"),
    ]
    open_as(server, spellings[0], "object A : Real 2\nlet f = A\n")
    params = await diagnostics_for(server, uri, 1)  # published under the canonical spelling
    assert params.uri == uri
    for spelling in spellings:
        answer = await hover(server, spelling, 0, 7)
        assert answer is not None, spelling
    change(server, spellings[3], 2, None, "object B : Real 2\n")
    params = await diagnostics_for(server, uri, 2)
    assert params.version == 2
    server.text_document_did_close(
        lsp.DidCloseTextDocumentParams(lsp.TextDocumentIdentifier(spellings[4]))
    )
    await asyncio.sleep(0.1)
    assert await hover(server, uri, 0, 7) is None  # closed under another spelling: gone
    assert {p.uri for p in server.published if name in p.uri} == {uri}
