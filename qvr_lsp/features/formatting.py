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

from qvr_lsp.analysis.analyzer import is_large
from qvr_lsp.protocol.convert import text_edits
from qvr_lsp.protocol.documents import Document

if TYPE_CHECKING:
    from qvr_lsp.analysis.session import Session

log = logging.getLogger("qvr_lsp")

#: Imported on first use, or once the server is idle after its first diagnostics.
DEFERRED = ("qvr_core.format.diff", "qvr_core.format.formatter")


class Formatter:
    """The session's formatting thread, and the stop flag of each document's latest request."""

    def __init__(self, session: Session) -> None:
        self.session = session
        # one thread: formatting is rare, and a superseded request stops at its next stage
        self.executor = ThreadPoolExecutor(1, thread_name_prefix="qvr-format")
        self.running: dict[str, threading.Event] = {}

    async def edits(self, document: Document, lines: tuple[int, int] | None) -> list[lsp.TextEdit]:
        """The edits that format `document` (its `lines`, or all), as the client takes them;
        none for a large document, a file that does not parse or a superseded request."""
        uri = document.uri
        if is_large(document.text):
            log.info("%s: large document, not formatted (diagnostics only)", uri)
            return []
        stop = threading.Event()
        if (older := self.running.get(uri)) is not None:
            older.set()
        self.running[uri] = stop
        documents = self.session.server.documents

        def stale() -> bool:
            now = documents.get(uri)
            return stop.is_set() or now is None or now.seq != document.seq

        from qvr_core.format.formatter import Cancelled

        loop = asyncio.get_running_loop()
        job = loop.run_in_executor(self.executor, _compute, document, lines, stale)
        try:
            edits = await job
        except Cancelled:
            log.info("%s: formatting of version %s superseded", uri, document.version)
            return []
        except asyncio.CancelledError:
            stop.set()  # the client cancelled: the thread stops at its next stage
            raise
        finally:
            if self.running.get(uri) is stop:
                del self.running[uri]
        if stale():
            log.info("%s: formatting of version %s superseded", uri, document.version)
            return []
        return edits


def _compute(
    document: Document, lines: tuple[int, int] | None, stale: Callable[[], bool]
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


async def formatting(
    session: Session, params: lsp.DocumentFormattingParams, document: Document
) -> list[lsp.TextEdit]:
    return await session.own(Formatter).edits(document, None)


async def range_formatting(
    session: Session, params: lsp.DocumentRangeFormattingParams, document: Document
) -> list[lsp.TextEdit]:
    first, end = params.range.start.line, params.range.end
    # A range ending at column 0 stops before that line (a selection of whole lines).
    last = end.line - 1 if end.character == 0 and end.line > first else end.line
    return await session.own(Formatter).edits(document, (first, last))
