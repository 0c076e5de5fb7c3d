"""A flood of edits: checks coalesced, and requests answered while it goes on (#24).

Editing a 5,000-line document in a flood (during an inference run) pushed
answers past a second: a hover waited for the analysis of whatever text was
newest, which a newer edit always replaced (until a 2 s timeout), and the
outline waited for a pause in typing that never came. A request now waits
for the analysis of the text it was sent for (or a newer one) and its
tables; a wait for a pause is bounded; only the newest text is ever checked.
Timings are in `bench/server_flood.py`; these tests check the order of events.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading

import pytest
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException

from bench.generated import generate
from qvr_lsp.analysis import analyzer as analysis_module
from qvr_lsp.analysis.analyzer import Analyzer
from qvr_lsp.protocol.documents import DocumentStore
from tests.lsp.support import example
from tests.security.support import TINY, served

URI = "file:///flood.qvr"
VALID = example("vanilla_rnn_lm.qvr")
WAIT = 120.0


def whole(text: str) -> list[lsp.TextDocumentContentChangeEvent]:
    return [lsp.TextDocumentContentChangeWholeDocument(text=text)]


class Edits:
    """Edits of one document in the store, each scheduled as the server schedules them."""

    def __init__(self, store: DocumentStore, analyzer: Analyzer) -> None:
        self.store, self.analyzer, self.version = store, analyzer, 1

    def one(self) -> None:
        self.version += 1
        self.store.change(URI, self.version, whole(VALID + "\n" * (self.version % 5)))
        self.analyzer.schedule(URI)


async def test_a_request_during_a_flood_waits_for_its_own_text_not_the_newest(monkeypatch):
    """Every check is overtaken by new edits before it ends (the flood outruns the
    checker); a request is answered from the check of its own text, tables built,
    before the flood's checks are over."""
    store = DocumentStore()
    analyzer = Analyzer(store, debounce=0.01, build_delay=30.0)
    store.open(URI, VALID, 1)
    analyzer.schedule(URI, immediate=True)
    assert (await analyzer.settled(URI)).current
    edits = Edits(store, analyzer)
    loop = asyncio.get_running_loop()
    checks: list[int] = []
    flood_checks = 40
    real = analysis_module.analyze

    def overtaken(doc, *args):  # type: ignore[no-untyped-def]
        checks.append(doc.seq)
        if len(checks) <= flood_checks:  # new edits arrive while this text is checked
            applied = threading.Event()

            def burst() -> None:
                for _ in range(5):
                    edits.one()
                applied.set()

            loop.call_soon_threadsafe(burst)
            applied.wait(WAIT)
        return real(doc, *args)

    monkeypatch.setattr(analysis_module, "analyze", overtaken)
    edits.one()
    target = store.get(URI).seq
    snap = await analyzer.settled(URI, timeout=WAIT)
    answered_after = len(checks)
    assert snap is not None and snap.newest is not None
    assert snap.newest.seq >= target and snap.newest.ready  # its own text, tables built
    assert snap.for_queries()[0] is snap.newest
    assert answered_after < flood_checks // 4, f"it waited for {answered_after} checks"
    analyzer.shutdown()


async def test_a_flood_of_edits_is_checked_far_fewer_times_than_edited(monkeypatch):
    store = DocumentStore()
    analyzer = Analyzer(store)
    announced: list[int] = []
    analyzer.on_analysis(lambda a: announced.append(a.version))
    checked: list[int] = []
    real = analysis_module.analyze

    def counted(doc, *args):  # type: ignore[no-untyped-def]
        checked.append(doc.version)
        return real(doc, *args)

    monkeypatch.setattr(analysis_module, "analyze", counted)
    store.open(URI, VALID, 1)
    analyzer.schedule(URI, immediate=True)
    edits = Edits(store, analyzer)
    count = 500
    for _ in range(count):
        edits.one()
        await asyncio.sleep(0)  # the event loop turns between two edits
    snap = await analyzer.settled(URI, timeout=WAIT)
    assert snap is not None and snap.current and snap.newest.version == edits.version
    assert len(checked) <= count // 10, f"{len(checked)} checks of {count} edits"
    assert announced[-1] == edits.version and announced == sorted(announced)
    analyzer.shutdown()


async def test_a_wait_for_a_pause_in_typing_ends_while_the_flood_goes_on():
    store = DocumentStore()
    analyzer = Analyzer(store)
    store.open(URI, VALID, 1)
    analyzer.schedule(URI, immediate=True)
    edits = Edits(store, analyzer)
    quiet = asyncio.ensure_future(analyzer.quiet(URI, seconds=0.3, most=0.2))
    most = 1_000_000
    while not quiet.done() and edits.version < most:
        edits.one()
        await asyncio.sleep(0)
    assert quiet.done() and edits.version < most  # the flood was still going
    analyzer.shutdown()


# ------------------------------------------------------ through the server


async def ping(client) -> None:
    """One round trip through the server's event loop (an unknown method: answered at once)."""
    with contextlib.suppress(JsonRpcException):
        await asyncio.wrap_future(client.protocol.send_request("qvr/ping", None))


