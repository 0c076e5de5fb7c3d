"""Folding ranges: programs, multi-line declarations and comment blocks."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types as lsp
from pygls.capabilities import get_capability

from qvr_core.ide.folding import FoldKind, folding_ranges

if TYPE_CHECKING:
    from qvr_lsp.analysis.session import Session
    from qvr_lsp.analysis.snapshots import Analysis

KIND = {
    FoldKind.COMMENT: lsp.FoldingRangeKind.Comment,
    FoldKind.REGION: lsp.FoldingRangeKind.Region,
}


async def folding(
    session: Session, params: lsp.FoldingRangeParams, analysis: Analysis
) -> list[lsp.FoldingRange]:
    ranges = [
        lsp.FoldingRange(start_line=r.start_line, end_line=r.end_line, kind=KIND[r.kind])
        for r in folding_ranges(analysis.checked.ast, analysis.text)
    ]
    return ranges[: _limit(session.server.caps)]


def _limit(caps: lsp.ClientCapabilities | None) -> int | None:
    """How many ranges the client wants at most (None: no limit)."""
    if caps is None:
        return None
    return get_capability(caps, "text_document.folding_range.range_limit", None) or None
