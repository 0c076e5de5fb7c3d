"""The analyzer and the guard at library level: supersession, last good, failures."""

from __future__ import annotations

import asyncio

import pytest
from lsprotocol import types as lsp

from qvr_core.check.incremental import IncrementalChecker
from qvr_lsp.analysis.analyzer import Analyzer
from qvr_lsp.analysis.snapshots import Analysis
from qvr_lsp.protocol.documents import DocumentStore
from qvr_lsp.protocol.guard import guarded
from tests.lsp.support import example

URI = "file:///doc.qvr"
VALID = example("vanilla_rnn_lm.qvr")
BROKEN = VALID.replace("-> Embedded [role=embed]", "Embedded [role=embed]")


def whole(text: str) -> list[lsp.TextDocumentContentChangeEvent]:
    return [lsp.TextDocumentContentChangeWholeDocument(text=text)]


def analyzer_with_log(debounce: float = 0.02) -> tuple[DocumentStore, Analyzer, list[Analysis]]:
    store = DocumentStore()
    analyzer = Analyzer(store, debounce=debounce)
    announced: list[Analysis] = []
    analyzer.on_analysis(announced.append)
    return store, analyzer, announced


async def until(predicate, timeout: float = 10.0) -> None:
    async with asyncio.timeout(timeout):
        while not predicate():
            await asyncio.sleep(0.005)


async def test_only_the_current_text_is_announced_and_versions_only_grow():
    store, analyzer, announced = analyzer_with_log()
    store.open(URI, VALID, 1)
    analyzer.schedule(URI, immediate=True)
    for version in range(2, 40):
        store.change(URI, version, whole(VALID + " " * version))
        analyzer.schedule(URI)
        if version % 9 == 0:
            await asyncio.sleep(0.03)
    await until(lambda: announced and announced[-1].version == 39)
    await asyncio.sleep(0.1)
    versions = [a.version for a in announced]
    assert versions == sorted(set(versions)) and versions[-1] == 39
    assert len(versions) < 38  # bursts were coalesced
    analyzer.shutdown()


async def test_last_good_analysis_is_kept_while_the_text_does_not_parse():
    store, analyzer, announced = analyzer_with_log()
    store.open(URI, VALID, 1)
    analyzer.schedule(URI, immediate=True)
    await until(lambda: len(announced) == 1)
    store.change(URI, 2, whole(BROKEN))
    analyzer.schedule(URI)
    snap = await analyzer.settled(URI)
    assert snap is not None and snap.current
    assert snap.newest.version == 2 and not snap.newest.parsed
    assert snap.good.version == 1 and snap.good.parsed
    assert snap.for_queries() == [snap.newest, snap.good]
    assert snap.structural() is snap.good
    assert any(d.code == "QVR001" for d in announced[-1].diagnostics)
    analyzer.shutdown()


async def test_a_crashing_core_still_yields_a_diagnostic(monkeypatch):
    def explode(self: object, text: str, *args: object, **kwargs: object) -> None:
        raise RecursionError("deep")

    monkeypatch.setattr(IncrementalChecker, "check", explode)
    store, analyzer, announced = analyzer_with_log()
    store.open(URI, VALID, 3)
    analyzer.schedule(URI, immediate=True)
    await until(lambda: len(announced) == 1)
    (d,) = announced[0].diagnostics
    assert d.code == "QVR000" and "RecursionError" in d.message
    assert announced[0].module is None and announced[0].version == 3
    analyzer.shutdown()


async def test_settled_skips_the_debounce():
    store, analyzer, announced = analyzer_with_log(debounce=30.0)
    store.open(URI, VALID, 1)
    analyzer.schedule(URI, immediate=True)
    await until(lambda: len(announced) == 1)
    for version in (2, 3):  # edits in a burst: the worker waits 30 s for typing to pause
        store.change(URI, version, whole(VALID + "\n" * version))
        analyzer.schedule(URI)
    snap = await asyncio.wait_for(analyzer.settled(URI), 10)
    assert snap is not None and snap.current and snap.newest.version == 3
    analyzer.shutdown()


async def test_closing_forgets_the_document():
    store, analyzer, _ = analyzer_with_log()
    closed: list[str] = []
    analyzer.on_close(closed.append)
    store.open(URI, VALID, 1)
    analyzer.schedule(URI, immediate=True)
    store.close(URI)
    analyzer.close(URI)
    await asyncio.sleep(0.2)
    assert closed == [URI] and analyzer.snapshot(URI) is None
    assert await analyzer.settled(URI) is None
    analyzer.shutdown()