@pytest.mark.asyncio(loop_scope="function")
async def test_requests_are_answered_while_a_5000_line_document_is_flooded_during_a_run(
    tmp_path,
):
    text = generate(5000)
    (tmp_path / "tiny.qvr").write_text(TINY)
    big = tmp_path / "big.qvr"
    big.write_text(text)
    # the run's worker alone: the spare the server would start beside it as the run starts
    # (torch, the runtime and ArviZ loaded for a next run that never comes) is not this test's
    async with served(tmp_path, env={"QVR_SPARE_WORKER": "0"}) as client:
        run_uri, uri = (tmp_path / "tiny.qvr").as_uri(), big.as_uri()
        run = asyncio.wrap_future(
            client.protocol.send_request(
                lsp.WORKSPACE_EXECUTE_COMMAND,
                lsp.ExecuteCommandParams(
                    command="qvr.runInference", arguments=[{"uri": run_uri, "steps": 1000000}]
                ),
                msg_id="run",
            )
        )
        while not any(n["uri"] == run_uri and n["points"] for n in client.inference_progress):
            await ping(client)  # until the run reports its first steps
        client.text_document_did_open(
            lsp.DidOpenTextDocumentParams(lsp.TextDocumentItem(uri, "qvr", 1, text))
        )
        while not any(p.uri == uri for p in client.published):
            await ping(client)

        lines = text.split("\n")
        target = next(i for i in range(len(lines) // 2, len(lines)) if "observe" in lines[i])
        column = lines[target].index("(h)")
        at = lsp.Position(target, column)
        version = 1

        def edit() -> None:
            nonlocal version
            version += 1
            broken = version % 2 == 0
            end = at if broken else lsp.Position(target, column + 1)
            replace = lsp.TextDocumentContentChangePartial(
                range=lsp.Range(at, end), text="X" if broken else ""
            )
            client.text_document_did_change(
                lsp.DidChangeTextDocumentParams(
                    lsp.VersionedTextDocumentIdentifier(version=version, uri=uri), [replace]
                )
            )

        for _ in range(30):  # the flood is on
            edit()
            await ping(client)
        ident = lsp.TextDocumentIdentifier(uri)
        name = next(i for i, line in enumerate(lines) if line.startswith("let backbone_7 "))
        outline = client.text_document_document_symbol_async(lsp.DocumentSymbolParams(ident))
        hover = client.text_document_hover_async(lsp.HoverParams(ident, lsp.Position(name, 6)))
        answers = asyncio.gather(outline, hover)
        sent_before = version
        most = 10000  # edits, each after a round trip: many seconds of flood
        while not answers.done() and version - sent_before < most:
            edit()  # at the pace of the server's event loop
            await ping(client)
        assert answers.done(), "the requests waited for the flood to end"
        symbols, hovered = answers.result()
        assert any(s.name == "lm_7" for s in symbols)
        assert hovered is not None and "backbone_7" in str(hovered.contents)
        flood_end = version
        for _ in range(20):  # a little more flood after the answers
            edit()
            await ping(client)
        while not any(p.uri == uri and p.version == version for p in client.published):
            await ping(client)
        published = {p.version for p in client.published if p.uri == uri and p.version != 1}
        assert len(published) <= (version - 1) // 10, f"{len(published)} checks published"
        assert flood_end < version  # the answers came before the flood's last check
        client.protocol.notify(lsp.CANCEL_REQUEST, lsp.CancelParams(id="run"))
        with contextlib.suppress(JsonRpcException, asyncio.CancelledError):
            await asyncio.wait_for(run, WAIT)


@pytest.mark.asyncio(loop_scope="function")
async def test_a_request_is_answered_for_the_text_it_was_sent_for_when_an_edit_follows_at_once(
    tmp_path,
):
    """A hover, and an edit right behind it in the pipe: the hover sees the text it was
    sent for (the server reads the pipe on its event loop, and lets the hover start
    before it reads the edit), and the tables of that text are built for it although a
    newer text came meanwhile (before, that build was given up and the hover answered
    from an older analysis, at positions of another text)."""
    (tmp_path / "tiny.qvr").write_text(TINY)
    async with served(tmp_path) as client:
        uri = (tmp_path / "tiny.qvr").as_uri()
        client.text_document_did_open(
            lsp.DidOpenTextDocumentParams(lsp.TextDocumentItem(uri, "qvr", 1, TINY))
        )
        ident = lsp.TextDocumentIdentifier(uri)
        line = TINY.split("\n").index("let backbone = embed >> scan(cell)")
        for version in range(2, 12):
            while not any(p.uri == uri and p.version == version - 1 for p in client.published):
                await ping(client)  # the text the hover is for has its diagnostics
            at = lsp.Position(line, 6)
            hover = asyncio.wrap_future(  # sent now, before the edit
                client.protocol.send_request(lsp.TEXT_DOCUMENT_HOVER, lsp.HoverParams(ident, at))
            )
            start = lsp.Position(0, 0)
            client.text_document_did_change(  # three lines more on top, sent at once
                lsp.DidChangeTextDocumentParams(
                    lsp.VersionedTextDocumentIdentifier(version=version, uri=uri),
                    [lsp.TextDocumentContentChangePartial(lsp.Range(start, start), "\n\n\n")],
                )
            )
            hovered = await asyncio.wait_for(hover, WAIT)
            assert hovered is not None and "backbone" in str(hovered.contents), version
            assert hovered.range is not None and hovered.range.start.line == line
            line += 3
