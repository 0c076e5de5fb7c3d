"""Definition, references and document highlight: scope-aware, from the symbol table.

The core resolves every name to a `Symbol` whose `scope` is its program, so a
program's local `h` and another program's `h` are different symbols and
never answer for each other.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types as lsp

from qvr_core.check.module import Reference
from qvr_lsp.analysis import Analysis
from qvr_lsp.guard import guarded

if TYPE_CHECKING:
    from qvr_lsp.server import QvrLanguageServer


async def reference_under_cursor(
    server: QvrLanguageServer, uri: str, position: lsp.Position
) -> tuple[Analysis, Reference] | None:
    """The analysis that knows the name at `position`, and that name's reference."""
    snap = await server.settled(uri)
    if snap is None:
        return None
    for analysis in snap.for_queries():
        ref = analysis.checked.symbols.reference_at(analysis.positions.offset(position))
        if ref is not None:
            return analysis, ref
    return None


def register(server: QvrLanguageServer) -> None:
    @server.feature(lsp.TEXT_DOCUMENT_DEFINITION)
    @guarded(list)
    async def definition(params: lsp.DefinitionParams) -> list[lsp.Location]:
        found = await reference_under_cursor(server, params.text_document.uri, params.position)
        if found is None:
            return []
        analysis, ref = found
        return [lsp.Location(analysis.uri, analysis.positions.range(ref.symbol.span))]

    @server.feature(lsp.TEXT_DOCUMENT_REFERENCES)
    @guarded(list)
    async def references(params: lsp.ReferenceParams) -> list[lsp.Location]:
        found = await reference_under_cursor(server, params.text_document.uri, params.position)
        if found is None:
            return []
        analysis, ref = found
        include = params.context.include_declaration
        uses = analysis.checked.symbols.references_to(ref.symbol, include)
        return [lsp.Location(analysis.uri, analysis.positions.range(r.span)) for r in uses]

    write, read = lsp.DocumentHighlightKind.Write, lsp.DocumentHighlightKind.Read

    @server.feature(lsp.TEXT_DOCUMENT_DOCUMENT_HIGHLIGHT)
    @guarded(list)
    async def highlight(params: lsp.DocumentHighlightParams) -> list[lsp.DocumentHighlight]:
        found = await reference_under_cursor(server, params.text_document.uri, params.position)
        if found is None:
            return []
        analysis, ref = found
        uses = analysis.checked.symbols.references_to(ref.symbol)
        return [
            lsp.DocumentHighlight(
                analysis.positions.range(r.span),
                write if r.is_definition else read,
            )
            for r in uses
        ]
