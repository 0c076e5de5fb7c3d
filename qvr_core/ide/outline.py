"""The outline: objects, morphisms, lets and programs with their steps, as a tree.

The tree follows the syntax tree's declarations (so a duplicate declaration
still shows where it is) and takes each name's detail from the symbol
table. Plain values with spans; `qvr_lsp/features/symbols.py` converts them
to document symbols (a tree, or flat for clients without hierarchy).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final, Literal

from qvr_core.check.module import CheckedModule, Symbol, SymbolKind
from qvr_core.check.types import ObjectType
from qvr_core.syntax import ast
from qvr_core.text.span import Span

#: What a declaration of each kind shows as (exports declare nothing).
DECL_KIND: dict[type, SymbolKind] = {
    ast.ObjectDecl: SymbolKind.OBJECT,
    ast.MorphismDecl: SymbolKind.MORPHISM,
    ast.LetDecl: SymbolKind.LET,
    ast.ProgramDecl: SymbolKind.PROGRAM,
    ast.OtherDecl: SymbolKind.DECLARATION,
}

#: The kind of a program's `return` item, which names no symbol.
RETURN: Final = "return"


@dataclass(frozen=True)
class OutlineItem:
    """One entry: `span` is all of it (it contains `name_span`), `detail` its type."""

    name: str
    kind: SymbolKind | Literal["return"]
    span: Span
    name_span: Span
    detail: str | None
    children: tuple[OutlineItem, ...] | None = None


def outline(module: CheckedModule) -> list[OutlineItem]:
    """The hierarchical outline of a checked module."""
    table = {(s.name, s.scope, s.span): s for s in module.symbols.symbols}
    scoped: dict[str, list[Symbol]] = {}  # one pass: a file has hundreds of programs
    for s in module.symbols.symbols:
        if s.scope is not None:
            scoped.setdefault(s.scope, []).append(s)
    out: list[OutlineItem] = []
    for decl in module.ast.decls:
        kind = DECL_KIND.get(type(decl))
        if kind is None or (isinstance(decl, ast.OtherDecl) and not decl.names):
            continue  # exports and pragmas declare nothing
        name = decl.name
        symbol = table.get((name.text, None, name.span))
        children = (
            _steps(decl, scoped.get(name.text, ())) if isinstance(decl, ast.ProgramDecl) else None
        )
        out.append(_item(name.text, kind, symbol, decl.span, name.span, children))
    return out


def _steps(decl: ast.ProgramDecl, symbols: Iterable[Symbol]) -> tuple[OutlineItem, ...]:
    """A program's parameters and steps (`symbols`: those of its scope), in source order."""
    locals_ = sorted((s for s in symbols if decl.span.covers(s.span)), key=lambda s: s.span.start)
    items = [_item(s.name, s.kind, s, s.decl_span, s.span) for s in locals_]
    for step in decl.steps:
        if isinstance(step, ast.ReturnStep):
            returned = ", ".join(v.text for v in step.values)
            items.append(OutlineItem(RETURN, RETURN, step.span, step.span, returned))
    return tuple(sorted(items, key=lambda item: item.name_span.start))


def _item(
    name: str,
    kind: SymbolKind,
    symbol: Symbol | None,
    whole: Span,
    name_span: Span,
    children: tuple[OutlineItem, ...] | None = None,
) -> OutlineItem:
    span = whole if whole.covers(name_span) else name_span
    label = type_label(symbol.type) if symbol is not None else None
    if kind is SymbolKind.DATA:  # bound from the data at fit time: the outline says so
        label = f"data: {label}" if label else "data"
    detail = label or (symbol.detail if symbol is not None else None)
    return OutlineItem(name or "?", kind, span, name_span, detail, children)


def type_label(t: object) -> str | None:
    """A type as the user writes it: `[Token] -> State`, `FinSet 256` for a base object."""
    if isinstance(t, ObjectType):
        return t.describe()
    return getattr(t, "label", None)
