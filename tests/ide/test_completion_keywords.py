"""Keyword completion comes from the keyword registry (`qvr_core.builtins.keywords`):
every step of a program is offered where a step starts, with its doc."""

from __future__ import annotations

from qvr_core.builtins import STEP_KEYWORDS, TOP_KEYWORDS
from qvr_core.check import check
from qvr_core.ide.completion import Word, candidates
from qvr_core.ide.completion_context import Where, classify

PROGRAM = """\
object K : FinSet 3
object N : FinSet 4

program mix : N -> N
    sample probs <- Dirichlet(1.0, 1.0, 1.0)
"""


def _offered(text: str) -> dict[str, str | None]:
    context = classify(text, len(text))
    found = candidates(context, [check(text)], text.count("\n"))
    return {c.label: c.doc for c in found if c.kind is Word.KEYWORD}


def test_the_start_of_a_step_offers_marginalize_and_score() -> None:
    text = PROGRAM + "    "
    assert classify(text, len(text)).where is Where.STEP_KEYWORD
    offered = _offered(text)
    assert {"marginalize", "score"} <= set(offered)
    assert set(offered) == {k.word for k in STEP_KEYWORDS}
    assert all(offered[k.word] == k.doc for k in STEP_KEYWORDS)


def test_a_typed_prefix_of_a_soft_step_keyword_still_offers_the_step_keywords() -> None:
    for prefix in ("marg", "sco"):
        assert {"marginalize", "score"} <= set(_offered(PROGRAM + "    " + prefix))


def test_the_start_of_a_line_at_column_zero_offers_the_top_keywords() -> None:
    offered = _offered(PROGRAM + "\n")
    assert set(offered) == {k.word for k in TOP_KEYWORDS}


def test_a_score_steps_arithmetic_offers_the_bound_names_and_functions() -> None:
    text = PROGRAM + "    score s = "
    assert classify(text, len(text)).where is Where.ARITH
    labels = {c.label for c in candidates(classify(text, len(text)), [check(text)], 5)}
    assert "probs" in labels and "log" in labels
