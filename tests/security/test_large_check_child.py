"""The check of a large document runs in a child held on two leashes (#24).

It had no memory limit (a text that needs more than the machine has took the
machine) and outlived a killed server (checking for nobody). Now its address
space is capped (`QVR_LARGE_CHECK_MEMORY_MB`) and it ends with the server:
the kernel's parent-death signal on Linux, a watchdog of its parent anywhere.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from lsprotocol import types as lsp

from qvr_lsp.analysis.analyzer import LARGE_DOCUMENT_CHARS
from qvr_lsp.analysis.large_check import check_in_child
from tests.lsp_depth.test_large_documents import large_text
from tests.security.support import children_of, ended_within, gone_within, served

ROOT = Path(__file__).resolve().parents[2]
WAIT = 60.0


def address_space_limit(pid: int) -> str:
    with open(f"/proc/{pid}/limits") as fh:
        for line in fh:
            if line.startswith("Max address space"):
                return line.split()[3]
    return "?"


async def test_a_text_too_large_for_the_limit_fails_the_check_not_the_machine(monkeypatch):
    monkeypatch.setenv("QVR_LARGE_CHECK_MEMORY_MB", "160")
    with pytest.raises(RuntimeError, match=r"ran out of memory \(limit 160 MiB"):
        await asyncio.wait_for(
            check_in_child(large_text(4_000_000, padded=False), False, bool), WAIT
        )


async def test_within_the_limit_the_check_gives_the_diagnostics(monkeypatch):
    monkeypatch.setenv("QVR_LARGE_CHECK_MEMORY_MB", "2048")
    pids: list[int] = []
    found = await asyncio.wait_for(
        check_in_child(large_text(20_000), False, bool, pids.append), WAIT
    )
    assert found is not None and any("missing" in d.message for d in found)
    assert pids and not os.path.exists(f"/proc/{pids[0]}/limits")  # gone when it returns


def until(predicate, seconds: float = WAIT) -> bool:  # type: ignore[no-untyped-def]
    """Whether `predicate()` comes true within `seconds` (looked at every 10 ms)."""
    deadline = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def test_the_child_caps_its_address_space_before_it_reads_the_text():
    """The header line comes first; the child sets the limit before it reads the text."""
    child = subprocess.Popen(
        [sys.executable, "-P", "-m", "qvr_lsp.analysis.large_check"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
        env={**os.environ, "QVR_SERVER_PID": str(os.getpid())},
    )
    try:
        assert child.stdin is not None
        child.stdin.write(json.dumps({"strict": False, "memory_mb": 300}).encode() + b"\n")
        child.stdin.flush()
        assert until(lambda: address_space_limit(child.pid) != "unlimited")
        assert address_space_limit(child.pid) == str(300 * 1024 * 1024)
        out, err = child.communicate(b"object A : FinSet 2\nobject A : FinSet 3\n", timeout=WAIT)
        assert child.returncode == 0, err
        assert b"QVR102" in out  # the pickled diagnostics name the duplicate
    finally:
        child.kill()
        child.wait()


def test_a_check_whose_server_ended_ends_too():
    """The server (here a middle process) ends while its check waits for the text; the
    text's pipe stays open (held by the test), so only the leash can end the check."""
    reading, writing = os.pipe()
    code = (
        "import os, subprocess, sys\n"
        "env = dict(os.environ, QVR_SERVER_PID=str(os.getpid()))\n"
        "p = subprocess.Popen([sys.executable, '-P', '-m', 'qvr_lsp.analysis.large_check'],"
        " stdin=int(sys.argv[1]), stdout=-3, stderr=-3, env=env)\n"
        "print(p.pid, flush=True)\n"
    )
    try:
        middle = subprocess.run(
            [sys.executable, "-c", code, str(reading)],
            capture_output=True,
            text=True,
            timeout=WAIT,
            check=True,
            cwd=ROOT,
            pass_fds=(reading,),
        )
        orphan = int(middle.stdout)
        assert gone_within(orphan, 10.0), "the check outlived its server"
    finally:
        os.close(reading)
        os.close(writing)


@pytest.mark.asyncio(loop_scope="function")
async def test_the_large_check_dies_with_a_killed_server(tmp_path):
    text = large_text(LARGE_DOCUMENT_CHARS * 3, padded=False)
    async with served(tmp_path) as client:
        server = client._server.pid
        uri = (tmp_path / "large.qvr").as_uri()
        client.text_document_did_open(
            lsp.DidOpenTextDocumentParams(lsp.TextDocumentItem(uri, "qvr", 1, text))
        )
        checking: list[int] = []
        for _ in range(int(WAIT / 0.02)):
            checking = children_of(server, b"qvr_lsp.analysis.large_check")
            if checking:
                break
            await asyncio.sleep(0.02)
        assert checking, "no large-document check started"
        assert await limited(checking[0])
        os.kill(server, signal.SIGKILL)
        assert await ended_within(checking[0], 10.0), "the check outlived the killed server"


async def limited(pid: int) -> bool:
    """Whether `pid` sets its limit soon (it does so once it has read its header line)."""
    for _ in range(500):
        if address_space_limit(pid) != "unlimited":
            return True
        await asyncio.sleep(0.01)
    return False
