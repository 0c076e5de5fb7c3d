"""Folding ranges: programs, multi-line declarations and comment blocks."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types as lsp
from pygls.capabilities import get_capability

from qvr_core.ide.folding import FoldKind, folding_ranges
from qvr_lsp.features._current import current_analysis
from qvr_lsp.guard import guarded

if TYPE_CHECKING:
    from qvr_lsp.server import QvrLanguageServer

KIND = {
    FoldKind.COMMENT: lsp.FoldingRangeKind.Comment,
    FoldKind.REGION: lsp.FoldingRangeKind.Region,
}


def register(server: QvrLanguageServer) -> None:
    @server.feature(lsp.TEXT_DOCUMENT_FOLDING_RANGE)
    @guarded(list)
    async def folding(params: lsp.FoldingRangeParams) -> list[lsp.FoldingRange]:
        analysis = await current_analysis(server, params.text_document.uri)
        if analysis is None:
            return []
        module = analysis.checked
        ranges = [
            lsp.FoldingRange(start_line=r.start_line, end_line=r.end_line, kind=KIND[r.kind])
            for r in folding_ranges(module.ast, analysis.text)
        ]
        return ranges[: _limit(server.caps)]


def _limit(caps: lsp.ClientCapabilities | None) -> int | None:
    """How many ranges the client wants at most (None: no limit)."""
    if caps is None:
        return None
    return get_capability(caps, "text_document.folding_range.range_limit", None) or None
