"""The era of quivers a file is written for, from the syntax it uses.

Each construct that only some quivers releases accept is evidence: a range of
releases and a few words naming it (`top-level let` is 0.11-0.14, `define`
0.15 on, call steps 0.19 on, an older surface 0.1-0.10). A file's era is the
intersection of its evidence; a file with none is "0.11 or later". The ranges
were read off quivers' own grammars (one per release, see tests/conformance).
`qvr migrate` reports it and the editor shows it on hover; both ask here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from qvr_core.syntax import ast
from qvr_core.text import rules
from qvr_core.text.diagnostics import Diagnostic

Version = tuple[int, int]

#: Declaration kinds quivers has from 0.19 on (effects and typed computations).
_EFFECT_KINDS = frozenset({"effect", "instance", "handler", "index", "family", "computation"})


@dataclass(frozen=True)
class Evidence:
    """One construct that only the releases `low` .. `high` (None: to today) accept."""

    low: Version
    high: Version | None
    what: str


@dataclass(frozen=True)
class Era:
    """The releases a file is written for, and the constructs that say so."""

    low: Version
    high: Version | None
    evidence: tuple[Evidence, ...]
    mixed: bool = False  # its constructs come from releases no one quivers accepts together

    @property
    def releases(self) -> str:
        """`quivers 0.11-0.14`, `quivers 0.15+`."""
        low = _v(self.low)
        if self.high is None:
            return f"quivers {low}+"
        return f"quivers {low}" if self.high == self.low else f"quivers {low}-{_v(self.high)}"

    @property
    def label(self) -> str:
        """`quivers 0.11-0.14 (top-level let)`; `mixed quivers eras (...)`."""
        if self.mixed:
            parts = "; ".join(f"{e.what}: {_range(e)}" for e in self.evidence)
            return f"mixed quivers eras ({parts})"
        if not self.evidence:
            return f"{self.releases} (nothing era-specific)"
        return f"{self.releases} ({', '.join(e.what for e in self.evidence)})"

    @property
    def older(self) -> bool:
        """Written (at least in part) for quivers before 0.11."""
        return any(e.high is not None and e.high < (0, 11) for e in self.evidence)


def era(module: ast.Module, diagnostics: Iterable[Diagnostic], text: str) -> Era:
    """The era of a parsed file: its module, its parse diagnostics and its text."""
    found = _evidence(module, diagnostics, text)
    low = max((e.low for e in found), default=(0, 11))
    highs = [e.high for e in found if e.high is not None]
    high = min(highs) if highs else None
    return Era(low, high, tuple(found), mixed=high is not None and high < low)


def form_of_0_14(clause: ast.Clause, text: str) -> str | None:
    """The 0.11-0.14 form a declaration is written in that quivers 0.15 respelt
    (`rule ... => S`, now `|- S`) or dropped (`composition c as ...`, `decoder d over ...`)."""
    head = text[clause.span.start : clause.span.end].split("\n", 1)[0]
    if clause.kind == "rule" and len(clause.parts) >= 2:
        gap = text[clause.parts[-2].span.end : clause.parts[-1].span.start]  # type: ignore[attr-defined]  # parts: nodes, each with a span
        if "=>" in gap:
            return "`rule ... =>`"
    if clause.kind == "composition" and _COMPOSITION_AS.match(head):
        return "`composition ... as ...`"
    if clause.kind == "decoder" and _DECODER_OVER.match(head):
        return "`decoder ... over ...`"
    return None


_COMPOSITION_AS = re.compile(r"composition\s+\w+\s+as\b")
_DECODER_OVER = re.compile(r"decoder\s+\w+\s+over\b")


def _evidence(module: ast.Module, diagnostics: Iterable[Diagnostic], text: str) -> list[Evidence]:
    found: dict[str, Evidence] = {}

    def add(low: Version, high: Version | None, what: str) -> None:
        found.setdefault(what, Evidence(low, high, what))

    if any(d.code == rules.OLDER_SURFACE.code for d in diagnostics):
        add((0, 1), (0, 10), "an older surface")
    for decl in module.decls:
        if isinstance(decl, ast.LetDecl):
            if decl.keyword == "let":
                add((0, 11), (0, 14), "top-level let")
            else:
                add((0, 15), None, "define")
        elif isinstance(decl, ast.ObjectDecl | ast.MorphismDecl) and decl.more_names:
            add((0, 15), None, "multi-name declarations")
        elif isinstance(decl, ast.ProgramDecl):
            if any(isinstance(s, ast.CallStep) for s in decl.steps):
                add((0, 19), None, "call steps")
        elif isinstance(decl, ast.OtherDecl):
            if decl.clause.kind in _EFFECT_KINDS:
                add((0, 19), None, f"`{decl.clause.kind}` declarations")
            elif (form := form_of_0_14(decl.clause, text)) is not None:
                add((0, 11), (0, 14), form)
    return list(found.values())


def _v(version: Version) -> str:
    return f"{version[0]}.{version[1]}"


def _range(e: Evidence) -> str:
    return f"{_v(e.low)}+" if e.high is None else f"{_v(e.low)}-{_v(e.high)}"
