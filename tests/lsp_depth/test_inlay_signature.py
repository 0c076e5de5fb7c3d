"""Inlay hints and signature help over the protocol."""

from __future__ import annotations

import pytest
from lsprotocol import types as lsp

from tests.lsp.support import change, diagnostics_for, example, position_of
from tests.lsp_depth.support import doc, opened

pytestmark = pytest.mark.asyncio(loop_scope="session")


def whole(text: str) -> lsp.Range:
    return lsp.Range(lsp.Position(0, 0), lsp.Position(text.count("\n") + 1, 0))


async def hints(client, text: str, label: str) -> list[lsp.InlayHint]:
    uri, _ = await opened(client, text, label)
    result = await client.text_document_inlay_hint_async(
        lsp.InlayHintParams(text_document=doc(uri), range=whole(text))
    )
    return result or []


async def test_types_after_lets_and_sample_sites(client):
    text = example("bidirectional_rnn_lm.qvr")
    found = {(h.position.line, h.position.character): h for h in await hints(client, text, "inlay")}
    at_let = position_of(text, "forward_path =", delta=len("forward_path"))
    assert found[(at_let.line, at_let.character)].label == ": [Token] -> FwdHidden"
    assert found[(at_let.line, at_let.character)].kind == lsp.InlayHintKind.Type
    at_site = position_of(text, "h <- backbone", delta=1)
    assert found[(at_site.line, at_site.character)].label == ": Combined"


async def test_directions_of_a_bidirectional_fan(client):
    text = example("bidirectional_rnn_lm.qvr")
    directions = [
        (h.position, h.label)
        for h in await hints(client, text, "inlay-fan")
        if h.kind == lsp.InlayHintKind.Parameter
    ]
    assert directions == [
        (position_of(text, "forward_path, backward_path"), "→"),
        (position_of(text, "backward_path)"), "←"),
    ]


async def test_dimensions_where_products_match_by_dimension(client):
    text = example("bidirectional_rnn_lm.qvr")
    found = [h for h in await hints(client, text, "inlay-dims") if " as " in str(h.label)]
    if not found:
        pytest.skip("the checker does not record QVR203 facts yet (Diagnostic.data)")
    [hint] = found
    assert hint.label == "FwdHidden * BwdHidden = R^(64+64) as Combined = R^128"
    assert hint.position == position_of(text, "combine\n", delta=len("combine"))


async def test_hints_in_a_program_with_locals(client):
    text = example("rlstm_lm.qvr")
    labels = [h.label for h in await hints(client, text, "inlay-rlstm")]
    assert labels.count(": Hidden") >= 10 and ": [Token] -> [State]" in labels


async def signature(client, uri: str, text: str) -> lsp.SignatureHelp | None:
    position = position_of(text, text[-1], occurrence=text.count(text[-1]) - 1, delta=1)
    return await client.text_document_signature_help_async(
        lsp.SignatureHelpParams(text_document=doc(uri), position=position)
    )


def active(help_: lsp.SignatureHelp) -> str:
    sig = help_.signatures[help_.active_signature or 0]
    param = sig.parameters[help_.active_parameter]  # type: ignore[index]
    start, end = param.label  # type: ignore[misc]
    return sig.label[start:end]


@pytest.mark.parametrize(
    ("typed", "label", "param"),
    [
        ("let both = fan(forward_path, ", "fan(f1, f2) : D -> C1 * C2", "f2"),
        (
            "let back = scan(bwd_cell, reverse=",
            "scan(c, reverse=false, init=zeros) : [A] -> H",
            "reverse=false",
        ),
        ("let deep = stack(combine, ", "stack(b, n) : A -> A", "n"),
        ("let again = repeat(", "repeat(b, n) : A -> A", "b"),
    ],
)
async def test_signature_help_while_typing_a_combinator(client, typed, label, param):
    base = example("bidirectional_rnn_lm.qvr")
    uri, _ = await opened(client, base, "signature")
    text = base + typed
    change(client, uri, 2, None, text)
    await diagnostics_for(client, uri, 2)
    help_ = await signature(client, uri, text)
    assert help_ is not None
    assert help_.signatures[0].label == label
    assert active(help_) == param


async def test_signature_help_for_a_morphism_call_in_a_program(client):
    base = example("rlstm_lm.qvr")
    uri, _ = await opened(client, base, "signature-call")
    text = base + "\nprogram p (x, h) : Embedded * Hidden -> Hidden\n    sample y <- gate_i(x, "
    change(client, uri, 2, None, text)
    await diagnostics_for(client, uri, 2)
    help_ = await signature(client, uri, text)
    assert help_ is not None
    assert help_.signatures[0].label == "gate_i(Embedded, Hidden) -> Hidden"
    assert help_.active_parameter == 1


async def test_no_signature_help_outside_calls(client):
    text = example("vanilla_rnn_lm.qvr")
    uri, _ = await opened(client, text, "no-signature")
    assert await signature(client, uri, text) is None


@pytest.mark.parametrize(
    ("typed", "label", "param"),
    [
        ("    sample tau <- HalfCauchy(", "HalfCauchy(scale)", "scale"),
        ("    sample mu <- Normal(0.0, ", "Normal(loc, scale)", "scale"),
        ("    sample p <- Categorical(logits=", "Categorical(logits)", "logits"),
    ],
)
async def test_signature_help_for_a_family_call_in_a_program_step(client, typed, label, param):
    """Family calls in steps get their registry signature (by position or keyword) while
    typed, before the language has the call syntax to check them."""
    base = example("rlstm_lm.qvr")
    uri, _ = await opened(client, base, "signature-family")
    text = base + "\nprogram p (x, h) : Embedded * Hidden -> Hidden\n" + typed
    change(client, uri, 2, None, text)
    await diagnostics_for(client, uri, 2)
    help_ = await signature(client, uri, text)
    assert help_ is not None
    assert help_.signatures[0].label == label
    assert active(help_) == param
    assert "positive number" in str(help_.signatures[0].parameters) or param != "scale"
