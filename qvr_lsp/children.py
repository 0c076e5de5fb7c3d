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
import sys
from pathlib import Path

#: The folder that holds the qvr packages: children run here, never in the workspace.
PACKAGE_ROOT = Path(__file__).resolve().parent.parent
#: How long a child has to exit after SIGTERM before it is killed.
STOP_GRACE_SECONDS = 2.0


def python_module(module: str) -> tuple[str, ...]:
    """The command that runs `python -m module` in this interpreter, safely (see above)."""
    return (sys.executable, "-P", "-m", module)


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
