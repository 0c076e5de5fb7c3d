"""Document and range formatting: `qvr_core.format`, the same formatter as `qvr fmt`.

Works on the document's current text (no analysis needed) and answers with
line edits, so the editor keeps the cursor and folds. A file that does not
parse is not formatted (no edits) and the reason is logged.

Formatting a large pasted file takes a noticeable fraction of a second, so
it runs in its own thread, never on the event loop: other requests (a hover
in another file) are answered meanwhile. It stops early, answering no
edits, when the client cancels it, when the document changes (its edits
would be against a stale text) or when a newer formatting request for the
same document arrives.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from lsprotocol import types as lsp

from qvr_lsp.analysis import is_large
from qvr_lsp.documents import Document
from qvr_lsp.features._current import text_edits
from qvr_lsp.guard import guarded

if TYPE_CHECKING:
    from qvr_lsp.server import QvrLanguageServer

log = logging.getLogger("qvr_lsp")

#: Imported on first use, or once the server is idle after its first diagnostics.
DEFERRED = ("qvr_core.format.diff", "qvr_core.format.formatter")


def register(server: QvrLanguageServer) -> None:
    # one thread: formatting is rare, and a superseded request stops at its next stage
    executor = ThreadPoolExecutor(1, thread_name_prefix="qvr-format")
    running: dict[str, threading.Event] = {}  # uri -> the stop flag of its latest request

    def compute(
        document: Document,
        lines: tuple[int, int] | None,
        stale: Callable[[], bool],
    ) -> list[lsp.TextEdit]:
        """In the formatting thread: the edits as the client takes them."""
        from qvr_core.format.diff import diff_edits
        from qvr_core.format.formatter import Cancelled, format_text

        text = document.text
        result = format_text(text, stale)
        if not result.ok:
            log.info("%s: %s", document.uri, result.refused)
            return []
        if stale():
            raise Cancelled
        # the positions table too is built here, not on the event loop
        return text_edits(diff_edits(text, result.text, lines), document.positions)

    async def edits_for(uri: str, lines: tuple[int, int] | None) -> list[lsp.TextEdit]:
        snap = server.snapshot(uri)
        if snap is None:
            return []
        document = snap.document
        if is_large(document.text):
            log.info("%s: large document, not formatted (diagnostics only)", uri)
            return []
        stop = threading.Event()
        if (older := running.get(uri)) is not None:
            older.set()
        running[uri] = stop

        def stale() -> bool:
            now = server.documents.get(uri)
            return stop.is_set() or now is None or now.seq != document.seq

        from qvr_core.format.formatter import Cancelled

        loop = asyncio.get_running_loop()
        job = loop.run_in_executor(executor, compute, document, lines, stale)
        try:
            edits = await job
        except Cancelled:
            log.info("%s: formatting of version %s superseded", uri, document.version)
            return []
        except asyncio.CancelledError:
            stop.set()  # the client cancelled: the thread stops at its next stage
            raise
        finally:
            if running.get(uri) is stop:
                del running[uri]
        if stale():
            log.info("%s: formatting of version %s superseded", uri, document.version)
            return []
        return edits

    @server.feature(lsp.TEXT_DOCUMENT_FORMATTING)
    @guarded(list)
    async def formatting(params: lsp.DocumentFormattingParams) -> list[lsp.TextEdit]:
        return await edits_for(params.text_document.uri, None)

    @server.feature(lsp.TEXT_DOCUMENT_RANGE_FORMATTING)
    @guarded(list)
    async def range_formatting(params: lsp.DocumentRangeFormattingParams) -> list[lsp.TextEdit]:
        first, end = params.range.start.line, params.range.end
        # A range ending at column 0 stops before that line (a selection of whole lines).
        last = end.line - 1 if end.character == 0 and end.line > first else end.line
        return await edits_for(params.text_document.uri, (first, last))
