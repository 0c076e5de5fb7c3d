"""The keyword registry (`qvr_core.builtins.keywords`) agrees with the lexer and the grammar.

Completion and rename read the registry; the lexer (`qvr_core.syntax.layout`)
decides how a word is tokenised. These tests keep the two in step without the
parser reading the registry, so its behaviour does not depend on it.
"""

from __future__ import annotations

import re

import pytest

from qvr_core.builtins import RESERVED, STEP_KEYWORDS, TOP_KEYWORDS, Keyword
from qvr_core.check import context
from qvr_core.syntax import layout
from qvr_core.syntax.parser import parse

EVERY = (*TOP_KEYWORDS, *STEP_KEYWORDS)


def test_reserved_words_are_the_lexers_keywords_and_soft_ones_its_soft_keywords() -> None:
    assert set(RESERVED) == set(layout.KEYWORDS)
    for k in EVERY:
        assert (k.word in layout.KEYWORDS) is k.reserved, k.word
        if not k.reserved:
            assert k.word in layout.SOFT_KEYWORDS, k.word


def test_every_keyword_is_highlighted_and_starts_what_it_says() -> None:
    highlighted = {*layout.DECLARATION_KEYWORDS, *layout.CONTROL_KEYWORDS}
    assert {k.word for k in EVERY} <= highlighted
    assert {k.word for k in TOP_KEYWORDS} <= layout.TOP_WORDS


def test_rename_refuses_exactly_the_reserved_words() -> None:
    assert set(context.KEYWORDS) == set(RESERVED)


def _examples(k: Keyword) -> list[str]:
    return re.findall(r"`([^`]+)`", k.doc)


@pytest.mark.parametrize("keyword", STEP_KEYWORDS, ids=lambda k: k.word)
def test_a_step_keywords_examples_parse_as_steps(keyword: Keyword) -> None:
    examples = _examples(keyword)
    assert examples and all(e.startswith(keyword.word) for e in examples)
    for example in examples:
        result = parse(f"program p (y) : A -> A\n    {example}\n")
        assert not result.diagnostics, (example, result.diagnostics)


@pytest.mark.parametrize("keyword", TOP_KEYWORDS, ids=lambda k: k.word)
def test_a_top_keywords_examples_parse_as_declarations(keyword: Keyword) -> None:
    for example in _examples(keyword):
        assert example.startswith(keyword.word)
        result = parse(example + "\n")
        assert not result.diagnostics, (example, result.diagnostics)
