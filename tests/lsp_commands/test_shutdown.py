"""Shutting the server down while a run is going: the answer is clean and no worker survives."""

from __future__ import annotations

import asyncio
import os
import time

import pytest
import pytest_lsp
from lsprotocol import types as lsp

from tests.lsp.support import RecordingClient, initialize_params
from tests.lsp_commands.conftest import CONFIG, TINY

pytestmark = pytest.mark.asyncio(loop_scope="function")


@pytest_lsp.fixture(config=CONFIG)
async def client(lsp_client: RecordingClient, tmp_path):
    await lsp_client.initialize_session(initialize_params("vscode", root=tmp_path))
    yield  # the test itself shuts the server down


async def test_shutdown_during_a_run_answers_and_stops_the_worker(client, tmp_path):
    path = tmp_path / "tiny.qvr"
    path.write_text(TINY)
    client.protocol.send_request(
        lsp.WORKSPACE_EXECUTE_COMMAND,
        lsp.ExecuteCommandParams(
            command="qvr.runInference", arguments=[{"uri": path.as_uri(), "steps": 100000}]
        ),
    )
    deadline = time.monotonic() + 60
    while not any(n["points"] for n in client.inference_progress):
        assert time.monotonic() < deadline, "the run never started"
        await asyncio.sleep(0.05)
    pid = client.inference_progress[-1]["workerPid"]
    try:
        await asyncio.wait_for(client.shutdown_async(None), 30)
        shutdown_error = None
    except Exception as exc:
        shutdown_error = exc
    client.exit(None)  # the server goes in any case; the worker must go with it
    await asyncio.wait_for(client._server.wait(), 30)
    assert _gone(pid), f"worker {pid} outlived the server"
    assert shutdown_error is None, shutdown_error


def _gone(pid: int) -> bool:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False
