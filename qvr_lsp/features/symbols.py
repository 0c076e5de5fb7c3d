"""Document symbols: `qvr_core.ide.outline` computes the tree, this converts it.

Clients without hierarchical support get the same symbols flat, with the
program as container.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from lsprotocol import types as lsp

from qvr_core.check.module import CheckedModule, SymbolKind
from qvr_core.ide.outline import RETURN, OutlineItem, outline
from qvr_core.text.span import Span
from qvr_lsp import capabilities
from qvr_lsp.answers import Serialized
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


#: A `DocumentSymbol` or `SymbolInformation` as the protocol's JSON (what pygls's
#: converter makes of the class). Built directly: the 14,000 symbols of a 5,000-line file
#: as the protocol's classes, converted and dumped, took a third longer.
Json = dict[str, Any]


def document_symbols(module: CheckedModule, positions: TextPositions) -> list[Json]:
    """The hierarchical outline of a checked module, as the protocol's `DocumentSymbol`s."""
    return [_symbol(item, positions.line_character) for item in outline(module)]


def _symbol(item: OutlineItem, at: Callable[[int], tuple[int, int]]) -> Json:
    symbol: Json = {
        "name": item.name,
        "kind": SYMBOL_KIND[item.kind].value,
        "range": _range(item.span, at),
        "selectionRange": _range(item.name_span, at),
    }
    if item.detail is not None:
        symbol["detail"] = item.detail
    if item.children is not None:
        symbol["children"] = [_symbol(c, at) for c in item.children]
    return symbol


def _range(span: Span, at: Callable[[int], tuple[int, int]]) -> Json:
    (start_line, start), (end_line, end) = at(span.start), at(span.end)
    return {
        "start": {"line": start_line, "character": start},
        "end": {"line": end_line, "character": end},
    }


def flatten(uri: str, nodes: list[Json], container: str | None = None) -> list[Json]:
    """The tree as `SymbolInformation`s for clients without hierarchical support."""
    out: list[Json] = []
    for n in nodes:
        symbol: Json = {
            "name": n["name"],
            "kind": n["kind"],
            "location": {"uri": uri, "range": n["range"]},
        }
        if container is not None:
            symbol["containerName"] = container
        out.append(symbol)
        out += flatten(uri, n.get("children", []), n["name"])
    return out


def register(server: QvrLanguageServer) -> None:
    @server.feature(lsp.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
    @guarded(list)
    async def document_symbol(params: lsp.DocumentSymbolParams) -> Serialized | list[Any]:
        uri = params.text_document.uri
        await server.quiet(uri)
        snap = await server.settled(uri)
        analysis = snap.structural() if snap is not None else None
        if analysis is None or analysis.module is None:
            return []
        module, positions = analysis.module, analysis.positions
        hierarchical = capabilities.hierarchical_symbols(server.caps)

        def answer() -> Serialized:
            nodes = document_symbols(module, positions)
            return Serialized(json.dumps(nodes if hierarchical else flatten(uri, nodes)))

        # off the event loop, JSON included: a large file has thousands of declarations
        # and steps (answers.py)
        return await asyncio.to_thread(answer)
