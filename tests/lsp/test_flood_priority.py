"""Under an edit flood, the work a request waits for comes first (#46).

`bench/server_flood.py flood` still had answers over a second: a hover whose
text was checked could not use the last built tables once the next edit had
come (under a flood it always has), so it waited for a build of its own; and
while a request waited for a build, a check of each newer text started
whenever the edits paused for the debounce, taking the interpreter from the
build the request waited for. These tests check the order of events (the
timings are the bench's).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator

import pytest
from lsprotocol import types as lsp

from qvr_core.check.module import PendingModule
from qvr_lsp.analysis import analyzer as analysis_module
from qvr_lsp.analysis.analyzer import Analyzer
from qvr_lsp.app import build
from qvr_lsp.protocol.documents import DocumentStore
from tests.lsp.support import example

URI = "file:///flooded.qvr"
TEXT = example("vanilla_rnn_lm.qvr")
WAIT = 60.0


class Builds:
    """`PendingModule.materialize` held while `held` is set: a build that takes long."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.held = False
        self.release = threading.Event()
        self.started = threading.Event()
        real = PendingModule.materialize

        def materialize(module, stop=None):  # type: ignore[no-untyped-def]
            if self.held:
                self.started.set()
                self.release.wait(WAIT)
            return real(module, stop)

        monkeypatch.setattr(PendingModule, "materialize", materialize)


@pytest.fixture
def builds(monkeypatch: pytest.MonkeyPatch) -> Iterator[Builds]:
    held = Builds(monkeypatch)
    yield held
    held.release.set()


def appended(text: str) -> list[lsp.TextDocumentContentChangeEvent]:
    return [lsp.TextDocumentContentChangeWholeDocument(text=text)]


