"""Document symbols: objects, morphisms, lets and programs with their steps, as a tree.

The tree follows the syntax tree's declarations (so a duplicate declaration
still shows where it is) and takes each name's detail from the symbol
table. Clients without hierarchical support get the same symbols flat,
with the program as container.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from lsprotocol import types as lsp

from qvr_core.check.module import CheckedModule, Symbol, SymbolKind
from qvr_core.check.types import ObjectType
from qvr_core.syntax import ast
from qvr_core.syntax.span import Span
from qvr_lsp import capabilities
from qvr_lsp.convert import TextPositions
from qvr_lsp.guard import guarded

if TYPE_CHECKING:
    from qvr_lsp.server import QvrLanguageServer

SYMBOL_KIND = {
    SymbolKind.OBJECT: lsp.SymbolKind.Struct,
    SymbolKind.MORPHISM: lsp.SymbolKind.Function,
    SymbolKind.LET: lsp.SymbolKind.Function,
    SymbolKind.PROGRAM: lsp.SymbolKind.Module,
    SymbolKind.PARAM: lsp.SymbolKind.TypeParameter,
    SymbolKind.SAMPLE: lsp.SymbolKind.Variable,
    SymbolKind.OBSERVE: lsp.SymbolKind.Event,
    SymbolKind.LOCAL: lsp.SymbolKind.Variable,
    SymbolKind.DECLARATION: lsp.SymbolKind.Namespace,
}
DECL_KIND = {
    ast.ObjectDecl: SymbolKind.OBJECT,
    ast.MorphismDecl: SymbolKind.MORPHISM,
    ast.LetDecl: SymbolKind.LET,
    ast.ProgramDecl: SymbolKind.PROGRAM,
    ast.OtherDecl: SymbolKind.DECLARATION,
}


def document_symbols(module: CheckedModule, positions: TextPositions) -> list[lsp.DocumentSymbol]:
    """The hierarchical outline of a checked module."""
    table = {(s.name, s.scope, s.span): s for s in module.symbols.symbols}
    out: list[lsp.DocumentSymbol] = []
    for decl in module.ast.decls:
        kind = DECL_KIND.get(type(decl))
        if kind is None or (isinstance(decl, ast.OtherDecl) and not decl.names):
            continue  # exports and pragmas declare nothing
        name = decl.name
        symbol = table.get((name.text, None, name.span))
        children = _steps(decl, module, positions) if isinstance(decl, ast.ProgramDecl) else None
        out.append(_node(name.text, kind, symbol, decl.span, name.span, positions, children))
    return out


def _steps(
    decl: ast.ProgramDecl, module: CheckedModule, positions: TextPositions
) -> list[lsp.DocumentSymbol]:
    """A program's parameters and steps, in source order."""
    program = decl.name.text
    locals_ = sorted(
        (s for s in module.symbols.symbols if s.scope == program and decl.span.covers(s.span)),
        key=lambda s: s.span.start,
    )
    nodes = [
        (s.span.start, _node(s.name, s.kind, s, s.decl_span, s.span, positions)) for s in locals_
    ]
    for step in decl.steps:
        if isinstance(step, ast.ReturnStep):
            returned = ", ".join(v.text for v in step.values)
            node = lsp.DocumentSymbol(
                name="return",
                kind=lsp.SymbolKind.Key,
                range=positions.range(step.span),
                selection_range=positions.range(step.span),
                detail=returned,
            )
            nodes.append((step.span.start, node))
    return [n for _, n in sorted(nodes, key=lambda pair: pair[0])]


def _node(
    name: str,
    kind: SymbolKind,
    symbol: Symbol | None,
    whole: Span,
    name_span: Span,
    positions: TextPositions,
    children: list[lsp.DocumentSymbol] | None = None,
) -> lsp.DocumentSymbol:
    selection = positions.range(name_span)
    rng = positions.range(whole)
    if not _contains(rng, selection):
        rng = selection
    label = type_label(symbol.type) if symbol is not None else None
    return lsp.DocumentSymbol(
        name=name or "?",
        kind=SYMBOL_KIND[kind],
        range=rng,
        selection_range=selection,
        detail=label or (symbol.detail if symbol is not None else None),
        children=children,
    )


def type_label(t: object) -> str | None:
    """A type as the user writes it: `[Token] -> State`, `FinSet 256` for a base object."""
    if isinstance(t, ObjectType):
        return t.describe()
    return getattr(t, "label", None)


def _contains(outer: lsp.Range, inner: lsp.Range) -> bool:
    def key(p: lsp.Position) -> tuple[int, int]:
        return p.line, p.character

    return key(outer.start) <= key(inner.start) and key(inner.end) <= key(outer.end)


def flatten(
    uri: str, nodes: list[lsp.DocumentSymbol], container: str | None = None
) -> list[lsp.SymbolInformation]:
    """The tree as `SymbolInformation`s for clients without hierarchical support."""
    out: list[lsp.SymbolInformation] = []
    for n in nodes:
        location = lsp.Location(uri, n.range)
        out.append(
            lsp.SymbolInformation(
                name=n.name, kind=n.kind, location=location, container_name=container
            )
        )
        out += flatten(uri, list(n.children or []), n.name)
    return out


def register(server: QvrLanguageServer) -> None:
    @server.feature(lsp.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
    @guarded(list)
    async def document_symbol(
        params: lsp.DocumentSymbolParams,
    ) -> list[lsp.DocumentSymbol] | list[lsp.SymbolInformation]:
        uri = params.text_document.uri
        await server.quiet(uri)
        snap = await server.settled(uri)
        analysis = snap.structural() if snap is not None else None
        if analysis is None or analysis.module is None:
            return []
        # off the event loop: a large file has thousands of declarations and steps
        nodes = await asyncio.to_thread(document_symbols, analysis.module, analysis.positions)
        if capabilities.hierarchical_symbols(server.caps):
            return nodes
        return flatten(uri, nodes)
