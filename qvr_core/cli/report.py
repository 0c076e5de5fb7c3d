"""Diagnostics rendered for people (compiler style) and for machines (JSON).

Under each diagnostic the human form shows its source line, or, for a long
line, a window of it around the caret (`WINDOW` characters at most, `...` for
what is cut): a minified one-line file with thousands of diagnostics prints
a few lines per diagnostic, not the whole line each time.
"""

from __future__ import annotations

from collections.abc import Iterable

from qvr_core.text.diagnostics import Diagnostic
from qvr_core.text.span import LineIndex, Span


def human(path: str, lines: LineIndex, diagnostics: Iterable[Diagnostic]) -> str:
    """`file:line:col: severity[CODE]: message`, the source line and a caret range."""
    out: list[str] = []
    for d in diagnostics:
        s = d.span
        where = f"{path}:{s.start_line + 1}:{s.start_col + 1}"
        out.append(f"{where}: {d.severity.value}[{d.code}]: {d.message}")
        out.extend(_excerpt(lines, s))
        for r in d.related:
            out.append(
                f"  {path}:{r.span.start_line + 1}:{r.span.start_col + 1}: note: {r.message}"
            )
        for f in d.fixes[:1]:
            out.append(f"  help: {f.title}")
    return "\n".join(out)


#: The most characters of a source line shown under a diagnostic, and how many of
#: them come before the caret when the line has to be cut.
WINDOW = 120
BEFORE = 40
CUT = "..."


def _excerpt(lines: LineIndex, s: Span) -> list[str]:
    start, end = lines.line_bounds(s.start_line)
    length = end - start
    end_col = s.end_col if s.end_line == s.start_line else length
    col = min(s.start_col, length)
    lo = 0 if length <= WINDOW else max(0, min(col - BEFORE, length - WINDOW))
    hi = min(length, lo + WINDOW)
    shown = lines.text[start + lo : start + hi].replace("\t", " ")
    head = CUT if lo > 0 else ""
    tail = CUT if hi < length else ""
    width = max(1, min(end_col, hi) - col)
    gutter = f"{s.start_line + 1:>5} | "
    caret = " " * (len(gutter) - 2) + "| " + " " * (len(head) + col - lo) + "^" * width
    return [gutter + head + shown + tail, caret]


def as_json(path: str, diagnostics: Iterable[Diagnostic]) -> list[dict[str, object]]:
    return [
        {
            "path": path,
            "code": d.code,
            "severity": d.severity.value,
            "message": d.message,
            "range": _range(d.span),
            "related": [
                {"path": path, "range": _range(r.span), "message": r.message} for r in d.related
            ],
        }
        for d in diagnostics
    ]


def _range(s: Span) -> dict[str, dict[str, int]]:
    return {
        "start": {"line": s.start_line, "character": s.start_col},
        "end": {"line": s.end_line, "character": s.end_col},
    }
