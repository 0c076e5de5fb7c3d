"""Selection ranges: expand from the name under the cursor along the syntax tree to the file."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types as lsp

from qvr_core.ide.selection import selection_chain
from qvr_lsp.features._current import current_analysis
from qvr_lsp.guard import guarded

if TYPE_CHECKING:
    from qvr_lsp.server import QvrLanguageServer


def register(server: QvrLanguageServer) -> None:
    @server.feature(lsp.TEXT_DOCUMENT_SELECTION_RANGE)
    @guarded(list)
    async def selection(params: lsp.SelectionRangeParams) -> list[lsp.SelectionRange]:
        analysis = await current_analysis(server, params.text_document.uri)
        if analysis is None:
            return []
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
