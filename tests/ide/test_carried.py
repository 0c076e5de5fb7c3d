"""Hover carried over from an earlier text's tables is the hover of the new text, or unknown.

The property: after any sequence of edits, wherever the carried hover gives
an answer it is exactly what `hover_at` gives on the new text checked from
scratch. The examples pin the cases that matter to an editor: a line
inserted above moves the answer (span and "declared on line"), and a
position inside the edited declaration, or a name whose meaning the edit
changed, is never answered from the old tables.
"""

from __future__ import annotations

from unittest.mock import patch

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from qvr_core.check import check
from qvr_core.check.incremental import IncrementalChecker
from qvr_core.check.kept import MOST_LINKS, Kept, Trail
from qvr_core.check.module import CheckedModule
from qvr_core.ide.carried import UNKNOWN, carried_hover
from qvr_core.ide.hover import hover_at
from tests.check.test_incremental import edit_sequences
from tests.ide.helpers import at, example

BIRNN = example("bidirectional_rnn_lm.qvr")


def checked(*versions: str) -> tuple[CheckedModule, CheckedModule]:
    """The first version's module (tables built) and the last one's (tables pending)."""
    checker = IncrementalChecker(safe=False)
    first = checker.check(versions[0])
    first.materialize()
    last = first
    for text in versions[1:]:
        last = checker.check(text)
    return first, last


def test_a_line_inserted_above_moves_the_answer() -> None:
    edited = BIRNN.replace("let backbone", "let spare = fwd_cell\nlet backbone", 1)
    old, new = checked(BIRNN, edited)
    offset = at(edited, "backbone =") + 1
    found = carried_hover(old, new.kept, offset)
    assert found is not UNKNOWN and found is not None
    assert found == hover_at(check(edited), offset)
    assert edited[found.span.start : found.span.end] == "backbone"


def test_a_symbol_declared_below_the_edit_says_its_new_line() -> None:
    edited = BIRNN.replace("object Combined", "# a comment\n\nobject Combined", 1)
    old, new = checked(BIRNN, edited)
    offset = at(edited, "bwd_cell", within="let backward_path") + 1  # declared further up
    found = carried_hover(old, new.kept, offset)
    assert found is not UNKNOWN and found is not None
    assert found == hover_at(check(edited), offset)
    line = edited.count("\n", 0, at(edited, "morphism bwd_cell")) + 1
    assert f"declared on line {line}" in found.plain


def test_the_edited_declaration_is_not_answered_from_the_old_tables() -> None:
    edited = BIRNN.replace("let backbone = ", "let backbone = fwd_cell >> ", 1)
    old, new = checked(BIRNN, edited)
    assert carried_hover(old, new.kept, at(edited, "backbone =") + 1) is UNKNOWN


def test_a_use_of_a_name_whose_meaning_changed_is_not_answered_from_the_old_tables() -> None:
    edited = BIRNN.replace("object Combined : Real 128", "object Combined : Real 96", 1)
    assert edited != BIRNN
    old, new = checked(BIRNN, edited)
    assert carried_hover(old, new.kept, at(edited, "combine", within="let backbone")) is UNKNOWN
    fresh = check(edited)
    for offset in range(len(edited) + 1):
        found = carried_hover(old, new.kept, offset)
        assert found is UNKNOWN or found == hover_at(fresh, offset)


def test_a_module_checked_on_its_own_carries_nothing() -> None:
    old = check(BIRNN)
    _, new = checked(BIRNN, BIRNN + "\n")
    assert carried_hover(old, new.kept, at(BIRNN, "backbone =")) is UNKNOWN


def test_the_chain_of_records_is_bounded_and_reaches_the_first_check() -> None:
    checker = IncrementalChecker(safe=False)
    first = checker.check(BIRNN)
    first.materialize()
    text = BIRNN
    for _ in range(MOST_LINKS + 4):  # blank lines typed at the end, one check each
        text += "\n"
        last = checker.check(text)
    assert last.kept is not None
    assert len(list(last.kept.links())) == MOST_LINKS
    assert Trail.between(first.kept, last.kept) is not None
    assert Trail.between(Kept(-1, None), last.kept) is None
    offset = at(text, "backbone =") + 1
    found = carried_hover(first, last.kept, offset)
    assert found is not UNKNOWN and found == hover_at(check(text), offset)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(edit_sequences(), st.data(), st.sampled_from([2, MOST_LINKS]))
def test_a_carried_hover_is_the_new_texts_hover(
    versions: list[str], data: st.DataObject, links: int
) -> None:
    """With chains of 2 links, the records of older checks are merged (`Kept.bounded`)."""
    start = data.draw(st.integers(0, len(versions) - 1))
    with patch("qvr_core.check.kept.MOST_LINKS", links):
        old, new = checked(*versions[start:])
    fresh = check(versions[-1])
    for offset in range(0, len(versions[-1]) + 1):
        found = carried_hover(old, new.kept, offset)
        if found is not UNKNOWN:
            assert found == hover_at(fresh, offset), offset