class Checks:
    """Every check the analyzer starts (the text's version), in order."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.versions: list[int] = []
        real = analysis_module.analyze

        def counted(doc, *args):  # type: ignore[no-untyped-def]
            self.versions.append(doc.version)
            return real(doc, *args)

        monkeypatch.setattr(analysis_module, "analyze", counted)


async def until(condition, seconds: float = WAIT) -> None:  # type: ignore[no-untyped-def]
    deadline = asyncio.get_running_loop().time() + seconds
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.01)


# --------------------------------------------------------------------- hover


async def test_a_hover_whose_text_was_overtaken_is_answered_from_the_last_built_tables(
    builds, monkeypatch
):
    """The hover's text is checked; an edit arrives meanwhile (as in any flood); the
    declaration under the cursor is untouched: the answer is carried from the last built
    tables at once, never waiting for a build (held here until the test ends)."""
    session = build()
    server, analyzer = session.server, session.analyzer
    analyzer.build_delay = 30.0  # no build unasked
    hover = server.protocol.fm.features[lsp.TEXT_DOCUMENT_HOVER]
    server.opened(lsp.DidOpenTextDocumentParams(lsp.TextDocumentItem(URI, "qvr", 1, TEXT)))
    try:
        ready = await analyzer.settled(URI)
        assert ready is not None and ready.newest is not None and ready.newest.ready
        builds.held = True
        loop = asyncio.get_running_loop()
        real = analysis_module.analyze
        version = 2

        def edit() -> None:
            nonlocal version
            version += 1
            text = TEXT + "\n" * version  # past the last declaration: nothing moves
            server.changed(
                lsp.DidChangeTextDocumentParams(
                    lsp.VersionedTextDocumentIdentifier(version, URI), appended(text)
                )
            )

        def overtaken(doc, *args):  # type: ignore[no-untyped-def]
            applied = threading.Event()
            loop.call_soon_threadsafe(lambda: (edit(), applied.set()))
            applied.wait(WAIT)  # the next edit came while this text was checked
            return real(doc, *args)

        monkeypatch.setattr(analysis_module, "analyze", overtaken)
        edit()
        lines = TEXT.split("\n")
        line = next(i for i, text in enumerate(lines) if text.startswith("let "))
        position = lsp.Position(line, 5)
        answer = await asyncio.wait_for(
            hover(lsp.HoverParams(lsp.TextDocumentIdentifier(URI), position)), 10
        )
        assert answer is not None
        snap = analyzer.snapshot(URI)
        assert snap is not None and snap.newest is not None and not snap.newest.ready
    finally:
        builds.release.set()
        analyzer.shutdown()


# ---------------------------------------------------------------- the checks


async def test_no_check_starts_unasked_while_a_request_waits_for_a_build(builds, monkeypatch):
    store = DocumentStore()
    analyzer = Analyzer(store, debounce=0.01, build_delay=30.0)
    analyzer.yield_most = WAIT  # as long as the build takes, here
    checks = Checks(monkeypatch)
    store.open(URI, TEXT, 1)
    analyzer.schedule(URI, immediate=True)
    try:
        await analyzer.settled(URI, timeout=WAIT)
        builds.held = True
        store.change(URI, 2, appended(TEXT + "\n"))
        analyzer.schedule(URI)
        request = asyncio.ensure_future(analyzer.settled(URI, timeout=WAIT))
        await until(builds.started.is_set)  # the request's build runs (and is held)
        checked = list(checks.versions)
        for version in range(3, 8):  # the flood goes on, then pauses
            store.change(URI, version, appended(TEXT + "\n" * version))
            analyzer.schedule(URI)
            await asyncio.sleep(0.002)
        await asyncio.sleep(0.3)  # 30 debounces
        assert checks.versions == checked, "a check started beside the request's build"
        builds.held = False
        builds.release.set()
        snap = await asyncio.wait_for(request, WAIT)
        assert snap is not None and snap.newest is not None and snap.newest.version == 2
        await until(lambda: 7 in checks.versions)  # the newest text, once the build ended
    finally:
        builds.release.set()
        analyzer.shutdown()


async def test_a_check_waits_for_requests_at_most_yield_most(builds, monkeypatch):
    """A request that keeps a build going cannot keep the diagnostics from coming."""
    store = DocumentStore()
    analyzer = Analyzer(store, debounce=0.01, build_delay=30.0)
    analyzer.yield_most = 0.2
    checks = Checks(monkeypatch)
    store.open(URI, TEXT, 1)
    analyzer.schedule(URI, immediate=True)
    try:
        await analyzer.settled(URI, timeout=WAIT)
        builds.held = True
        store.change(URI, 2, appended(TEXT + "\n"))
        analyzer.schedule(URI)
        request = asyncio.ensure_future(analyzer.settled(URI, timeout=WAIT))
        await until(builds.started.is_set)
        store.change(URI, 3, appended(TEXT + "\n\n\n"))
        analyzer.schedule(URI)
        await until(lambda: 3 in checks.versions, 10)  # while the build is still held
        assert not request.done()
    finally:
        builds.release.set()
        analyzer.shutdown()


async def test_a_request_for_the_flooded_document_does_not_wait_behind_the_yield(
    builds, monkeypatch
):
    """The document's own newest text, asked for, is checked at once even while another
    request's build holds the others back."""
    store = DocumentStore()
    analyzer = Analyzer(store, debounce=0.01, build_delay=30.0)
    analyzer.yield_most = WAIT
    other = "file:///other.qvr"
    store.open(URI, TEXT, 1)
    store.open(other, TEXT, 1)
    analyzer.schedule(URI, immediate=True)
    analyzer.schedule(other, immediate=True)
    try:
        await analyzer.settled(URI, timeout=WAIT)
        await analyzer.settled(other, timeout=WAIT)
        builds.held = True
        store.change(other, 2, appended(TEXT + "\n"))
        analyzer.schedule(other)
        held = asyncio.ensure_future(analyzer.settled(other, timeout=WAIT))
        await until(builds.started.is_set)
        builds.held = False  # the next builds go through
        store.change(URI, 2, appended(TEXT + "\n"))
        analyzer.schedule(URI)
        store.change(URI, 3, appended(TEXT + "\n\n"))
        analyzer.schedule(URI)
        snap = await asyncio.wait_for(analyzer.checked(URI, timeout=WAIT), 10)
        assert snap is not None and snap.newest is not None and snap.newest.version == 3
        assert not held.done()
    finally:
        builds.release.set()
        analyzer.shutdown()
