"""Hover over the protocol: `qvr_core.ide.hover` computes the text, this converts it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types as lsp

from qvr_core.ide.hover import hover_at
from qvr_lsp import capabilities
from qvr_lsp.guard import guarded

if TYPE_CHECKING:
    from qvr_lsp.server import QvrLanguageServer


def register(server: QvrLanguageServer) -> None:
    @server.feature(lsp.TEXT_DOCUMENT_HOVER)
    @guarded()
    async def hover(params: lsp.HoverParams) -> lsp.Hover | None:
        snap = await server.settled(params.text_document.uri)
        if snap is None:
            return None
        markdown = capabilities.markdown_hover(server.caps)
        for analysis in snap.for_queries():
            offset = analysis.positions.offset(params.position)
            found = hover_at(analysis.checked, offset)
            if found is not None:
                return lsp.Hover(
                    contents=capabilities.markup(markdown, found.markdown, found.plain),
                    range=analysis.positions.range(found.span),
                )
        return None
