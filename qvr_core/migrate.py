"""Migrating a file to the syntax of quivers 0.15 and later: the edits, applied.

One source of truth for each rewrite: an older surface (quivers 0.1-0.10) is
rewritten by the fix its QVR010 diagnostic already carries (the parser's
`Era.rewrite`); of 0.11-0.14 syntax, a top-level `let` becomes `define` and
`rule ... => S` becomes `rule ... |- S` (quivers 0.15 respelt both), and the
forms 0.15 dropped are left as written and named. Edits touch only the words
they rewrite, so comments, blank lines and layout stay as written. `qvr
migrate` and the server's "Migrate file" source action both come from here;
the era a file is written for is `qvr_core.syntax.era`'s.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from qvr_core.syntax import ast
from qvr_core.syntax.era import Era, era, form_of_0_14
from qvr_core.syntax.parser import ParseResult, parse
from qvr_core.text import rules
from qvr_core.text.diagnostics import TextEdit
from qvr_core.text.edits import apply_edits
from qvr_core.text.span import Span

#: The eras `qvr migrate --to` accepts. Both write quivers 0.15+ syntax today: no
#: construct qvr rewrites changed after 0.15, so "current" (HEAD) is the same rewrite.
TARGETS = ("0.15", "current")

_ROUNDS = 4  # a rewrite may reveal another (an old bind inside an old declaration)
_UNPARSED = (rules.SYNTAX_ERROR.code, rules.INTERNAL_ERROR.code)


@dataclass(frozen=True)
class Left:
    """A construct left as written: no rewrite into the target's syntax is known."""

    span: Span
    message: str


@dataclass(frozen=True)
class Migration:
    """The migrated text, or why there is none; what could not be rewritten."""

    text: str  # the input itself when refused or when nothing changes
    refused: str | None = None  # why the file was not migrated (it does not parse)
    left: tuple[Left, ...] = ()  # constructs no rewrite is known for

    @property
    def ok(self) -> bool:
        return self.refused is None


def era_of(text: str) -> Era:
    """The era `text` is written for (see `qvr_core.syntax.era`)."""
    parsed = parse(text)
    return era(parsed.module, parsed.diagnostics, text)


def migration_edits(parsed: ParseResult, text: str) -> tuple[list[TextEdit], list[Left]]:
    """The edits of one round against `text`, and the constructs with no rewrite."""
    edits: list[TextEdit] = []
    left: list[Left] = []
    for d in parsed.diagnostics:
        if d.code != rules.OLDER_SURFACE.code:
            continue
        fix = next((f for f in d.fixes if f.preferred), d.fixes[0] if d.fixes else None)
        if fix is None:
            left.append(Left(d.span, d.message))
        else:
            edits.extend(fix.edits)
    for decl in parsed.module.decls:
        if type(decl) is ast.OtherDecl:
            _clause_0_14(decl.clause, text, edits, left)
    taken = [(e.span.start, e.span.end) for e in edits]
    for decl in _top_lets(parsed.module):
        if decl.keyword != "let":
            continue
        at = _keyword_span(text, decl.span)
        if at is not None and not any(s < at.end and at.start < e for s, e in taken):
            edits.append(TextEdit(at, "define"))
    return edits, left


def migrate_text(text: str, target: str = "current") -> Migration:
    """`text` in the syntax of `target` (one of TARGETS), comments and layout kept."""
    if target not in TARGETS:
        raise ValueError(f"unknown target {target!r}: one of {', '.join(TARGETS)}")
    current = text
    left: list[Left] = []
    for _ in range(_ROUNDS):
        parsed = parse(current)
        bad = next((d for d in parsed.diagnostics if d.code in _UNPARSED), None)
        if bad is not None:
            where = f"line {bad.span.start_line + 1}: {bad.message}"
            if current is text:
                return Migration(text, refused=f"not migrated: it does not parse ({where})")
            return Migration(text, refused=f"not migrated: a rewrite does not parse ({where})")
        edits, left = migration_edits(parsed, current)
        if not edits:
            break
        current = apply_edits(current, edits)
    return Migration(current, left=tuple(left))


def _clause_0_14(clause: ast.Clause, text: str, edits: list[TextEdit], left: list[Left]) -> None:
    """A declaration in a 0.11-0.14 form: `rule ... => S` becomes `|- S` (0.15's
    spelling); the forms 0.15 dropped are left as written, and said."""
    form = form_of_0_14(clause, text)
    if form is None:
        return
    if clause.kind != "rule":
        left.append(
            Left(clause.span, f"{form} is quivers 0.11-0.14's; 0.15 and later have no such form")
        )
        return
    before, last = clause.parts[-2].span, clause.parts[-1].span  # type: ignore[attr-defined]  # parts: nodes, each with a span
    at = text.find("=>", before.end, last.start)
    col = before.end_col + at - before.end
    edits.append(TextEdit(Span(at, at + 2, before.end_line, col, before.end_line, col + 2), "|-"))


def _top_lets(module: ast.Module) -> list[ast.LetDecl]:
    return [d for d in module.decls if type(d) is ast.LetDecl]


_LET = re.compile(r"let\b")


def _keyword_span(text: str, span: Span) -> Span | None:
    """The `let` a declaration starts with (its span starts at its keyword)."""
    if _LET.match(text, span.start) is None:
        return None
    col = span.start_col
    return Span(span.start, span.start + 3, span.start_line, col, span.start_line, col + 3)
