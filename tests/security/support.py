"""A hostile workspace and the real server started in it, the way an editor starts it.

Editors start the server with the project as its working directory; tests here
do the same (pytest-lsp's fixtures cannot choose the directory, so `served`
starts the server itself).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import resource
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

from pygls.client import JsonRPCClient

from tests.lsp.support import initialize_params
from tests.lsp_commands.conftest import TINY, make_recording_client

__all__ = [
    "TINY",
    "alive",
    "ended_within",
    "gone_within",
    "planted",
    "served",
    "trap",
    "workers_of",
]

SESSION_SECONDS = 30.0


def trap(folder: Path, module: str, marker: Path) -> None:
    """A `module.py` in `folder` that leaves `marker` behind if it is ever imported."""
    (folder / f"{module}.py").write_text(
        f"open({str(marker / module)!r}, 'w').write('imported from the workspace')\n"
        "raise SystemExit('a workspace module was imported')\n"
    )


def planted(marker: Path) -> list[str]:
    """The names of the workspace modules that were imported (their marker files)."""
    return sorted(p.name for p in marker.iterdir()) if marker.exists() else []


@contextlib.asynccontextmanager
async def served(
    root: Path,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    memory_limit: int | None = None,
    capture_stderr: bool = False,
) -> AsyncIterator:
    """A recording client talking to `python -m qvr_lsp` started in `cwd` (default `root`).

    `memory_limit` caps the server's address space (bytes), so a test of a
    memory exhaustion fails instead of exhausting the machine. With
    `capture_stderr` the server's stderr is left for the test to read
    (`client._server.stderr`) instead of being forwarded.
    """

    def limit() -> None:
        if memory_limit is not None:
            resource.setrlimit(resource.RLIMIT_AS, (memory_limit, memory_limit))

    client = make_recording_client()
    start = JsonRPCClient.start_io if capture_stderr else type(client).start_io
    await start(
        client,
        sys.executable,
        "-m",
        "qvr_lsp",
        cwd=str(cwd or root),
        env={**os.environ, **(env or {})},
        preexec_fn=limit,
    )
    try:
        await asyncio.wait_for(
            client.initialize_session(initialize_params("vscode", root=root)), SESSION_SECONDS
        )
        yield client
    finally:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(client.shutdown_session(), SESSION_SECONDS)
        await client.stop()


def alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie waiting for init to reap it has ended)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
    except OSError:  # no /proc: ask the kernel
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True


def gone_within(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


async def ended_within(pid: int, seconds: float) -> bool:
    """`gone_within` for async tests: the client keeps reading the server meanwhile."""
    deadline = time.monotonic() + seconds
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.02)
    return True


def workers_of(server_pid: int) -> list[int]:
    """The live inference workers whose parent is `server_pid` (from /proc)."""
    return children_of(server_pid, b"qvr_lsp.runs.worker")


def children_of(server_pid: int, marker: bytes) -> list[int]:
    """The live children of `server_pid` whose command line holds `marker` (from /proc).

    Read from the parent's own list of children (`/proc/PID/task/TID/children`, one per
    thread), not a scan of every process: sampled every 20 ms for a whole test, the scan
    cost seconds of CPU. A kernel without the list gets the scan."""
    if not os.path.exists(f"/proc/{server_pid}/task/{server_pid}/children"):
        return _scanned_children(server_pid, marker)
    children: set[int] = set()
    try:
        tasks = os.listdir(f"/proc/{server_pid}/task")
    except OSError:  # the parent has ended
        return []
    for task in tasks:
        try:
            with open(f"/proc/{server_pid}/task/{task}/children") as fh:
                children.update(int(pid) for pid in fh.read().split())
        except OSError:  # the thread ended meanwhile
            continue
    found = []
    for pid in sorted(children):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                command = fh.read()
        except OSError:
            continue
        if marker in command and alive(pid):
            found.append(pid)
    return found


def _scanned_children(server_pid: int, marker: bytes) -> list[int]:
    """`children_of` by a scan of every process in /proc."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                command = fh.read()
        except OSError:
            continue
        if fields[0] != "Z" and int(fields[1]) == server_pid and marker in command:
            found.append(int(entry))
    return found
