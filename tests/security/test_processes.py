"""Workers never outlive the server, never outnumber the cores, and `exit` is quick and quiet.

Against the real server: a worker ended with a killed server, runs queued
beyond `QVR_INFERENCE_WORKERS`, a queued run cancelled before its worker
starts, and `exit` in the middle of a run.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException

from tests.security.support import TINY, alive, ended_within, gone_within, served, workers_of

RUN = "qvr.runInference"
WAIT = 120.0


def start(client, uri: str, steps: int, msg_id: str | None = None) -> asyncio.Future:
    future = client.protocol.send_request(
        lsp.WORKSPACE_EXECUTE_COMMAND,
        lsp.ExecuteCommandParams(command=RUN, arguments=[{"uri": uri, "steps": steps}]),
        msg_id=msg_id,
    )
    return asyncio.wrap_future(future)


async def running_worker(client, uri: str) -> int:
    """The pid of the worker of `uri`'s run, once it reported progress."""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        for note in client.inference_progress:
            if note["uri"] == uri and note["points"] and not note["done"]:
                return note["workerPid"]
        await asyncio.sleep(0.05)
    raise AssertionError(f"no progress for {uri}")


def documents(root: Path, count: int) -> list[str]:
    uris = []
    for i in range(count):
        path = root / f"tiny{i}.qvr"
        path.write_text(TINY)
        uris.append(path.as_uri())
    return uris


@pytest.mark.asyncio(loop_scope="function")
async def test_a_worker_dies_with_a_killed_server(tmp_path):
    (uri,) = documents(tmp_path, 1)
    async with served(tmp_path) as client:
        start(client, uri, 100000)
        worker = await running_worker(client, uri)
        os.kill(client._server.pid, signal.SIGKILL)
        assert await ended_within(worker, 2.0), f"worker {worker} outlived the killed server"


def test_the_watchdog_ends_a_worker_whose_parent_is_gone_without_the_kernel_signal():
    """The portable half: a process that only runs the watchdog (no PR_SET_PDEATHSIG)."""
    watch = "from qvr_lsp.runs.worker import _watch_parent; _watch_parent({parent}, 0.05)"
    child = (
        "import os, subprocess, sys\n"
        f"code = {watch!r}.format(parent=os.getpid())\n"
        "p = subprocess.Popen([sys.executable, '-c', code], stdout=-3, stderr=-3)\n"
        "print(p.pid, flush=True)\n"
    )
    middle = subprocess.run(
        [sys.executable, "-c", child], capture_output=True, text=True, timeout=60, check=True
    )
    orphan = int(middle.stdout)
    assert gone_within(orphan, 5.0), "the orphan kept running"


@pytest.mark.asyncio(loop_scope="function")
async def test_runs_beyond_the_limit_wait_and_all_finish(tmp_path):
    """Three runs, one slot: two wait, and the last one's turn comes when a run that
    itself waited ends. (One slot, not the cores: a limit that fell back to the cores
    of a two-core machine would pass at two.)"""
    uris = documents(tmp_path, 3)
    async with served(tmp_path, env={"QVR_INFERENCE_WORKERS": "1"}) as client:
        server = client._server.pid
        pending = [start(client, uri, 3) for uri in uris]
        most = 0
        together = asyncio.gather(*pending)
        while not together.done():
            most = max(most, len(workers_of(server)))
            await asyncio.sleep(0.02)
        summaries = await asyncio.wait_for(together, WAIT)
        assert [s["status"] for s in summaries] == ["completed"] * len(uris)
        assert most == 1, f"{most} workers were alive at once"


@pytest.mark.asyncio(loop_scope="function")
async def test_a_queued_run_can_be_cancelled_before_its_worker_starts(tmp_path):
    first, second = documents(tmp_path, 2)
    async with served(tmp_path, env={"QVR_INFERENCE_WORKERS": "1"}) as client:
        server = client._server.pid
        running = start(client, first, 100000, msg_id="first")
        worker = await running_worker(client, first)
        queued = start(client, second, 3, msg_id="second")
        await asyncio.sleep(0.5)
        assert workers_of(server) == [worker]
        client.protocol.notify(lsp.CANCEL_REQUEST, lsp.CancelParams(id="second"))
        with pytest.raises((JsonRpcException, asyncio.CancelledError)):
            await asyncio.wait_for(queued, 10)
        client.protocol.notify(lsp.CANCEL_REQUEST, lsp.CancelParams(id="first"))
        with pytest.raises((JsonRpcException, asyncio.CancelledError)):
            await asyncio.wait_for(running, 10)
        assert await ended_within(worker, 5.0)
        # the run's last progress note may trail the cancelled request's answer
        ended: list[dict] = []
        for _ in range(200):
            ended = [n for n in client.inference_progress if n["uri"] == second and n["done"]]
            if ended:
                break
            await asyncio.sleep(0.05)
        assert ended and ended[-1]["workerPid"] is None  # it never started a worker
        summary = await asyncio.wait_for(start(client, second, 3), WAIT)  # the slot is free
        assert summary["status"] == "completed"


@pytest.mark.asyncio(loop_scope="function")
async def test_exit_during_a_run_is_quick_and_quiet(tmp_path):
    (uri,) = documents(tmp_path, 1)
    async with served(tmp_path, capture_stderr=True) as client:
        start(client, uri, 100000)
        worker = await running_worker(client, uri)
        server = client._server
        started = time.monotonic()
        client.exit(None)  # no shutdown first: the exit code says so
        errors = await asyncio.wait_for(server.stderr.read(), 10)
        await asyncio.wait_for(server.wait(), 10)
        took = time.monotonic() - started
        assert server.returncode == 1
        assert took < 3.0, f"exit took {took:.1f} s"
        assert b"Traceback" not in errors and len(errors) < 2000, errors[:2000]
        assert not alive(worker)
