"""Refactors over the protocol: extract, inline and `source.fixAll`, each applied by its edit."""

from __future__ import annotations

import pytest
from lsprotocol import types as lsp

from tests.lsp.support import example, position_of
from tests.lsp_depth.support import apply_text_edits, doc, edits_of, errors, opened

pytestmark = pytest.mark.asyncio(loop_scope="session")

TWO_MISTAKES = (
    "object A : Real 2\n"
    "morphism cell : A -> A [role=kernel, scael=0.1] ~ Normal\n"
    "let f = cel >> cell\n"
    "program p : A -> A\n    sample y <- f\n    return y\nexport p\n"
)


async def actions(client, uri, start, end, only) -> list[lsp.CodeAction]:
    result = await client.text_document_code_action_async(
        lsp.CodeActionParams(
            text_document=doc(uri),
            range=lsp.Range(start, end),
            context=lsp.CodeActionContext(diagnostics=[], only=only),
        )
    )
    return [a for a in result or [] if isinstance(a, lsp.CodeAction)]


async def test_extract_a_fan_into_a_new_let(client):
    text = example("bidirectional_rnn_lm.qvr")
    uri, before = await opened(client, text, "extract")
    at = position_of(text, "fan(")
    (action,) = await actions(client, uri, at, at, [lsp.CodeActionKind.Refactor])
    assert action.kind == lsp.CodeActionKind.RefactorExtract
    assert action.title == "Extract `fan(forward_path, backward_path)` into `let extracted`"
    after = apply_text_edits(text, edits_of(action.edit, uri))
    assert (
        "let extracted = fan(forward_path, backward_path)\nlet backbone = extracted >> combine"
        in after
    )
    _, published = await opened(client, after, "extract-after")
    assert errors(published) == errors(before) == []


async def test_inline_a_let_into_its_use(client):
    text = example("bidirectional_rnn_lm.qvr")
    uri, _ = await opened(client, text, "inline")
    at = position_of(text, "forward_path =", delta=2)
    found = await actions(client, uri, at, at, [lsp.CodeActionKind.RefactorInline])
    (action,) = found
    assert action.title == "Inline `let forward_path` into its use"
    after = apply_text_edits(text, edits_of(action.edit, uri))
    assert "fan(tok_embed >> scan(fwd_cell), backward_path)" in after
    _, published = await opened(client, after, "inline-after")
    assert errors(published) == []


async def test_fix_all_applies_every_preferred_fix_and_only_when_asked(client):
    uri, before = await opened(client, TWO_MISTAKES, "fixall")
    assert sorted(code for code, _ in errors(before)) == ["QVR101", "QVR303"]
    start, end = lsp.Position(0, 0), lsp.Position(0, 0)
    unasked = await actions(client, uri, start, end, None)
    assert all(a.kind != lsp.CodeActionKind.SourceFixAll for a in unasked)
    (action,) = await actions(client, uri, start, end, [lsp.CodeActionKind.SourceFixAll])
    assert action.title == "Fix all: apply 2 preferred fixes"
    after = apply_text_edits(TWO_MISTAKES, edits_of(action.edit, uri))
    _, published = await opened(client, after, "fixall-after")
    assert errors(published) == []


async def test_asking_for_quick_fixes_gives_no_refactors(client):
    text = example("bidirectional_rnn_lm.qvr")
    uri, _ = await opened(client, text, "only-quickfix")
    at = position_of(text, "fan(")
    assert await actions(client, uri, at, at, [lsp.CodeActionKind.QuickFix]) == []
