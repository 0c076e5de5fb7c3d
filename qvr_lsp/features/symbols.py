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
from qvr_lsp.protocol import capabilities
from qvr_lsp.protocol.answers import Serialized
from qvr_lsp.protocol.convert import TextPositions

if TYPE_CHECKING:
    from qvr_lsp.analysis.session import Session
    from qvr_lsp.analysis.snapshots import Analysis

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


async def document_symbol(
    session: Session, params: lsp.DocumentSymbolParams, analysis: Analysis
) -> Serialized:
    uri = params.text_document.uri
    module, positions = analysis.checked, analysis.positions
    hierarchical = capabilities.hierarchical_symbols(session.server.caps)

    def answer() -> Serialized:
        nodes = document_symbols(module, positions)
        return Serialized(json.dumps(nodes if hierarchical else flatten(uri, nodes)))

    # off the event loop, JSON included: a large file has thousands of declarations
    # and steps (answers.py)
    return await asyncio.to_thread(answer)
