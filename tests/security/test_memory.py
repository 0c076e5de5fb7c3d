"""Memory that must come back without the cycle collector (the server runs it rarely).

A document closed while its analysis runs used to stay in memory until the
next full collection (some 28 MB per 5,000-line file); every notification
left a Future behind in pygls's table of requests (2.3 KB per edit).
"""

from __future__ import annotations

import asyncio
import gc
import sys
import weakref
from pathlib import Path

from lsprotocol import types as lsp

from qvr_lsp.analysis.analyzer import Analyzer
from qvr_lsp.app import build
from qvr_lsp.protocol.documents import DocumentStore

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from generated import generate


async def test_a_document_closed_mid_analysis_is_freed_without_the_collector():
    store = DocumentStore()
    analyzer = Analyzer(store, debounce=0.01, build_delay=0.0)
    text = generate(1000)
    gc.disable()
    try:
        uri = "file:///closed.qvr"
        store.open(uri, text, 1)
        analyzer.schedule(uri, immediate=True)
        await analyzer.settled(uri, timeout=60)
        entry = analyzer._entries[uri]
        checker, analysis = weakref.ref(entry.checker), weakref.ref(entry.newest)
        for version in range(2, 6):  # edits, so an analysis is running when the file closes
            store.change(uri, version, [lsp.TextDocumentContentChangeWholeDocument(text + "\n")])
            analyzer.schedule(uri)
            await asyncio.sleep(0.005)
        del entry
        store.close(uri)
        analyzer.close(uri)
        for _ in range(200):  # the analysis thread finishes its text, then lets go of it
            await asyncio.sleep(0.02)
            if checker() is None and analysis() is None:
                break
        assert checker() is None, "the closed document's checker is still alive"
        assert analysis() is None, "the closed document's analysis is still alive"
    finally:
        gc.enable()
        analyzer.shutdown()


class _Sink:
    def write(self, data: bytes) -> None:
        pass

    def close(self) -> None:
        pass


async def test_notifications_leave_nothing_behind_in_the_request_table():
    session = build()
    protocol = session.server.protocol
    protocol.set_writer(_Sink())
    uri = "file:///edited.qvr"
    protocol._handle_notification(
        lsp.TEXT_DOCUMENT_DID_OPEN,
        lsp.DidOpenTextDocumentParams(lsp.TextDocumentItem(uri, "qvr", 1, "object A : Real 2\n")),
    )
    for version in range(2, 202):
        protocol._handle_notification(
            lsp.TEXT_DOCUMENT_DID_CHANGE,
            lsp.DidChangeTextDocumentParams(
                lsp.VersionedTextDocumentIdentifier(version, uri),
                [
                    lsp.TextDocumentContentChangePartial(
                        lsp.Range(lsp.Position(0, 0), lsp.Position(0, 0)), ""
                    )
                ],
            ),
        )
    protocol._handle_notification(
        lsp.TEXT_DOCUMENT_DID_CLOSE, lsp.DidCloseTextDocumentParams(lsp.TextDocumentIdentifier(uri))
    )
    await asyncio.sleep(0.1)
    assert len(protocol._request_futures) == 0
    session.analyzer.shutdown()
