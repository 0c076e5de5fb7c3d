"""Property: formatting mutated examples that still parse is idempotent and changes no meaning.

The mutations are the ones people make by hand (spacing, blank lines,
comments anywhere, redundant parentheses, calls split over lines, trailing
blanks) plus a few random tokens; text that no longer parses must come back
exactly as it was.
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from qvr_core.check import check
from qvr_core.format.formatter import format_source, format_text
from qvr_core.syntax.parser import parse

ROOT = Path(__file__).resolve().parents[2]
SOURCES = [p.read_text() for p in sorted(ROOT.glob("examples/*.qvr"))] + [
    p.read_text() for p in sorted(ROOT.glob("examples/errors/*.qvr")) if "QVR001" not in p.name
]
COMMENTS = ["# note", "#! doc é", "#", "# x -> y, (z)", "#!"]
TOKENS = [">>", "@", "(", ")", ",", "=", ":", "*", "->", "let ", "\n    ", "h", "2"]


def _line_bounds(text: str, index: int) -> tuple[int, int]:
    start = text.rfind("\n", 0, index) + 1
    end = text.find("\n", index)
    return start, len(text) if end < 0 else end


@st.composite
def mutated(draw: st.DrawFn) -> str:
    text = draw(st.sampled_from(SOURCES))
    for _ in range(draw(st.integers(1, 8))):
        lines = text.split("\n")
        i = draw(st.integers(0, len(lines) - 1))
        line = lines[i]
        action = draw(
            st.sampled_from(
                [
                    "spaces",
                    "squeeze",
                    "blank",
                    "trailing_comment",
                    "comment_line",
                    "paren",
                    "split",
                    "trailing_blanks",
                    "token",
                ]
            )
        )
        code = line.split("#", 1)[0]
        indent = len(line) - len(line.lstrip(" "))
        if action == "spaces" and " " in code[indent:]:
            j = draw(st.sampled_from([k for k, c in enumerate(code) if c == " " and k >= indent]))
            lines[i] = line[:j] + " " * draw(st.integers(1, 3)) + line[j:]
        elif action == "squeeze" and " " in code[indent:]:
            j = draw(st.sampled_from([k for k, c in enumerate(code) if c == " " and k > indent]))
            lines[i] = line[:j] + line[j + 1 :]
        elif action == "blank":
            lines.insert(i, " " * draw(st.sampled_from([0, 2, 4])))
        elif action == "trailing_comment" and "#" not in line and line.strip():
            lines[i] = line + " " * draw(st.integers(0, 3)) + draw(st.sampled_from(COMMENTS))
        elif action == "comment_line":
            pad = " " * draw(st.sampled_from([0, 1, 4, 8]))
            lines.insert(i, pad + draw(st.sampled_from(COMMENTS)))
        elif action == "paren" and line.startswith("let ") and " = " in code:
            head, expr = code.split(" = ", 1)
            lines[i] = f"{head} = ({expr.rstrip()})" + line[len(code) :]
        elif action == "split" and ", " in code and "(" in code[: code.index(", ")]:
            j = code.index(", ")
            lines[i] = line[: j + 1] + "\n" + " " * draw(st.integers(1, 10)) + line[j + 2 :]
        elif action == "trailing_blanks":
            lines[i] = line + " " * draw(st.integers(1, 3))
        elif action == "token":
            j = draw(st.integers(0, len(line)))
            lines[i] = line[:j] + draw(st.sampled_from(TOKENS)) + line[j:]
        text = "\n".join(lines)
    return text


def _trimmed(doc: str | None) -> str | None:
    """A doc comment as the formatter leaves it: trailing blanks of each line removed."""
    return None if doc is None else "\n".join(line.rstrip() for line in doc.split("\n"))


def meaning(text: str) -> tuple[object, ...]:
    """Every symbol's type and doc, the comments and the diagnostic codes."""
    module = check(text)
    symbols = [
        (s.name, s.kind.value, s.scope, getattr(s.type, "label", str(s.type)), _trimmed(s.doc))
        for s in module.symbols.symbols
    ]
    comments = [c.text.rstrip() for c in module.ast.comments]
    codes = sorted(d.code for d in module.diagnostics)
    return symbols, comments, codes


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(mutated())
def test_formatting_is_idempotent_and_keeps_types_and_comments(text: str) -> None:
    result = format_text(text)
    if parse(text).diagnostics:
        assert result.text == text and not result.ok
        return
    assert result.ok, result.refused
    assert format_source(result.text) == result.text
    assert meaning(result.text) == meaning(text)
