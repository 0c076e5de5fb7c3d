"""The line alignment behind formatting edits: correct for any pair of texts, one edit per
reformatted line, narrowed to what changed in it, and the large pasted file of issue 18."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qvr_core.format.diff import align, diff_edits, format_edits
from qvr_core.format.formatter import Cancelled, format_source
from qvr_core.text.diagnostics import TextEdit
from qvr_core.text.edits import apply_edits
from qvr_core.text.span import Span


def messy(blocks: int) -> str:
    """A pasted file: no blank lines between groups, spacing not the canonical one."""
    lines = ["object T:FinSet 8", "object H:Real 4"]
    for i in range(blocks):
        lines += [
            f"morphism f_{i}:T->H[role=embed]",
            f"morphism g_{i}:H->H  ~ Normal",
            f"let l_{i}=f_{i}>>g_{i}",
            f"program p_{i}:T->H",
            f"  sample h<-l_{i}",
            "  return h",
        ]
    return "\n".join(lines) + "\n"


LINES = st.lists(st.sampled_from(["a\n", "a  \n", "b\n", " b\n", "c\n", "\n", "d e\n", "de\n"]))


@settings(max_examples=300, deadline=None)
@given(LINES, LINES)
def test_edits_turn_any_text_into_any_other(old: list[str], new: list[str]) -> None:
    before, after = "".join(old), "".join(new)
    assert apply_edits(before, diff_edits(before, after)) == after


@settings(max_examples=200, deadline=None)
@given(LINES, LINES, st.integers(0, 12), st.integers(0, 4))
def test_any_range_of_edits_applies_on_its_own(old, new, first, length) -> None:
    before, after = "".join(old), "".join(new)
    last = first + length
    edits = diff_edits(before, after, (first, last))
    assert all(e.span.start_line <= last and e.span.end_line >= first for e in edits)
    whole = diff_edits(before, after)
    assert all(e in whole for e in edits)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 30)), st.lists(st.integers(0, 30)))
def test_alignment_covers_both_sides_in_order(a: list[int], b: list[int]) -> None:
    keys_a, keys_b = [str(x) for x in a], [str(x) for x in b]
    hunks = align(keys_a, keys_b)
    assert [h[0] for h in hunks] == [0, *(h[1] for h in hunks[:-1])] or not hunks
    assert (hunks[-1][1], hunks[-1][3]) == (len(a), len(b)) if hunks else not a and not b
    assert [h[2] for h in hunks] == [0, *(h[3] for h in hunks[:-1])] or not hunks
    if a and a == b:
        assert all(h[1] - h[0] == 1 == h[3] - h[2] for h in hunks)


def test_a_reformatted_line_is_one_edit_of_its_changed_part() -> None:
    before = "object A:Real 2\nobject B : Real 2\n"
    edits = diff_edits(before, "object A : Real 2\nobject B : Real 2\n")
    assert edits == [TextEdit(Span(8, 9, 0, 8, 0, 9), " : ")]


def test_lines_far_apart_with_nothing_unique_still_apply() -> None:
    # every line repeated: no anchors, a block edit or difflib, never a wrong text
    before = "x\n" * 3000 + "y\n" + "x\n" * 3000
    after = "x \n" * 2999 + "\n" + "y\n" + "x\n" * 3001
    assert apply_edits(before, diff_edits(before, after)) == after


def test_the_pasted_file_of_issue_18_formats_by_many_small_edits() -> None:
    text = messy(800)
    edits = format_edits(text)
    assert len(edits) > 1000
    assert apply_edits(text, edits) == format_source(text)
    assert all(e.span.start_line == e.span.end_line for e in edits[:100])


def test_formatting_stops_when_cancelled() -> None:
    with pytest.raises(Cancelled):
        format_edits(messy(20), cancelled=lambda: True)
