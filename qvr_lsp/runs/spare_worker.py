"""One inference worker started before it is needed, so Run does not wait for torch to load.

A worker spends its first seconds starting Python and importing torch and the runtime;
the run the user clicked for waited for all of it. The server now keeps one spare:
started in the background when a document first shows a runnable program (its Run
lens), and again each time a run takes it. The spare imports what a run needs
(`QVR_WORKER_WARM`, see `worker.main`) and then waits on its stdin for a request like
any worker; it is one more process of the same kind, niced, killed with the server,
its memory limit set from the request it gets. The server process itself never
imports torch. `QVR_SPARE_WORKER=0` turns the spare off (each run starts its own).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Awaitable, Callable

log = logging.getLogger("qvr_lsp")

#: The environment variable a worker reads to import the runtime before its request.
WARM_VARIABLE = "QVR_WORKER_WARM"
Start = Callable[[int, bool], Awaitable[asyncio.subprocess.Process]]  # (stdin fd, warm)


def enabled() -> bool:
    return os.environ.get("QVR_SPARE_WORKER", "1") != "0"


class SpareWorker:
    """At most one started worker with the write end of its stdin, waiting for a run."""

    def __init__(self, start: Start) -> None:
        self._start = start
        self._spare: tuple[asyncio.subprocess.Process, int] | None = None
        self._starting: asyncio.Task[None] | None = None

    def prepare(self) -> None:
        """Start a spare in the background unless there is one (or one is starting)."""
        if not enabled() or self._spare is not None or self._starting is not None:
            return
        self._starting = asyncio.ensure_future(self._start_one())

    async def _start_one(self) -> None:
        reading, writing = os.pipe()
        try:
            proc = await self._start(reading, True)
        except Exception as e:  # a run then starts its own worker
            log.warning("could not start a spare inference worker: %s", e)
            os.close(writing)
            return
        finally:
            os.close(reading)
            self._starting = None
        self._spare = (proc, writing)

    async def take(self) -> tuple[asyncio.subprocess.Process, int] | None:
        """The spare and its stdin's write end, if one is alive; it is the caller's now. A
        spare being started is waited for (a process starts in milliseconds; what it then
        loads is what the run saves), so no second worker is started beside it."""
        if self._starting is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.shield(self._starting)
        spare, self._spare = self._spare, None
        if spare is not None and spare[0].returncode is not None:  # it died waiting
            os.close(spare[1])
            return None
        return spare

    @property
    def pid(self) -> int | None:
        return self._spare[0].pid if self._spare is not None else None

    def kill(self) -> None:
        """At exit: the spare does not outlive the server."""
        if self._starting is not None:
            self._starting.cancel()
        spare, self._spare = self._spare, None
        if spare is not None:
            with contextlib.suppress(ProcessLookupError):
                spare[0].kill()
            with contextlib.suppress(OSError):
                os.close(spare[1])
