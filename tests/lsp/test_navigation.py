"""Definition, references, highlights and symbols over the protocol, scope-aware."""

from __future__ import annotations

import pytest
from lsprotocol import types as lsp

from tests.lsp.support import (
    EXAMPLES,
    TWO_PROGRAMS,
    diagnostics_for,
    example,
    fresh_uri,
    open_document,
    position_of,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def opened(client, text: str, label: str) -> str:
    uri = fresh_uri(label)
    open_document(client, uri, text)
    await diagnostics_for(client, uri, 1)
    return uri


def doc(uri: str) -> lsp.TextDocumentIdentifier:
    return lsp.TextDocumentIdentifier(uri)


async def test_definition_of_a_let_used_in_a_program(client):
    text = example("bidirectional_rnn_lm.qvr")
    uri = await opened(client, text, "definition")
    result = await client.text_document_definition_async(
        lsp.DefinitionParams(
            text_document=doc(uri), position=position_of(text, "backbone\n", delta=1)
        )
    )
    (location,) = result
    assert location.uri == uri
    assert location.range.start == position_of(text, "backbone =")


async def test_definition_of_a_local_stays_in_its_program(client):
    uri = await opened(client, TWO_PROGRAMS, "scoped-def")
    result = await client.text_document_definition_async(
        lsp.DefinitionParams(
            text_document=doc(uri), position=position_of(TWO_PROGRAMS, "lm_head(h)", 1, delta=8)
        )
    )
    (location,) = result
    assert location.range.start == position_of(TWO_PROGRAMS, "h <- encode", 1)


async def test_references_of_a_local_exclude_the_other_programs_h(client):
    uri = await opened(client, TWO_PROGRAMS, "scoped-refs")
    result = await client.text_document_references_async(
        lsp.ReferenceParams(
            text_document=doc(uri),
            position=position_of(TWO_PROGRAMS, "h <- encode", 0),
            context=lsp.ReferenceContext(include_declaration=True),
        )
    )
    lines = sorted(loc.range.start.line for loc in result)
    assert lines == [7, 8]


async def test_references_of_a_morphism_across_programs(client):
    uri = await opened(client, TWO_PROGRAMS, "refs")
    result = await client.text_document_references_async(
        lsp.ReferenceParams(
            text_document=doc(uri),
            position=position_of(TWO_PROGRAMS, "encode :", 0),
            context=lsp.ReferenceContext(include_declaration=False),
        )
    )
    assert sorted(loc.range.start.line for loc in result) == [7, 12]


async def test_document_highlight_marks_the_definition_as_write(client):
    uri = await opened(client, TWO_PROGRAMS, "highlight")
    result = await client.text_document_document_highlight_async(
        lsp.DocumentHighlightParams(
            text_document=doc(uri), position=position_of(TWO_PROGRAMS, "lm_head(h)", 1, delta=8)
        )
    )
    kinds = {(h.range.start.line, h.kind) for h in result}
    assert kinds == {(12, lsp.DocumentHighlightKind.Write), (13, lsp.DocumentHighlightKind.Read)}


async def test_document_symbols_are_a_tree_of_declarations_and_steps(client):
    text = example("rlstm_lm.qvr")
    uri = await opened(client, text, "symbols")
    result = await client.text_document_document_symbol_async(
        lsp.DocumentSymbolParams(text_document=doc(uri))
    )
    top = {s.name: s for s in result}
    assert top["Token"].kind == lsp.SymbolKind.Struct
    assert top["gate_i"].kind == lsp.SymbolKind.Function
    assert top["Token"].detail == "FinSet 256"
    assert top["encoder"].detail == "[Token] -> [State]"
    cell = top["rlstm_cell"]
    assert cell.kind == lsp.SymbolKind.Module
    children = [c.name for c in cell.children]
    assert children[:4] == ["x", "h_prev", "c_prev", "i_pre"]
    assert children[-1] == "return"
    assert "c" in children and "o_pre" in children
    for child in cell.children:
        assert cell.range.start.line <= child.range.start.line <= cell.range.end.line


async def test_symbols_survive_a_syntax_error(client):
    text = example("bidirectional_rnn_lm.qvr")
    uri = await opened(client, text, "symbols-broken")
    at = position_of(text, ">> combine")
    client.text_document_did_change(
        lsp.DidChangeTextDocumentParams(
            text_document=lsp.VersionedTextDocumentIdentifier(version=2, uri=uri),
            content_changes=[
                lsp.TextDocumentContentChangePartial(range=lsp.Range(at, at), text=">> >> (")
            ],
        )
    )
    assert "QVR001" in [d.code for d in (await diagnostics_for(client, uri, 2)).diagnostics]
    result = await client.text_document_document_symbol_async(
        lsp.DocumentSymbolParams(text_document=doc(uri))
    )
    assert "backbone" in {s.name for s in result}
    # Hover on the broken line answers from the last good analysis.
    hover = await client.text_document_hover_async(
        lsp.HoverParams(
            text_document=doc(uri), position=position_of(text, "forward_path,", delta=2)
        )
    )
    assert hover is not None and "forward_path" in hover.contents.value


async def test_workspace_symbols_include_files_that_are_not_open(client):
    result = await client.workspace_symbol_async(lsp.WorkspaceSymbolParams(query="rlstm"))
    found = {(s.name, s.location.uri) for s in result}
    assert ("rlstm_cell", (EXAMPLES / "rlstm_lm.qvr").as_uri()) in found
    assert all("rlstm" in name for name, _ in found)


async def test_workspace_symbols_prefer_the_open_text(client):
    uri = await opened(client, "object Zanzibar : Real 3\n", "zanzibar")
    result = await client.workspace_symbol_async(lsp.WorkspaceSymbolParams(query="zanzi"))
    assert [(s.name, s.location.uri) for s in result] == [("Zanzibar", uri)]
