"""Document and range formatting: `qvr_core.format`, the same formatter as `qvr fmt`.

Works on the document's current text (no analysis needed) and answers with
line edits, so the editor keeps the cursor and folds. A file that does not
parse is not formatted (no edits) and the reason is logged.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from lsprotocol import types as lsp

from qvr_core.format.diff import diff_edits
from qvr_core.format.formatter import format_text
from qvr_lsp.features._current import text_edits
from qvr_lsp.guard import guarded

if TYPE_CHECKING:
    from qvr_lsp.server import QvrLanguageServer

log = logging.getLogger("qvr_lsp")


def register(server: QvrLanguageServer) -> None:
    def edits_for(uri: str, lines: tuple[int, int] | None) -> list[lsp.TextEdit]:
        snap = server.snapshot(uri)
        if snap is None:
            return []
        document = snap.document
        result = format_text(document.text)
        if not result.ok:
            log.info("%s: %s", uri, result.refused)
            return []
        return text_edits(diff_edits(document.text, result.text, lines), document.positions)

    @server.feature(lsp.TEXT_DOCUMENT_FORMATTING)
    @guarded(list)
    def formatting(params: lsp.DocumentFormattingParams) -> list[lsp.TextEdit]:
        return edits_for(params.text_document.uri, None)

    @server.feature(lsp.TEXT_DOCUMENT_RANGE_FORMATTING)
    @guarded(list)
    def range_formatting(params: lsp.DocumentRangeFormattingParams) -> list[lsp.TextEdit]:
        first, end = params.range.start.line, params.range.end
        # A range ending at column 0 stops before that line (a selection of whole lines).
        last = end.line - 1 if end.character == 0 and end.line > first else end.line
        return edits_for(params.text_document.uri, (first, last))
