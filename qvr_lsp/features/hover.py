"""Hover over the protocol: `qvr_core.ide.hover` computes the text, this converts it.

Its entry names the `CARRIED` kind: right after an edit a hover on a declaration the
edit left alone is answered from the last built tables (`qvr_core.ide.carried` says
where they carry the very answer), anything else after the new tables.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types as lsp

from qvr_lsp.protocol import capabilities

if TYPE_CHECKING:
    from qvr_lsp.analysis.kinds import Carrying
    from qvr_lsp.analysis.session import Session

#: Imported on first use, or once the server is idle after its first diagnostics.
DEFERRED = ("qvr_core.ide.hover", "qvr_core.ide.carried")


async def hover(session: Session, params: lsp.HoverParams, at: Carrying) -> lsp.Hover | None:
    from qvr_core.ide.carried import carried_hover
    from qvr_core.ide.hover import hover_at

    found = await at.answer(hover_at, carried_hover)
    if found is None:
        return None
    text, rng = found
    markdown = capabilities.markdown_hover(session.server.caps)
    return lsp.Hover(contents=capabilities.markup(markdown, text.markdown, text.plain), range=rng)
