"""Hover over the protocol: `qvr_core.ide.hover` computes the text, this converts it.

Right after an edit the new text's tables are still being built; the snapshot answers a
hover on a declaration the edit left alone from the last tables that were built
(`Snapshot.carried` with `qvr_core.ide.carried`), and any other waits for the new tables.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types as lsp

from qvr_lsp import capabilities
from qvr_lsp.guard import guarded

if TYPE_CHECKING:
    from qvr_core.ide.hover import HoverText
    from qvr_lsp.server import QvrLanguageServer

#: Imported on first use, or once the server is idle after its first diagnostics.
DEFERRED = ("qvr_core.ide.hover", "qvr_core.ide.carried")


def register(server: QvrLanguageServer) -> None:
    @server.feature(lsp.TEXT_DOCUMENT_HOVER)
    @guarded()
    async def hover(params: lsp.HoverParams) -> lsp.Hover | None:
        from qvr_core.ide.carried import UNKNOWN, carried_hover
        from qvr_core.ide.hover import hover_at

        uri = params.text_document.uri
        markdown = capabilities.markdown_hover(server.caps)
        sent_for = server.snapshot(uri)  # the text the position is in
        snap = await server.checked(uri)
        if snap is None or sent_for is None:
            return None
        carried = snap.carried(params.position, sent_for.document.seq, carried_hover)
        if carried is not UNKNOWN:
            return None if carried is None else _hover(markdown, *carried)
        snap = await server.settled(uri)
        if snap is None:
            return None
        for analysis in snap.for_queries():
            offset = analysis.positions.offset(params.position)
            found = hover_at(analysis.checked, offset)
            if found is not None:
                return _hover(markdown, found, analysis.positions.range(found.span))
        return None


def _hover(markdown: bool, found: HoverText, rng: lsp.Range) -> lsp.Hover:
    return lsp.Hover(contents=capabilities.markup(markdown, found.markdown, found.plain), range=rng)