async def test_tables_are_built_after_a_pause_or_when_a_request_waits():
    store = DocumentStore()
    analyzer = Analyzer(store, debounce=0.01, build_delay=30.0)  # no pause in this test
    store.open(URI, VALID, 1)
    analyzer.schedule(URI, immediate=True)
    snap = await analyzer.settled(URI)  # a request: builds them now
    assert snap is not None and snap.newest.ready and snap.for_queries() == [snap.newest]
    store.change(URI, 2, whole(VALID + "\n"))
    analyzer.schedule(URI)
    await until(lambda: analyzer.snapshot(URI).current)
    pending = analyzer.snapshot(URI)
    assert not pending.newest.ready  # announced with its diagnostics, tables not built
    assert pending.for_queries() == [pending.ready] and pending.ready.version == 1
    assert (await analyzer.available(URI)).newest.ready  # completion builds what it has
    analyzer.shutdown()

    store = DocumentStore()
    analyzer = Analyzer(store, debounce=0.01, build_delay=0.05)
    store.open(URI, VALID, 1)
    analyzer.schedule(URI, immediate=True)
    await until(lambda: analyzer.snapshot(URI).newest is not None)
    await until(lambda: analyzer.snapshot(URI).newest.ready)  # after the pause, unasked
    analyzer.shutdown()


async def test_a_burst_of_requests_builds_the_tables_once(monkeypatch):
    from qvr_core.check.module import PendingModule

    calls = []
    original = PendingModule.materialize

    def counted(self, stop=None):  # type: ignore[no-untyped-def]
        calls.append(self)
        return original(self, stop)

    monkeypatch.setattr(PendingModule, "materialize", counted)
    store = DocumentStore()
    analyzer = Analyzer(store, debounce=0.01, build_delay=30.0)
    store.open(URI, VALID, 1)
    analyzer.schedule(URI, immediate=True)
    await until(lambda: analyzer.snapshot(URI).current)
    snaps = await asyncio.gather(*(analyzer.settled(URI) for _ in range(6)))
    assert all(s.newest.ready for s in snaps)
    assert len(calls) == 1  # the other five waited for the same build
    analyzer.shutdown()


async def test_building_the_tables_stops_when_a_newer_text_comes():
    from qvr_core.check.incremental import IncrementalChecker as Checker

    checker = Checker()
    checker.check(VALID)
    module = checker.check(VALID + "\n")
    assert module.materialize(stop=lambda: True) is False and not module.ready
    assert module.materialize() is True and module.ready and module.typed_spans


def test_the_collector_collects_after_a_pause_or_many_analyses() -> None:
    import gc

    from qvr_lsp.analysis.memory import Collector

    async def scenario() -> None:
        collector = Collector(idle=0.05, most=3)
        assert not gc.isenabled()
        collector.analysed()
        await asyncio.sleep(0.2)
        assert collector.collections == 1  # after the pause
        for _ in range(3):
            collector.analysed()
        assert collector.collections == 2  # three in a row: at once
        collector.close()

    try:
        asyncio.run(scenario())
    finally:
        gc.enable()
    assert gc.isenabled()


def test_guard_answers_empty_for_sync_handlers(caplog):
    @guarded(list)
    def handler(params: object) -> list[int]:
        raise ValueError("boom")

    assert handler(None) == []
    assert "boom" in caplog.text


async def test_guard_answers_empty_for_async_handlers_and_keeps_cancellation():
    @guarded()
    async def failing(params: object) -> str:
        raise KeyError("boom")

    @guarded()
    async def cancelled(params: object) -> str:
        raise asyncio.CancelledError

    assert await failing(None) is None
    with pytest.raises(asyncio.CancelledError):
        await cancelled(None)


async def test_quiet_waits_for_a_pause_in_typing():
    store = DocumentStore()
    analyzer = Analyzer(store, debounce=0.01)
    store.open(URI, VALID, 1)
    analyzer.schedule(URI, immediate=True)
    loop = asyncio.get_running_loop()
    started = loop.time()
    for version in (2, 3, 4):  # three edits 0.05 s apart
        store.change(URI, version, whole(VALID + "\n" * version))
        analyzer.schedule(URI)
        await asyncio.sleep(0.05)
    await analyzer.quiet(URI, 0.2, most=1.0)
    assert loop.time() - started >= 0.1 + 0.2 - 0.01  # 0.2 s after the last edit
    started = loop.time()
    await analyzer.quiet(URI, 0.2)  # already quiet: at once
    assert loop.time() - started < 0.05
    analyzer.shutdown()
