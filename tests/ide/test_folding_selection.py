"""Folding ranges (programs, comment blocks) and selection ranges along the syntax tree."""

from __future__ import annotations

import itertools

from qvr_core.check import check
from qvr_core.ide.folding import FoldKind, folding_ranges
from qvr_core.ide.selection import selection_chain
from tests.ide.helpers import at, example


def folds(text: str) -> list[tuple[int, int, FoldKind]]:
    module = check(text)
    return [(r.start_line, r.end_line, r.kind) for r in folding_ranges(module.ast, text)]


def test_programs_and_comment_blocks_fold() -> None:
    text = example("rlstm_lm.qvr")
    assert folds(text) == [
        (0, 5, FoldKind.COMMENT),  # the header comment
        (20, 31, FoldKind.REGION),  # program rlstm_cell (its doc comment stays visible)
        (35, 38, FoldKind.REGION),  # program rlstm_lm
    ]


def test_a_single_comment_line_and_trailing_comments_do_not_fold() -> None:
    text = "# one\nobject A : Real 2  # two\nobject B : Real 2  # three\n"
    assert folds(text) == []


def test_a_declaration_over_several_lines_folds() -> None:
    text = "object A : Real 2\nlet x = fan(\n    a,\n    a)\n"
    assert (1, 3, FoldKind.REGION) in folds(text)


def test_selection_grows_from_a_name_to_the_file() -> None:
    text = example("bidirectional_rnn_lm.qvr")
    module = check(text)
    offset = at(text, "backward_path", within="fan(") + 2
    chain = [text[s.start : s.end] for s in selection_chain(module.ast, offset)]
    assert chain == [
        "backward_path",
        "fan(forward_path, backward_path)",
        "fan(forward_path, backward_path) >> combine",
        "let backbone = fan(forward_path, backward_path) >> combine",
        text,
    ]


def test_selection_inside_a_program_goes_through_step_and_program() -> None:
    text = example("vanilla_rnn_lm.qvr")
    module = check(text)
    chain = selection_chain(module.ast, at(text, "(h)") + 1)
    texts = [text[s.start : s.end] for s in chain]
    assert texts[0] == "h"
    assert texts[1] == "lm_head(h)"
    assert texts[2] == "observe next_token : Token <- lm_head(h)"
    assert texts[3].startswith("program vanilla_rnn_lm") and texts[3].endswith("return next_token")
    assert texts[-1] == text
    for inner, outer in itertools.pairwise(chain):
        assert outer.covers(inner) and outer != inner


def test_selection_in_a_program_header_includes_the_header() -> None:
    text = example("vanilla_rnn_lm.qvr")
    chain = selection_chain(check(text).ast, at(text, "Token", within="program"))
    texts = [text[s.start : s.end] for s in chain]
    assert texts[:2] == ["Token", "program vanilla_rnn_lm : Token -> Token"]


def test_selection_in_a_comment_is_the_comment() -> None:
    text = example("rlstm_lm.qvr")
    chain = selection_chain(check(text).ast, at(text, "language model"))
    assert [text[s.start : s.end] for s in chain] == [text.splitlines()[0], text]
