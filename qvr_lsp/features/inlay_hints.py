"""Inlay hints: types after `let` names and sample sites, fan directions, dimension matches."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types as lsp

if TYPE_CHECKING:
    from qvr_lsp.analysis.session import Session
    from qvr_lsp.analysis.snapshots import Analysis

#: Imported on first use, or once the server is idle after its first diagnostics.
DEFERRED = ("qvr_core.ide.inlay",)

#: The protocol's kind of each kind of hint (`qvr_core.ide.inlay.HintKind`, by value).
KIND = {"type": lsp.InlayHintKind.Type, "parameter": lsp.InlayHintKind.Parameter}


async def hints(
    session: Session, params: lsp.InlayHintParams, analysis: Analysis
) -> list[lsp.InlayHint]:
    from qvr_core.ide.inlay import inlay_hints

    positions = analysis.positions
    start, end = positions.offsets(params.range)
    return [
        lsp.InlayHint(
            position=positions.position(h.offset),
            label=h.label,
            kind=KIND[h.kind.value],
            tooltip=h.tooltip or None,
            padding_left=h.pad_left or None,
            padding_right=h.pad_right or None,
        )
        for h in inlay_hints(analysis.checked, start, end)
    ]
