"""Document symbols: `qvr_core.ide.outline` computes the tree, this converts it.

Clients without hierarchical support get the same symbols flat, with the
program as container.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from lsprotocol import types as lsp

from qvr_core.check.module import CheckedModule, SymbolKind
from qvr_core.ide.outline import RETURN, OutlineItem, outline
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
    SymbolKind.DATA: lsp.SymbolKind.Field,
    SymbolKind.DECLARATION: lsp.SymbolKind.Namespace,
    RETURN: lsp.SymbolKind.Key,
}


def document_symbols(module: CheckedModule, positions: TextPositions) -> list[lsp.DocumentSymbol]:
    """The hierarchical outline of a checked module, as the protocol's symbols."""
    return [_symbol(item, positions) for item in outline(module)]


def _symbol(item: OutlineItem, positions: TextPositions) -> lsp.DocumentSymbol:
    children = item.children
    return lsp.DocumentSymbol(
        name=item.name,
        kind=SYMBOL_KIND[item.kind],
        range=positions.range(item.span),
        selection_range=positions.range(item.name_span),
        detail=item.detail,
        children=None if children is None else [_symbol(c, positions) for c in children],
    )


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
