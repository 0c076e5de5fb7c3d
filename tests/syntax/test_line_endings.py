"""Every line end the protocol allows (`\\n`, `\\r\\n`, a lone `\\r`) is the same line end.

A file with old-Mac `\\r` line ends used to be one long line to the parser (a
syntax error in the editor and in `qvr fmt`, while `qvr check`, reading with
universal newlines, called it clean). Now positions, parsing, checking and
formatting do not depend on which line ends a file uses, in any mix, and
formatting keeps the file's own style.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from qvr_core.check import check
from qvr_core.check.incremental import IncrementalChecker
from qvr_core.format.formatter import format_text
from qvr_core.syntax import parse
from qvr_core.text.span import LineIndex, line_end_style, unify_line_ends
from tests.syntax.helpers import assert_consistent

ROOT = Path(__file__).resolve().parents[2]
SOURCES = [p.read_text(encoding="utf-8") for p in sorted(ROOT.glob("examples/**/*.qvr"))]
ENDINGS = ("\n", "\r\n", "\r")
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def mixed(draw: st.DrawFn) -> tuple[str, str]:
    """(an example with `\\n` line ends, the same with each line end drawn from all three)."""
    text = draw(st.sampled_from(SOURCES))
    lines = text.split("\n")
    ends = draw(st.lists(st.sampled_from(ENDINGS), min_size=len(lines), max_size=len(lines)))
    for i in range(1, len(lines)):
        if ends[i - 1] == "\r" and not lines[i] and ends[i] == "\n":
            ends[i] = "\r\n"  # `\r` then an empty line's `\n` would read as one `\r\n`
    body = "".join(line + end for line, end in zip(lines[:-1], ends, strict=False))
    return text, body + lines[-1]


def reference_positions(text: str) -> list[tuple[int, int]]:
    """(line, column) of every offset, by splitting at the protocol's line ends."""
    out = []
    line = 0
    col = 0
    i = 0
    while i <= len(text):
        out.append((line, col))
        if i == len(text):
            break
        if text[i] == "\r" and text[i + 1 : i + 2] == "\n":
            out.append((line, col + 1))  # inside a \r\n: still the line's end
            i += 2
            line, col = line + 1, 0
            continue
        if text[i] in "\r\n":
            line, col = line + 1, 0
        else:
            col += 1
        i += 1
    return out


def located(diagnostics) -> list[tuple[str, str, int, int, int, int]]:
    return [
        (d.code, d.message, d.span.start_line, d.span.start_col, d.span.end_line, d.span.end_col)
        for d in diagnostics
    ]


@given(st.text(alphabet="ab\r\n", max_size=40))
@SETTINGS
def test_line_index_follows_the_protocol(text: str) -> None:
    index = LineIndex(text)
    expected = reference_positions(text)
    assert [index.position(offset) for offset in range(len(text) + 1)] == expected
    for line, text_of_line in enumerate(re.split(r"\r\n|\r|\n", text)):
        assert index.line_text(line) == text_of_line
        start = index.offset(line, 0)
        assert index.offset(line, 10**6) == start + len(text_of_line)


def test_unify_keeps_length_and_crlf() -> None:
    assert unify_line_ends("a\rb\r\nc\n\r") == "a\nb\r\nc\n\n"
    assert line_end_style("a\rb\rc\n") == "\r"
    assert line_end_style("a\r\nb\r\nc\n") == "\r\n"
    assert line_end_style("abc") == "\n"


@functools.cache
def plain_parsed(plain: str) -> list[tuple[str, str, int, int, int, int]]:
    """The diagnostics of parsing an example as it is (`\n` line ends), once per example."""
    return located(parse(plain).diagnostics)


@functools.cache
def plain_checked(plain: str) -> list[tuple[str, str, int, int, int, int]]:
    """The diagnostics of checking an example as it is, once per example."""
    return located(check(plain).diagnostics)


@functools.cache
def plain_formatted(plain: str) -> tuple[bool, str]:
    """Whether an example as it is formats, and to what, once per example."""
    result = format_text(plain)
    return result.ok, result.text


@given(mixed())
@SETTINGS
def test_parse_and_check_do_not_depend_on_line_ends(pair: tuple[str, str]) -> None:
    plain, text = pair
    result = parse(text)
    assert_consistent(text, result)
    assert located(result.diagnostics) == plain_parsed(plain)
    assert located(check(text).diagnostics) == plain_checked(plain)
    assert located(IncrementalChecker().check(text).diagnostics) == plain_checked(plain)


@given(mixed())
@SETTINGS
def test_formatting_keeps_the_files_own_line_end(pair: tuple[str, str]) -> None:
    plain, text = pair
    expected_ok, expected_text = plain_formatted(plain)
    result = format_text(text)
    assert result.ok == expected_ok
    if not result.ok:
        assert result.text == text
        return
    style = line_end_style(text)
    assert re.sub(r"\r\n|\r|\n", "\n", result.text) == expected_text
    assert len(re.findall(r"\r\n|\r|\n", result.text)) == result.text.count(style)


def test_a_file_with_only_cr_line_ends_is_clean() -> None:
    text = "object A : Real 3\robject B : Real 3\r\rexport A\r"
    assert not parse(text).diagnostics
    assert [d.code for d in check(text).diagnostics] == [
        d.code for d in check(text.replace("\r", "\n")).diagnostics
    ]
    assert format_text(text).text == "object A : Real 3\robject B : Real 3\r\rexport A\r"
    assert format_text("object A:Real 3\rexport A\r").text == "object A : Real 3\r\rexport A\r"
