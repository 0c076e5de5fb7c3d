"""Random and mutated sources never make the checker raise.

`check_parsed` is called directly (not the guarded `check`), so a bug in
any checker pass fails here instead of hiding behind the safety net.
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from qvr_core.check.checker import check_parsed
from qvr_core.syntax.parser import parse

EXAMPLES = sorted(Path(__file__).resolve().parents[2].joinpath("examples").rglob("*.qvr"))
SOURCES = [p.read_text() for p in EXAMPLES]
TOKENS = [
    "object ",
    "morphism ",
    "let ",
    "program ",
    "sample ",
    "observe ",
    "return ",
    "export ",
    ">>",
    "@",
    "->",
    "<-",
    "~",
    "*",
    "(",
    ")",
    "[",
    "]",
    ",",
    "=",
    ":",
    "\n",
    "    ",
    "\t",
    "fan(",
    "scan(",
    "stack(",
    "repeat(",
    "identity(",
    "role=kernel",
    "reverse=true",
    "Normal",
    "FinSet 3",
    "Real 64",
    "Token",
    "Hidden",
    "h",
    "x",
    "0",
    "-2.5",
    "#",
    "#!",
    "é",
]


def check_source(text: str) -> None:
    parsed = parse(text)
    module = check_parsed(text, parsed.module, parsed.diagnostics)
    for d in module.diagnostics:
        assert 0 <= d.span.start <= d.span.end <= len(text), d
        for fix in d.fixes:
            for edit in fix.edits:
                assert 0 <= edit.span.start <= edit.span.end <= len(text)


def edited(draw: st.DrawFn, text: str) -> str:
    """`text` after one random edit of the kinds people make (and some they do not)."""
    pos = draw(st.integers(0, len(text)))
    action = draw(st.sampled_from(["delete", "insert", "token", "dup_line", "swap"]))
    if action == "delete":
        end = min(len(text), pos + draw(st.integers(1, 12)))
        return text[:pos] + text[end:]
    if action == "insert":
        return text[:pos] + draw(st.text(max_size=6)) + text[pos:]
    if action == "token":
        return text[:pos] + draw(st.sampled_from(TOKENS)) + text[pos:]
    lines = text.split("\n")
    i = draw(st.integers(0, len(lines) - 1))
    if action == "dup_line":
        lines.insert(i, lines[i])
    else:
        j = draw(st.integers(0, len(lines) - 1))
        lines[i], lines[j] = lines[j], lines[i]
    return "\n".join(lines)


@st.composite
def mutated(draw: st.DrawFn) -> str:
    text = draw(st.sampled_from(SOURCES))
    for _ in range(draw(st.integers(1, 6))):
        text = edited(draw, text)
    return text


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_mutated_examples_never_raise(text: str) -> None:
    check_source(text)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(TOKENS), max_size=40).map("".join))
def test_token_soup_never_raises(text: str) -> None:
    check_source(text)


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=300))
def test_random_text_never_raises(text: str) -> None:
    check_source(text)
