"""Workspace scans stop when cancelled, are shared, and never hold up other requests (#24).

Typing in Ctrl+T over 10,000 files sent a workspace/symbol request per
keystroke, each cancelled by the next; every one went on scanning in the
event loop's default thread pool, so a diagram drawn there waited seconds.
Scans now run in a thread of their own (`qvr_lsp.analysis.scans`), stop between two
files once no request waits for them, and a scan already running is shared.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException

from qvr_lsp.analysis.scans import Cancel, ScanCancelled, Scans
from qvr_lsp.features.pull_diagnostics import DiskDiagnostics, _reports
from qvr_lsp.features.workspace_symbols import FileIndex, scan
from qvr_lsp.protocol.convert import UTF16
from tests.security.support import TINY, served

WAIT = 60.0


async def in_thread(event: threading.Event) -> bool:
    """Wait for a thread's event without blocking the loop."""
    return await asyncio.to_thread(event.wait, WAIT)


def model(i: int) -> str:
    return f"object Thing_{i} : Real 4\nmorphism shape_{i} : Thing_{i} -> Thing_{i} [role=kernel]\n"


def workspace(root: Path, count: int) -> list[Path]:
    paths = []
    for i in range(count):
        folder = root / f"pkg{i // 250}"
        folder.mkdir(exist_ok=True)
        path = folder / f"model_{i:05d}.qvr"
        path.write_text(model(i))
        paths.append(path)
    return paths


# ------------------------------------------------------------------ Scans


async def test_requests_that_come_while_a_scan_runs_share_it():
    scans = Scans()
    gate = threading.Event()
    started = threading.Event()
    calls: list[int] = []

    def work(cancel: Cancel) -> int:
        calls.append(1)
        started.set()
        gate.wait(WAIT)
        return 42

    first = asyncio.ensure_future(scans.run("workspace", work))
    assert await in_thread(started)
    second = asyncio.ensure_future(scans.run("workspace", work))
    third = asyncio.ensure_future(scans.run("workspace", work))
    await asyncio.sleep(0)  # let them join
    gate.set()
    assert await asyncio.gather(first, second, third) == [42, 42, 42]
    assert calls == [1] and scans.started == 1
    scans.shutdown()


async def test_a_scan_nobody_waits_for_stops_at_the_next_file():
    scans = Scans()
    started, step, finished = threading.Event(), threading.Event(), threading.Event()
    visited: list[int] = []

    def work(cancel: Cancel) -> int:
        try:
            for i in range(1000):
                cancel.check()
                visited.append(i)
                started.set()
                step.wait(WAIT)  # the test lets it go on once the request is cancelled
            return len(visited)
        finally:
            finished.set()

    request = asyncio.ensure_future(scans.run("workspace", work))
    assert await in_thread(started)
    request.cancel()
    with pytest.raises(asyncio.CancelledError):
        await request
    assert scans.stopped == 1
    step.set()
    assert await in_thread(finished)
    assert visited == [0]  # it stopped before the next file
    # a new request starts a new scan, which runs to the end
    step.set()
    assert await scans.run("workspace", work) == 1001
    scans.shutdown()


async def test_one_waiter_leaving_does_not_stop_a_shared_scan():
    scans = Scans()
    gate, started = threading.Event(), threading.Event()

    def work(cancel: Cancel) -> str:
        started.set()
        gate.wait(WAIT)
        cancel.check()
        return "done"

    leaving = asyncio.ensure_future(scans.run("workspace", work))
    staying = asyncio.ensure_future(scans.run("workspace", work))
    assert await in_thread(started)
    leaving.cancel()
    with pytest.raises(asyncio.CancelledError):
        await leaving
    gate.set()
    assert await staying == "done" and scans.stopped == 0
    scans.shutdown()


async def test_the_default_thread_pool_is_free_while_scans_run():
    """Diagrams, outlines and hovers use the default pool: never behind a scan."""
    scans = Scans()
    gate, started = threading.Event(), threading.Event()

    def work(cancel: Cancel) -> None:
        started.set()
        gate.wait(WAIT)

    running = [asyncio.ensure_future(scans.run(None, work)) for _ in range(8)]
    assert await in_thread(started)
    assert await asyncio.to_thread(lambda: "drawn") == "drawn"
    assert not gate.is_set() and not any(r.done() for r in running)
    gate.set()
    await asyncio.gather(*running)
    scans.shutdown()


# ------------------------------------------------------- workspace symbols


