"""Hover over the protocol: `qvr_core.ide.hover` computes the text, this converts it.

Right after an edit the new text's tables are still being built; a hover on
a declaration the edit left alone is answered from the last tables that were
built (`qvr_core.ide.carried`, which answers only where they give the new
text's very answer), and any other waits for the new tables. That holds for the
text the hover was sent for, whatever was typed after it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types as lsp

from qvr_lsp import capabilities
from qvr_lsp.analysis import Snapshot
from qvr_lsp.guard import guarded

if TYPE_CHECKING:
    from qvr_core.ide.carried import Unknown
    from qvr_core.ide.hover import HoverText
    from qvr_lsp.server import QvrLanguageServer

#: Imported on first use, or once the server is idle after its first diagnostics.
DEFERRED = ("qvr_core.ide.hover", "qvr_core.ide.carried")


def register(server: QvrLanguageServer) -> None:
    @server.feature(lsp.TEXT_DOCUMENT_HOVER)
    @guarded()
    async def hover(params: lsp.HoverParams) -> lsp.Hover | None:
        from qvr_core.ide.carried import UNKNOWN
        from qvr_core.ide.hover import hover_at

        uri = params.text_document.uri
        markdown = capabilities.markdown_hover(server.caps)
        sent_for = server.snapshot(uri)  # the text the position is in
        snap = await server.checked(uri)
        if snap is None or sent_for is None:
            return None
        carried = carried_answer(snap, params.position, sent_for.document.seq)
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


def carried_answer(
    snap: Snapshot, position: lsp.Position, sent_for: int
) -> tuple[HoverText, lsp.Range] | Unknown | None:
    """The hover of the text the request was sent for (`sent_for`, a `Document.seq`, or
    a newer one) while its tables are pending, from the last built ones, or UNKNOWN (wait
    for the new tables).

    Edits that came after the request do not matter: under a flood of edits the
    document has always moved on by the time the request's text is checked, and
    waiting for that text's tables cost a build (some 0.3 s of a 5,000-line file).
    """
    from qvr_core.ide.carried import UNKNOWN, carried_hover

    newest, earlier = snap.newest, snap.ready
    if (
        newest is None
        or newest.seq < sent_for
        or newest.module is None
        or newest.ready
        or earlier is None
        or earlier.module is None
        or earlier.generation != newest.generation
    ):
        return UNKNOWN
    found = carried_hover(earlier.module, newest.module.kept, newest.positions.offset(position))
    if found is None and not newest.parsed:
        return UNKNOWN  # the last text that parsed may know more (`Snapshot.for_queries`)
    if found is None or found is UNKNOWN:
        return found
    return found, newest.positions.range(found.span)


def _hover(markdown: bool, found: HoverText, rng: lsp.Range) -> lsp.Hover:
    return lsp.Hover(contents=capabilities.markup(markdown, found.markdown, found.plain), range=rng)
