"""Hover from the tables of an earlier text, for a position the edits since did not touch.

After an edit the new text's diagnostics come first and its tables later
(`PendingModule`); a hover sent meanwhile would wait for them, some 90 ms on a
5,000-line file. The earlier module's tables answer at once, and give the very
answer the new tables would, moved, when everything the answer is made of
is a fact the incremental checks since kept (`qvr_core.check.kept`):

- the declaration under the cursor lies whole outside every edit, is not the
  first of either text (whose first line shows the file's era) and every
  check since reused its frame (and so its segment, doc comment included),
  so its types, references and locals are the earlier ones, moved;
- the names it declares, and the top-level symbol under the cursor, are
  declared once and no check since changed what they are or mean; that
  symbol's declaration, with the comments around it (its doc), lies whole
  outside every edit;
- no answer is carried that reads the module's diagnostics (the parts of a
  let that does not type-check).

Anything else is `UNKNOWN`, and the caller waits for the new tables.
"""

from __future__ import annotations

import enum
from bisect import bisect_right

from qvr_core.check.kept import Kept, Trail
from qvr_core.check.module import CheckedModule, SymbolKind
from qvr_core.ide.hover import HoverText, hover_at
from qvr_core.syntax import ast
from qvr_core.text.span import Span


class Unknown(enum.Enum):
    """The earlier tables cannot tell: the answer needs the new ones."""

    UNKNOWN = "unknown"


UNKNOWN = Unknown.UNKNOWN

#: Declarations whose facts are their frame's alone (the whole-module passes record
#: facts inside objects and exports).
_FRAMED = (ast.MorphismDecl, ast.LetDecl, ast.ProgramDecl)


class _Untouched(Exception):
    """A span of the answer is not where the later text has it (never expected)."""


def carried_hover(
    earlier: CheckedModule, later: Kept | None, offset: int
) -> HoverText | Unknown | None:
    """The hover at `offset` of the text `later` records a check of, from the tables of
    `earlier` (an earlier check of the same document, its tables built), or UNKNOWN."""
    trail = Trail.between(earlier.kept, later)
    if trail is None:
        return UNKNOWN
    old = trail.back(offset)
    if old is None:
        return UNKNOWN
    decls = earlier.ast.decls
    i = bisect_right(decls, old, key=lambda d: d.span.start) - 1
    if i <= 0 or not isinstance(decls[i], _FRAMED) or not decls[i].span.contains(old):
        return UNKNOWN  # outside declarations, or in the first (its era note)
    decl = decls[i]
    moved = trail.forward(decl.span)  # its doc is in its segment, which `kept` says is reused
    if moved is None or not trail.kept(decl.span) or trail.first(moved.start):
        return UNKNOWN
    names = {decl.name.text} | {
        s.name for s in earlier.symbols.top_level() if s.decl_span == decl.span
    }
    if not all(trail.stable(n) for n in names):
        return UNKNOWN
    ref = earlier.symbols.reference_at(old)
    if ref is not None:
        symbol = ref.symbol
        if symbol.scope is not None:
            if not (decl.span.covers(symbol.span) and decl.span.covers(symbol.decl_span)):
                return UNKNOWN
        elif (
            not trail.stable(symbol.name)
            or (symbol.kind is SymbolKind.LET and symbol.type is None)  # reads diagnostics
            or (
                symbol.decl_span != decl.span
                and not _whole(earlier, trail, _index(decls, symbol.decl_span))
            )
        ):
            return UNKNOWN

    def place(span: Span) -> Span:
        found = trail.forward(span)
        if found is None:
            raise _Untouched
        return found

    try:
        return hover_at(earlier, old, place)
    except _Untouched:
        return UNKNOWN


def _index(decls: tuple[ast.Decl, ...], span: Span) -> int:
    """The index of the declaration at `span` (-1 when none is)."""
    i = bisect_right(decls, span.start, key=lambda d: d.span.start) - 1
    return i if i >= 0 and decls[i].span == span else -1


def _whole(module: CheckedModule, trail: Trail, i: int) -> bool:
    """Whether declaration `i`, with everything between it and its neighbours (its doc
    comment), is in the later text unchanged."""
    decls = module.ast.decls
    if i < 0:
        return False
    start = decls[i - 1].span.end if i > 0 else 0
    end = decls[i + 1].span.start if i + 1 < len(decls) else len(module.source)
    return trail.whole(start, end)
