"""Properties of the parser on arbitrary and damaged text.

For any input it returns (never raises), every span it reports lies inside
the text and agrees with the text's lines, and damage to one line of a
valid file leaves the declarations that do not contain that line intact.
"""

from __future__ import annotations

import functools
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from qvr_core.syntax import parse
from qvr_core.syntax.parser import join, place_again, place_segments
from tests.check.test_check_properties import edited
from tests.syntax.helpers import assert_consistent

EXAMPLES = sorted(Path(__file__).resolve().parents[2].joinpath("examples").glob("*.qvr"))
SOURCES = [p.read_text(encoding="utf-8") for p in EXAMPLES]
# fmt: off
FRAGMENTS = [
    "object ", "morphism ", "let ", "program ", "sample ", "observe ", "return ", "export ",
    ">>", "@", "->", "<-", "~", "*", "+", "-", "/", "(", ")", "[", "]", ",", "=", ":",
    "\n", "\r\n", "    ", "  ", "\t", "#", "#! ", "é", "\x00", "\ufeff",
    "fan(", "scan(", "stack(", "identity(", "role=kernel", "reverse=true", "scale=-2.5",
    "Normal", "FinSet 3", "Real 64", "Token", "Hidden", "h", "x", "0", "1e-3", ".5", "9" * 30,
]
# fmt: on
SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def mutated(draw: st.DrawFn) -> str:
    """An example file with a few characters or lines deleted, inserted or duplicated."""
    text = draw(st.sampled_from(SOURCES))
    for _ in range(draw(st.integers(1, 6))):
        pos = draw(st.integers(0, len(text)))
        action = draw(st.sampled_from(["delete", "insert", "fragment", "dup_line", "drop_line"]))
        if action == "delete":
            text = text[:pos] + text[pos + draw(st.integers(1, 12)) :]
        elif action == "insert":
            text = text[:pos] + draw(st.text(max_size=6)) + text[pos:]
        elif action == "fragment":
            text = text[:pos] + draw(st.sampled_from(FRAGMENTS)) + text[pos:]
        else:
            lines = text.split("\n")
            i = draw(st.integers(0, len(lines) - 1))
            if action == "dup_line":
                lines.insert(i, lines[i])
            else:
                del lines[i]
            text = "\n".join(lines)
    return text


@given(st.text(max_size=400))
@SETTINGS
def test_random_text_never_raises(text: str) -> None:
    assert_consistent(text, parse(text))


@given(st.lists(st.sampled_from(FRAGMENTS), max_size=60).map("".join))
@SETTINGS
def test_token_soup_never_raises(text: str) -> None:
    assert_consistent(text, parse(text))


@given(st.binary(max_size=300).map(lambda b: b.decode("utf-8", errors="replace")))
@SETTINGS
def test_random_bytes_never_raise(text: str) -> None:
    assert_consistent(text, parse(text))


@given(mutated())
@SETTINGS
def test_mutated_examples_never_raise(text: str) -> None:
    assert_consistent(text, parse(text))


@functools.cache
def clean_decls(source: str) -> tuple[tuple[str, str, int, int], ...]:
    """(kind, name, first line, last line) of each declaration of an example as it is:
    parsed once per example, not once per generated case."""
    return tuple(
        (type(d).__name__, d.name.text, d.span.start_line, d.span.end_line)
        for d in parse(source).module.decls
    )


@given(st.sampled_from(SOURCES), st.data())
@SETTINGS
def test_damaging_one_line_keeps_the_other_declarations(source: str, data: st.DataObject) -> None:
    clean = clean_decls(source)
    lines = source.split("\n")
    line = data.draw(st.integers(0, len(lines) - 1))
    junk = data.draw(st.sampled_from(["$", " >> ", "(", " -> ->", "\t"]))
    lines[line] += junk
    damaged = "\n".join(lines)
    result = parse(damaged)
    assert_consistent(damaged, result)

    untouched = [name for _, name, start, end in clean if not start <= line <= end]
    assert not Counter(untouched) - Counter(d.name.text for d in result.module.decls)


@given(st.sampled_from(SOURCES), st.sampled_from(["\r\n", "\n"]), st.integers(0, 3))
@SETTINGS
def test_line_endings_and_blank_lines_do_not_change_the_tree_shape(
    source: str, newline: str, blanks: int
) -> None:
    base = clean_decls(source)
    text = source.replace("\n", newline + newline * blanks)
    result = parse(text)
    assert result.diagnostics == ()
    assert_consistent(text, result)
    assert [type(d).__name__ for d in result.module.decls] == [kind for kind, *_ in base]
    assert [d.name.text for d in result.module.decls] == [name for _, name, *_ in base]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_segments_parse_to_the_same_tree_as_the_whole_text(data: st.DataObject) -> None:
    """Segment by segment (what an editor's re-check reuses), fresh or moved from an
    earlier text, the parse is the whole text's parse."""
    text = data.draw(st.sampled_from(SOURCES))
    earlier = edited(data.draw, text)
    placed_earlier = place_segments(earlier, {})
    known = {p.segment.text: p.segment for p in placed_earlier}
    expected = parse(text)
    fresh = place_segments(text, {})
    assert join(text, [p.segment for p in fresh]) == expected
    again = place_again(earlier, placed_earlier, text, known)
    moved = [p.segment.moved(s) if (s := p.shifter()) else p.segment for p in again]
    assert [p.start for p in again] == [p.start for p in fresh]
    assert join(text, moved) == expected


@pytest.mark.parametrize("edit", ["\r", "x\r", "\r\n"])
def test_a_lone_carriage_return_removed_moves_later_segments_up_a_line(edit: str) -> None:
    """A lone `\\r` is a line end: taking it out of an earlier text moves what follows."""
    text = "object A : Real 4\nobject B : Real 4\nmorphism f : A -> B [role=kernel] ~ Normal\n"
    earlier = edit + text
    placed_earlier = place_segments(earlier, {})
    known = {p.segment.text: p.segment for p in placed_earlier}
    again = place_again(earlier, placed_earlier, text, known)
    moved = [p.segment.moved(s) if (s := p.shifter()) else p.segment for p in again]
    assert join(text, moved) == parse(text)