class GatedIndex(FileIndex):
    """Signals after the first file it parses and waits for the test to go on."""

    def __init__(self) -> None:
        super().__init__()
        self.first = threading.Event()
        self.go_on = threading.Event()

    def entries(self, path, roots, encoding):  # type: ignore[no-untyped-def]
        found = super().entries(path, roots, encoding)
        self.first.set()
        self.go_on.wait(WAIT)
        return found


async def test_a_cancelled_symbol_scan_stops_and_the_next_reads_only_the_rest(tmp_path):
    workspace(tmp_path, 40)
    scans = Scans()
    index = GatedIndex()
    roots = [str(tmp_path)]

    def work(cancel: Cancel):  # type: ignore[no-untyped-def]
        return scan(index, roots, UTF16, cancel)

    request = asyncio.ensure_future(scans.run("symbols", work))
    assert await in_thread(index.first)
    request.cancel()
    with pytest.raises(asyncio.CancelledError):
        await request
    index.go_on.set()
    found = await scans.run("symbols", work)  # queued behind the stopping one
    assert len(found) == 40
    assert index.parsed == 40  # the first file was parsed once, by the stopped scan
    names = {e.name for _path, _uri, entries in found for e in entries}
    assert {"Thing_0", "shape_39"} <= names
    scans.shutdown()


# ----------------------------------------------------- workspace diagnostics


async def test_a_cancelled_diagnostics_scan_stops_between_files(tmp_path):
    from qvr_lsp.app import build

    paths = workspace(tmp_path, 12)
    session = build()
    disk = DiskDiagnostics(session)
    roots = [str(tmp_path)]
    cancel = Cancel()
    stamps = await asyncio.to_thread(disk.stamps, roots, set(), 0, cancel)
    assert len(stamps) == len(paths)
    checked_before_cancel = 3
    original = disk.report

    def report(*args):  # type: ignore[no-untyped-def]
        found = original(*args)
        if disk.checked == checked_before_cancel:
            cancel.cancelled = True  # the request was cancelled meanwhile
        return found

    disk.report = report  # type: ignore[method-assign]
    with pytest.raises(ScanCancelled):
        await asyncio.to_thread(_reports, disk, roots, stamps, {}, cancel)
    assert disk.checked == checked_before_cancel
    items = await asyncio.to_thread(_reports, disk, roots, stamps, {}, Cancel())
    assert len(items) == len(paths)
    assert disk.checked == len(paths)  # the three checked before were not checked again
    session.scans.shutdown()
    session.analyzer.shutdown()


# ------------------------------------------------------ through the server


@pytest.mark.asyncio(loop_scope="function")
async def test_typing_in_ctrl_t_over_thousands_of_files_does_not_hold_up_a_diagram(tmp_path):
    workspace(tmp_path, 3000)
    tiny = tmp_path / "tiny.qvr"
    tiny.write_text(TINY)
    async with served(tmp_path) as client:
        uri = tiny.as_uri()
        client.text_document_did_open(
            lsp.DidOpenTextDocumentParams(lsp.TextDocumentItem(uri, "qvr", 1, TINY))
        )
        typed = []
        query = ""
        for i, ch in enumerate("shape_7"):
            query += ch
            typed.append(
                asyncio.wrap_future(
                    client.protocol.send_request(
                        lsp.WORKSPACE_SYMBOL, lsp.WorkspaceSymbolParams(query), msg_id=f"ws{i}"
                    )
                )
            )
            if i:  # the editor cancels the list of the previous keystroke
                client.protocol.notify(lsp.CANCEL_REQUEST, lsp.CancelParams(id=f"ws{i - 1}"))
        last = typed[-1]
        diagram = client.workspace_execute_command_async(
            lsp.ExecuteCommandParams(command="qvr.diagram", arguments=[uri])
        )
        hover = client.text_document_hover_async(
            lsp.HoverParams(lsp.TextDocumentIdentifier(uri), lsp.Position(8, 6))  # backbone
        )
        drawn = await asyncio.wait_for(diagram, WAIT)
        assert drawn["format"] == "mermaid" and drawn["nodes"]
        assert await asyncio.wait_for(hover, WAIT) is not None
        assert not last.done(), "the diagram waited for the workspace scan"
        symbols = await asyncio.wait_for(last, WAIT)
        assert any(s.name == "shape_7" for s in symbols)
        earlier = await asyncio.gather(*typed[:-1], return_exceptions=True)
        assert all(isinstance(e, JsonRpcException | list) for e in earlier)
