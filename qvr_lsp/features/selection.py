"""Selection ranges: expand from the name under the cursor along the syntax tree to the file."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types as lsp

from qvr_core.ide.selection import selection_chain

if TYPE_CHECKING:
    from qvr_lsp.analysis.session import Session
    from qvr_lsp.analysis.snapshots import Analysis


async def selection(
    session: Session, params: lsp.SelectionRangeParams, analysis: Analysis
) -> list[lsp.SelectionRange]:
    positions = analysis.positions
    answers = []
    for position in params.positions:
        chain = selection_chain(analysis.checked.ast, positions.offset(position))
        parent: lsp.SelectionRange | None = None
        for span in reversed(chain):
            parent = lsp.SelectionRange(range=positions.range(span), parent=parent)
        assert parent is not None  # the chain always holds the file's span
        answers.append(parent)
    return answers
