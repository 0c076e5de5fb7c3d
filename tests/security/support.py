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

from tests.lsp.support import initialize_params
from tests.lsp_commands.conftest import TINY, make_recording_client

__all__ = ["TINY", "alive", "gone_within", "planted", "served", "trap"]

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
) -> AsyncIterator:
    """A recording client talking to `python -m qvr_lsp` started in `cwd` (default `root`).

    `memory_limit` caps the server's address space (bytes), so a test of a
    memory exhaustion fails instead of exhausting the machine.
    """

    def limit() -> None:
        if memory_limit is not None:
            resource.setrlimit(resource.RLIMIT_AS, (memory_limit, memory_limit))

    client = make_recording_client()
    await client.start_io(
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
        time.sleep(0.05)
    return True
