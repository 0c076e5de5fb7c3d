"""Hover over the protocol: types, dimensions, notes, doc comments, declarations."""

from __future__ import annotations

import pytest
from lsprotocol import types as lsp

from tests.lsp.support import diagnostics_for, example, fresh_uri, open_document, position_of

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def hover_text(client, name: str, needle: str, occurrence: int = 0, delta: int = 1) -> str:
    text = example(name)
    uri = fresh_uri(name.removesuffix(".qvr"))
    open_document(client, uri, text)
    await diagnostics_for(client, uri, 1)
    result = await client.text_document_hover_async(
        lsp.HoverParams(
            text_document=lsp.TextDocumentIdentifier(uri),
            position=position_of(text, needle, occurrence, delta),
        )
    )
    assert result is not None, f"no hover at {needle!r}"
    assert isinstance(result.contents, lsp.MarkupContent)
    assert result.contents.kind == lsp.MarkupKind.Markdown
    assert "<" not in result.contents.value.replace("<-", "")  # Markdown only, no HTML
    return result.contents.value


async def test_backbone_shows_its_type_and_dimensions(client):
    value = await hover_text(client, "bidirectional_rnn_lm.qvr", "backbone =")
    assert "```qvr\nlet backbone : [Token] -> Combined\n```" in value
    assert "`[Token] = [FinSet 256]`" in value
    assert "`Combined = R^128`" in value
    assert "declared on line 15" in value


async def test_backbone_use_in_a_program_shows_the_same(client):
    value = await hover_text(client, "vanilla_rnn_lm.qvr", "backbone\n", delta=2)
    assert "let backbone : [Token] -> Hidden" in value
    assert "`Hidden = R^128`" in value


async def test_a_fan_sub_expression_shows_its_product_dimensions(client):
    value = await hover_text(client, "bidirectional_rnn_lm.qvr", "fan(", delta=1)
    assert "fan(forward_path, backward_path) : [Token] -> FwdHidden * BwdHidden" in value
    assert "`FwdHidden * BwdHidden = R^(64+64)` (64 + 64 = 128)" in value


async def test_the_backward_branch_says_it_reads_right_to_left(client):
    value = await hover_text(client, "bidirectional_rnn_lm.qvr", "backward_path)")
    assert "right to left" in value


async def test_doc_comment_and_group_copies(client):
    value = await hover_text(client, "encoder_decoder.qvr", "head) >>")
    assert "Four independent heads read the latent state." in value
    assert "4 independent copies" in value


async def test_program_local_shows_its_program(client):
    value = await hover_text(client, "rlstm_lm.qvr", "c_prev + min", occurrence=1, delta=0)
    assert "in program rlstm_cell" in value


async def test_no_hover_in_whitespace(client):
    text = example("vanilla_rnn_lm.qvr")
    uri = fresh_uri("blank")
    open_document(client, uri, text)
    await diagnostics_for(client, uri, 1)
    blank_line = text.splitlines().index("")
    result = await client.text_document_hover_async(
        lsp.HoverParams(
            text_document=lsp.TextDocumentIdentifier(uri), position=lsp.Position(blank_line, 0)
        )
    )
    assert result is None


async def test_hover_does_not_import_torch(client):
    await hover_text(client, "encoder_decoder.qvr", "encoder\n")
    status = await client.protocol.send_request_async("qvr/serverStatus", None)
    assert "torch" not in status.loadedModules


async def test_a_family_shows_its_parameters_values_and_where_it_fits(client):
    value = await hover_text(client, "vanilla_rnn_lm.qvr", "Categorical")
    assert "```qvr\nCategorical(probs) | Categorical(logits)\n```" in value
    assert "`probs`, a probability vector" in value
    assert "needs a FinSet codomain" in value
    assert "*QVR family*" in value


async def test_a_type_constructor_shows_its_documentation(client):
    value = await hover_text(client, "vanilla_rnn_lm.qvr", "FinSet")
    assert "FinSet N" in value and "finite set" in value


async def test_an_ill_typed_let_shows_its_typed_parts_and_the_mismatch(client):
    value = await hover_text(client, "errors/QVR201_dimension_mismatch.qvr", "backbone =")
    assert "```qvr\nlet backbone\n```" in value
    parts = value.split("Its parts:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert parts[0] == (
        "- `fan(forward_path, backward_path)` : `[Token] = [FinSet 256]` → "
        "`FwdHidden * BwdHidden = R^(64+64)` (64 + 64 = 128)"
    )
    assert parts[1] == "- `combine` : `Combined = R^96` → `Combined = R^96`"
    (mismatch,) = [line for line in parts if "✗" in line]
    assert "QVR201" in mismatch and "128" in mismatch and "96" in mismatch
    assert "declared on line 17" in value


async def test_an_ill_typed_let_with_an_undefined_name_shows_what_resolves(client):
    value = await hover_text(client, "errors/QVR101_undefined_name.qvr", "backbone =")
    assert "- `tok_embed` : `Token = FinSet 256` → `Embedded = R^64`" in value
    assert "QVR101: undefined name 'cel'" in value
