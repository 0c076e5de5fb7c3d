"""Hover in the core: a plain value (Markdown, plain text and the span it covers)."""

from __future__ import annotations

from qvr_core.check import check
from qvr_core.ide.hover import hover_at
from tests.ide.helpers import at, example

BIRNN = example("bidirectional_rnn_lm.qvr")
MODULE = check(BIRNN)


def test_a_let_shows_its_type_dimensions_and_declaration() -> None:
    found = hover_at(MODULE, at(BIRNN, "backbone =") + 1)
    assert found is not None
    assert "```qvr\nlet backbone : [Token] -> Combined\n```" in found.markdown
    assert "`Combined = R^128`" in found.markdown
    assert BIRNN[found.span.start : found.span.end] == "backbone"


def test_plain_text_says_the_same_without_markdown() -> None:
    found = hover_at(MODULE, at(BIRNN, "backbone =") + 1)
    assert found is not None
    assert "let backbone : [Token] -> Combined" in found.plain
    assert "Combined = R^128" in found.plain
    assert "```" not in found.plain and "`" not in found.plain


def test_a_sub_expression_covers_exactly_itself() -> None:
    found = hover_at(MODULE, at(BIRNN, "fan(") + 1)
    assert found is not None
    assert BIRNN[found.span.start : found.span.end].startswith("fan(")
    assert "FwdHidden * BwdHidden = R^(64+64)" in found.plain


def test_nothing_under_a_keyword() -> None:
    assert hover_at(MODULE, at(BIRNN, "object", occurrence=1) + 1) is None


def test_the_first_declaration_line_says_the_era_of_the_file() -> None:
    found = hover_at(MODULE, at(BIRNN, "object") + 1)
    assert found is not None
    assert found.plain.startswith("written for quivers")
    assert found.span.start == 0 and found.span.start_line == found.span.end_line
