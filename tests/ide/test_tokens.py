"""Semantic tokens classify every resolved name and the language's vocabulary."""

from __future__ import annotations

import itertools

import pytest

from qvr_core.check import check
from qvr_core.ide.tokens import TokenModifier as M
from qvr_core.ide.tokens import TokenType as T
from qvr_core.ide.tokens import semantic_tokens
from tests.ide.helpers import EXAMPLES, at, example


def classified(text: str) -> dict[tuple[int, str], tuple[T, frozenset[M]]]:
    return {
        (t.span.start, text[t.span.start : t.span.end]): (t.type, t.modifiers)
        for t in semantic_tokens(check(text))
    }


def kind_at(text: str, needle: str, within: str | None = None) -> tuple[T, frozenset[M]]:
    return classified(text)[(at(text, needle, within=within), needle)]


ENC = example("encoder_decoder.qvr")
RLSTM = example("rlstm_lm.qvr")


@pytest.mark.parametrize(
    ("text", "needle", "within", "expected"),
    [
        (ENC, "Source", "object Source", (T.OBJECT, {M.DECLARATION})),
        (ENC, "Latent", "morphism block", (T.OBJECT, set())),
        (ENC, "encode", "morphism encode", (T.MORPHISM, {M.DECLARATION, M.DOCUMENTED})),
        (ENC, "encoder", "let encoder", (T.LET, {M.DECLARATION})),
        (ENC, "encoder_decoder", "program", (T.PROGRAM, {M.DECLARATION})),
        (ENC, "z", "sample z", (T.SITE, {M.DECLARATION, M.SAMPLED})),
        (ENC, "next_target", "observe", (T.SITE, {M.DECLARATION, M.OBSERVED})),
        (ENC, "role", "morphism src_embed", (T.OPTION, set())),
        (ENC, "embed", "[role=embed", (T.VALUE, set())),
        (ENC, "Normal", "morphism encode", (T.FAMILY, set())),
        (ENC, "FinSet", "object Source", (T.BUILTIN_TYPE, set())),
        (ENC, "fan", "let attend", (T.BUILTIN_FUNCTION, set())),
        (RLSTM, "h_prev", "program rlstm_cell", (T.PARAMETER, {M.DECLARATION})),
        (RLSTM, "ij", "let ij", (T.LOCAL, {M.DECLARATION})),
        (RLSTM, "sigmoid", "let i =", (T.BUILTIN_FUNCTION, set())),
        (RLSTM, "rlstm_cell", "scanl(", (T.PROGRAM, {M.DOCUMENTED})),
        (RLSTM, "scanl", "define encoder", (T.BUILTIN_FUNCTION, set())),
        (RLSTM, "_c", "sample (h", (T.SITE, {M.DECLARATION, M.SAMPLED})),
    ],
)
def test_classification(text: str, needle: str, within: str, expected) -> None:
    token_type, modifiers = kind_at(text, needle, within)
    assert (token_type, set(modifiers)) == (expected[0], expected[1])


def test_keyword_arguments_are_options_and_booleans_values() -> None:
    text = ENC + "\nlet back = scan(encode, reverse=true)\n"
    assert kind_at(text, "reverse")[0] is T.OPTION
    assert kind_at(text, "true", within="reverse=")[0] is T.VALUE


def test_an_unresolved_name_gets_no_token() -> None:
    text = ENC.replace("let attend = fan(head) >> mix", "let attend = fan(head) >> mixx")
    assert (at(text, "mixx"), "mixx") not in classified(text)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_tokens_are_sorted_disjoint_and_on_one_line(path) -> None:
    tokens = semantic_tokens(check(path.read_text()))
    assert tokens
    for a, b in itertools.pairwise(tokens):
        assert a.span.end <= b.span.start
    assert all(t.span.start_line == t.span.end_line for t in tokens)


def test_range_request_returns_only_overlapping_tokens() -> None:
    start = at(ENC, "program")
    tokens = semantic_tokens(check(ENC), start, len(ENC))
    assert tokens and all(t.span.end > start for t in tokens)
    assert len(tokens) < len(semantic_tokens(check(ENC)))
