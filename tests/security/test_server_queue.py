"""The run queue is linear, and a queued run holds nothing but its request (#24).

Cancelling 1,000 queued runs took 56 s: each waiter polled on its own and
counted the runs ahead of it, and leaving rebuilt the queue. Eight runs of a
248 MB file queued behind another held 4.5 GB: each read and kept the bytes,
and encoded them on the event loop. Now the queue is an ordered dict with
one poller, the data file is read when a run starts and held once for every
run of it, and the bytes go to the worker raw, written by a thread.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException

from qvr_core.host.datafile import DataFile, DataFileError
from qvr_lsp.runs import inference_runs, worker_slots
from qvr_lsp.runs.run_data import DataFiles, check_data_file
from qvr_lsp.runs.worker_slots import WorkerSlots
from tests.security.support import TINY, served

ROOT = Path(__file__).resolve().parents[2]
RUN = "qvr.runInference"
WAIT = 120.0


def never() -> None:
    return None


# ------------------------------------------------------------------ queue


async def test_joining_and_leaving_the_queue_never_walks_it(monkeypatch):
    monkeypatch.setattr(worker_slots, "POLL_SECONDS", 3600.0)  # no pass during the test
    slots = WorkerSlots(1)
    assert await slots.acquire(never) is None
    count = 2000
    told: list[int] = []
    waiting = [asyncio.ensure_future(slots.acquire(never, told.append)) for _ in range(count)]
    await asyncio.sleep(0)  # every waiter joins
    assert slots.waiting == count
    assert told == list(range(1, count + 1))  # each told its place once, as it joined
    for task in waiting:
        task.cancel()
    results = await asyncio.gather(*waiting, return_exceptions=True)
    assert all(isinstance(r, asyncio.CancelledError) for r in results)
    assert slots.waiting == 0 and slots.visits == 0  # nobody walked the queue
    assert len(told) == count  # and nobody was told anything more
    slots.release()
    assert slots.busy == 0 and slots.running == 0


async def test_one_pass_looks_at_each_waiter_once_and_reports_what_changed(monkeypatch):
    monkeypatch.setattr(worker_slots, "POLL_SECONDS", 3600.0)
    monkeypatch.setattr(worker_slots, "REPORT_SECONDS", 0.0)
    slots = WorkerSlots(1)
    assert await slots.acquire(never) is None
    count = 1000
    places: dict[int, list[int]] = {i: [] for i in range(count)}
    stop = [False] * count
    waiting = [
        asyncio.ensure_future(
            slots.acquire(lambda i=i: "cancelled" if stop[i] else None, places[i].append)
        )
        for i in range(count)
    ]
    await asyncio.sleep(0)
    for i in range(0, count, 2):  # every other run gives up (the progress bar's cancel)
        stop[i] = True
    slots._pass()  # one pass: the stopped leave, the others are told their new place
    assert slots.visits == count
    stopped = await asyncio.gather(*waiting[0::2])
    assert stopped == ["cancelled"] * (count // 2)
    slots._pass()  # nothing changed since: nobody is told again
    assert slots.visits == count + count // 2
    assert all(places[i] == [i + 1, i // 2 + 1] for i in range(1, count, 2))
    slots.release()  # the first of the rest starts
    assert await waiting[1] is None
    for task in waiting[3::2]:
        task.cancel()
    await asyncio.gather(*waiting[3::2], return_exceptions=True)
    slots.release()
    assert slots.busy == 0 and slots.waiting == 0


# ------------------------------------------------------------ data, once


def data_file(path: Path, rows: int = 4) -> Path:
    header = ",".join([*(f"x[{i}]" for i in range(8)), "next"])
    lines = [",".join(str((r * 7 + i) % 8) for i in range(9)) for r in range(rows)]
    path.write_text("\n".join([header, *lines]) + "\n")
    return path


async def test_runs_of_one_file_hold_one_copy_read_once(tmp_path):
    source = check_data_file(data_file(tmp_path / "tokens.csv"), 1 << 20)
    files = DataFiles()
    held = [await files.acquire(source) for _ in range(8)]
    assert files.reads == 1 and files.held == 1
    assert all(data is held[0][0] for data, _ in held)  # the same bytes object
    for _, release in held[:-1]:
        release()
    assert files.held == 1
    held[-1][1]()
    held[-1][1]()  # letting go twice is once
    assert files.held == 0

    # another file, or this one changed: read again
    other = check_data_file(data_file(tmp_path / "other.csv", rows=5), 1 << 20)
    first, release_first = await files.acquire(source)
    second, release_second = await files.acquire(other)
    assert files.reads == 3 and first.content != second.content
    release_first()
    release_second()
    data_file(tmp_path / "tokens.csv", rows=9)
    changed, release = await files.acquire(source)
    assert files.reads == 4 and changed.content.count(b"\n") == 10
    release()


async def test_a_data_file_is_checked_when_asked_and_read_when_the_run_starts(tmp_path):
    path = data_file(tmp_path / "tokens.csv")
    source = check_data_file(path, 1 << 20)
    with pytest.raises(DataFileError, match="over the limit"):
        check_data_file(path, 10)
    os.mkfifo(tmp_path / "fifo.csv")
    with pytest.raises(DataFileError, match="not a regular file"):
        check_data_file(tmp_path / "fifo.csv", 1 << 20)
    path.unlink()  # gone before the run started
    with pytest.raises(DataFileError, match="cannot read"):
        await DataFiles().acquire(source)


def test_the_request_and_raw_data_go_to_the_worker_by_a_thread_in_pieces(monkeypatch):
    monkeypatch.setattr(inference_runs, "TRANSFER_CHUNK_BYTES", 7)
    content = bytes(range(256)) * 3
    reading, writing = os.pipe()
    got = bytearray()

    def read() -> None:
        with os.fdopen(reading, "rb") as pipe:
            got.extend(pipe.read())

    reader = threading.Thread(target=read)
    reader.start()
    inference_runs._send_request(writing, {"source": "x", "steps": 2}, DataFile("d.csv", content))
    reader.join(WAIT)
    line, _, rest = bytes(got).partition(b"\n")
    request = json.loads(line)
    assert request == {"source": "x", "steps": 2, "data_name": "d.csv", "data_size": len(content)}
    assert rest == content


def test_a_worker_that_stopped_reading_ends_the_transfer_quietly():
    reading, writing = os.pipe()
    os.close(reading)  # the worker is gone
    # a broken pipe at the first write: the transfer ends without raising
    inference_runs._send_request(writing, {"source": "x"}, DataFile("d.csv", b"1" * (1 << 20)))


def test_the_worker_reads_the_raw_data_after_the_request_line(tmp_path):
    content = data_file(tmp_path / "tokens.csv").read_bytes()
    gone = tmp_path / "replaced" / "tokens.csv"  # never opened by the worker
    request = {
        "source": TINY,
        "method": "prior",
        "steps": 2,
        "data_name": str(gone),
        "data_size": len(content),
    }
    done = subprocess.run(
        [sys.executable, "-P", "-m", "qvr_lsp.runs.worker"],
        input=json.dumps(request).encode() + b"\n" + content,
        capture_output=True,
        timeout=WAIT,
        cwd=tmp_path,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    events = [json.loads(line) for line in done.stdout.splitlines()]
    assert events[-1]["event"] == "result", done.stderr[-2000:]
    assert events[-1]["summary"]["batch"] == 4 and events[-1]["summary"]["data"] == str(gone)


# ---------------------------------------------------------- the real server


def start(client, uri: str, msg_id: str, **fields) -> asyncio.Future:
    future = client.protocol.send_request(
        lsp.WORKSPACE_EXECUTE_COMMAND,
        lsp.ExecuteCommandParams(command=RUN, arguments=[{"uri": uri, **fields}]),
        msg_id=msg_id,
    )
    return asyncio.wrap_future(future)


async def progress_of(client, uri: str, done: bool | None = None) -> dict:
    for _ in range(int(WAIT / 0.02)):
        for note in client.inference_progress:
            if note["uri"] == uri and (note["points"] if done is None else note["done"] == done):
                return note
        await asyncio.sleep(0.02)
    raise AssertionError(f"no progress for {uri}")


@pytest.mark.asyncio(loop_scope="function")
async def test_many_queued_runs_cancelled_all_end_and_the_queue_goes_on(tmp_path):
    # 50 is many for the protocol (each queued run is a request with its own progress
    # token and cancellation); that the queue stays linear in its length is measured
    # with 2,000 waiters in test_joining_and_leaving_the_queue_never_walks_it above
    count = 50
    uris = []
    for i in range(count + 1):
        (tmp_path / f"tiny{i}.qvr").write_text(TINY)
        uris.append((tmp_path / f"tiny{i}.qvr").as_uri())
    async with served(tmp_path, env={"QVR_INFERENCE_WORKERS": "1"}) as client:
        first = start(client, uris[0], "first", steps=100000)
        await progress_of(client, uris[0])
        queued = [start(client, uri, f"q{i}", steps=3) for i, uri in enumerate(uris[1:])]
        await progress_of(client, uris[-1], done=False)  # the last has joined the queue
        for i in range(count):
            client.protocol.notify(lsp.CANCEL_REQUEST, lsp.CancelParams(id=f"q{i}"))
        ended = await asyncio.wait_for(asyncio.gather(*queued, return_exceptions=True), WAIT)
        assert all(isinstance(e, JsonRpcException | asyncio.CancelledError) for e in ended)
        for uri in uris[1:]:  # each run has ended (its last note), never having had a worker
            assert (await progress_of(client, uri, done=True))["workerPid"] is None
        client.protocol.notify(lsp.CANCEL_REQUEST, lsp.CancelParams(id="first"))
        with pytest.raises((JsonRpcException, asyncio.CancelledError)):
            await asyncio.wait_for(first, WAIT)
        again = await asyncio.wait_for(start(client, uris[1], "again", steps=3), WAIT)
        assert again["status"] == "completed"


@pytest.mark.asyncio(loop_scope="function")
async def test_a_queued_run_reads_its_data_when_it_starts(tmp_path):
    """The data file is read when the run's worker starts, not while it waits: one removed
    in the meantime fails the run, with kind "data", when its turn comes."""
    for name in ("long", "queued"):
        (tmp_path / f"{name}.qvr").write_text(TINY)
    data = data_file(tmp_path / "tokens.csv")
    async with served(tmp_path, env={"QVR_INFERENCE_WORKERS": "1"}) as client:
        long_uri, queued_uri = (tmp_path / "long.qvr").as_uri(), (tmp_path / "queued.qvr").as_uri()
        first = start(client, long_uri, "long", steps=100000)
        await progress_of(client, long_uri)
        queued = start(client, queued_uri, "queued", steps=3, data="tokens.csv")
        await progress_of(client, queued_uri, done=False)  # accepted: the path was fine
        data.unlink()
        client.protocol.notify(lsp.CANCEL_REQUEST, lsp.CancelParams(id="long"))
        with pytest.raises((JsonRpcException, asyncio.CancelledError)):
            await asyncio.wait_for(first, WAIT)
        with pytest.raises(JsonRpcException) as failed:
            await asyncio.wait_for(queued, WAIT)
        assert failed.value.data["kind"] == "data" and "tokens.csv" in str(failed.value)
        # and a run of a file that is there reads it and runs
        data_file(tmp_path / "tokens.csv")
        summary = await asyncio.wait_for(
            start(client, queued_uri, "again", steps=3, data="tokens.csv"), WAIT
        )
        assert summary["status"] == "completed" and summary["batch"] == 4
