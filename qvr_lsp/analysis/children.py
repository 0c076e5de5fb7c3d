"""How the server starts a Python child process: never importing from the workspace.

Editors start the server in the workspace, so its working directory is the
user's project. A child started there with `python -m` would put that folder
first on `sys.path`, and a `torch.py` or `lark.py` in it would run in place of
the real module. `-P` keeps the working directory off `sys.path`, and the child
runs in the package's own folder.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from pathlib import Path

from qvr_lsp.analysis.lifeline import SERVER_PID_VARIABLE

#: The folder that holds the qvr packages: children run here, never in the workspace.
PACKAGE_ROOT = Path(__file__).resolve().parent.parent
#: How long a child has to exit after SIGTERM before it is killed.
STOP_GRACE_SECONDS = 2.0


def python_module(module: str) -> tuple[str, ...]:
    """The command that runs `python -m module` in this interpreter, safely (see above)."""
    return (sys.executable, "-P", "-m", module)


def child_environment() -> dict[str, str]:
    """The server's environment, with this package importable even when not installed.

    Relative `PYTHONPATH` entries are dropped: they would name folders of
    whatever directory the child starts in. `QVR_SERVER_PID` lets the child
    end with the server (`lifeline.die_with_parent`).
    """
    env = dict(os.environ)
    given = env.get("PYTHONPATH", "").split(os.pathsep)
    paths = [str(PACKAGE_ROOT), *(p for p in given if os.path.isabs(p))]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONSAFEPATH"] = "1"  # what -P does, for any Python the child itself may start
    env[SERVER_PID_VARIABLE] = str(os.getpid())  # the child ends when this process does
    return env


def write_all(fd: int, *pieces: bytes, chunk: int = 1 << 20) -> None:
    """In a thread: write `pieces` to the pipe `fd` in chunks, then close it.

    Never copies a piece whole. A child that stopped reading (it ended) makes
    the write fail with a broken pipe, which ends the writing quietly: the
    child's exit says what happened.
    """
    try:
        for piece in pieces:
            view = memoryview(piece)
            while view:
                view = view[os.write(fd, view[:chunk]) :]
    except OSError:  # BrokenPipeError above all
        pass
    finally:
        os.close(fd)


async def stop_child(proc: asyncio.subprocess.Process) -> None:
    """Terminate, then kill, and reap: when this returns the process is gone."""
    if proc.returncode is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        proc.terminate()
    try:
        await asyncio.wait_for(proc.wait(), STOP_GRACE_SECONDS)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()
