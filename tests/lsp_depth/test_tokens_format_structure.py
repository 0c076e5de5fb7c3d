"""Semantic tokens, formatting, folding and selection ranges over the protocol, on every example."""

from __future__ import annotations

import pytest
from lsprotocol import types as lsp

from qvr_core.format.formatter import format_source
from tests.lsp.support import example, position_of
from tests.lsp_depth.support import (
    ERROR_EXAMPLES,
    EXAMPLES,
    apply_text_edits,
    doc,
    opened,
)

pytestmark = pytest.mark.asyncio(loop_scope="session")
EVERY_FILE = EXAMPLES + ERROR_EXAMPLES


def decode(data: list[int], types: list[str], modifiers: list[str]) -> list[tuple]:
    """(line, start, length, type, modifiers) from the relative encoding."""
    out, line, start = [], 0, 0
    for i in range(0, len(data), 5):
        dl, ds, length, kind, bits = data[i : i + 5]
        line += dl
        start = start + ds if dl == 0 else ds
        mods = {m for j, m in enumerate(modifiers) if bits & (1 << j)}
        out.append((line, start, length, types[kind], mods))
    return out


async def tokens(client, text: str, label: str, rng: lsp.Range | None = None) -> list[tuple]:
    uri, _ = await opened(client, text, label)
    provider = client.server_capabilities.semantic_tokens_provider
    assert provider is not None and provider.full and provider.range
    if rng is None:
        result = await client.text_document_semantic_tokens_full_async(
            lsp.SemanticTokensParams(text_document=doc(uri))
        )
    else:
        result = await client.text_document_semantic_tokens_range_async(
            lsp.SemanticTokensRangeParams(text_document=doc(uri), range=rng)
        )
    return decode(result.data, provider.legend.token_types, provider.legend.token_modifiers)


def word_at(text: str, line: int, start: int, length: int) -> str:
    return text.split("\n")[line][start : start + length]


async def test_semantic_tokens_classify_the_encoder_decoder(client):
    text = example("encoder_decoder.qvr")
    found = {
        word_at(text, line, start, length): (kind, mods)
        for line, start, length, kind, mods in await tokens(client, text, "tokens")
    }
    assert found["Source"][0] == "type"
    assert found["encode"] == ("function", {"documentation"})
    assert found["attend"][0] == "method"
    assert found["encoder_decoder"][0] == "class"
    assert found["z"] == ("variable", {"sampled"})
    assert found["next_target"] == ("variable", {"observed"})
    assert found["replicate"][0] == "property"
    assert found["kernel"][0] == "enumMember"
    assert found["Normal"] == ("enum", {"defaultLibrary"})
    assert found["FinSet"] == ("type", {"defaultLibrary"})
    assert found["fan"] == ("function", {"defaultLibrary"})


async def test_semantic_tokens_for_a_range(client):
    text = example("rlstm_lm.qvr")
    start = position_of(text, "program rlstm_lm")
    rng = lsp.Range(start, lsp.Position(start.line + 10, 0))
    found = await tokens(client, text, "tokens-range", rng)
    assert found and all(line >= start.line for line, *_ in found)
    words = {word_at(text, line, s, n): kind for line, s, n, kind, _ in found}
    assert words["h"] == "variable" and words["encoder"] == "method"


@pytest.mark.parametrize("path", EVERY_FILE, ids=lambda p: p.name)
async def test_every_file_gets_tokens_folds_and_selections(client, path):
    text = path.read_text()
    lines = text.split("\n")
    for line, start, length, _, _ in await tokens(client, text, f"all-{path.stem}"):
        assert length > 0 and start + length <= len(lines[line])
    uri, _ = await opened(client, text, f"all-{path.stem}-b")
    folds = await client.text_document_folding_range_async(
        lsp.FoldingRangeParams(text_document=doc(uri))
    )
    for fold in folds or []:
        assert 0 <= fold.start_line < fold.end_line < len(lines)
    middle = lsp.Position(len(lines) // 2, 2)
    selections = await client.text_document_selection_range_async(
        lsp.SelectionRangeParams(text_document=doc(uri), positions=[middle])
    )
    assert selections and len(selections) == 1


async def test_programs_and_comment_blocks_fold(client):
    text = example("rlstm_lm.qvr")
    uri, _ = await opened(client, text, "folding")
    folds = await client.text_document_folding_range_async(
        lsp.FoldingRangeParams(text_document=doc(uri))
    )
    spans = {(f.start_line, f.end_line, f.kind) for f in folds}
    header = position_of(text, "program rlstm_cell").line
    assert (0, 5, lsp.FoldingRangeKind.Comment) in spans
    assert (header, position_of(text, "return (h, c)").line, lsp.FoldingRangeKind.Region) in spans


async def test_selection_expands_along_the_expression_tree(client):
    text = example("bidirectional_rnn_lm.qvr")
    uri, _ = await opened(client, text, "selection")
    [selection] = await client.text_document_selection_range_async(
        lsp.SelectionRangeParams(
            text_document=doc(uri), positions=[position_of(text, "backward_path)", delta=3)]
        )
    )
    chain = []
    node = selection
    while node is not None:
        chain.append(node.range)
        node = node.parent
    assert chain[0] == lsp.Range(
        position_of(text, "backward_path)"), position_of(text, "backward_path)", delta=13)
    )
    assert chain[1].start == position_of(text, "fan(")
    assert chain[-1].start == lsp.Position(0, 0)


async def format_document(client, text: str, label: str) -> str:
    uri, _ = await opened(client, text, label)
    edits = await client.text_document_formatting_async(
        lsp.DocumentFormattingParams(
            text_document=doc(uri), options=lsp.FormattingOptions(tab_size=4, insert_spaces=True)
        )
    )
    return apply_text_edits(text, edits or [])


MESSY = (
    "object Token:FinSet 256   # the vocabulary\n"
    "object Hidden:Real 8\n"
    "morphism embed:Token->Hidden[role=embed]\n"
    "program p:Token->Hidden\n"
    "  sample h<-embed\n"
    "  return h\n"
    "export p"
)


async def test_formatting_gives_the_canonical_layout_and_is_idempotent(client):
    once = await format_document(client, MESSY, "format")
    assert once == format_source(MESSY)
    assert "object Token : FinSet 256  # the vocabulary\n" in once
    assert "\n    sample h <- embed\n" in once
    assert await format_document(client, once, "format-again") == once


@pytest.mark.parametrize("path", EVERY_FILE, ids=lambda p: p.name)
async def test_every_example_formats_to_itself(client, path):
    text = path.read_text()
    assert await format_document(client, text, f"format-{path.stem}") == text


async def test_range_formatting_touches_only_the_selected_lines(client):
    uri, _ = await opened(client, MESSY, "range-format")
    edits = await client.text_document_range_formatting_async(
        lsp.DocumentRangeFormattingParams(
            text_document=doc(uri),
            range=lsp.Range(lsp.Position(1, 0), lsp.Position(2, 0)),
            options=lsp.FormattingOptions(tab_size=4, insert_spaces=True),
        )
    )
    after = apply_text_edits(MESSY, edits or [])
    assert after.split("\n")[0] == MESSY.split("\n")[0]
    assert after.split("\n")[1] == "object Hidden : Real 8"
