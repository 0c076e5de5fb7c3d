"""Diagnostics rendered for people (compiler style) and for machines (JSON)."""

from __future__ import annotations

from collections.abc import Iterable

from qvr_core.diagnostics import Diagnostic
from qvr_core.syntax.span import LineIndex, Span


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


def _excerpt(lines: LineIndex, s: Span) -> list[str]:
    text = lines.line_text(s.start_line).replace("\t", " ")
    gutter = f"{s.start_line + 1:>5} | "
    end_col = s.end_col if s.end_line == s.start_line else len(text)
    width = max(1, end_col - s.start_col)
    caret = " " * (len(gutter) - 2) + "| " + " " * s.start_col + "^" * width
    return [gutter + text, caret]


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
