"""Scans of the workspace's files: in a thread of their own, shared, stopped when nobody waits.

`workspace/symbol` (an editor sends one per keystroke in Ctrl+T, cancelling
the one before) and `workspace/diagnostic` walk the workspace's `.qvr` files
and read, parse or check those not cached. Each used to run in the event
loop's default thread pool (six threads on two cores) and go on after its
request was cancelled: typing in Ctrl+T over 10,000 files kept all six busy,
so a diagram, drawn in that pool, waited 4.6-9 s behind them, and their hold
on the GIL stalled the event loop for seconds. Now a scan:

- runs in the one thread of `Scans`, never in the default pool, so the
  diagrams, outlines and hovers drawn there are never behind a scan, and at
  most one thread's worth of scanning competes with the event loop;
- checks its `Cancel` between files and stops once no request waits for it
  (each waiting request that is cancelled or answered lets go of it);
- is shared: a request that wants the scan already running under the same
  key waits for that one instead of starting its own; what each file gave
  is cached by the callers (by modification time and size), so a scan after
  a stopped one reads only what the stopped one had not.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Callable, Hashable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")

#: A scan lists at most this many `.qvr` files.
MAX_FILES = 5000
#: Folders a scan does not enter (besides hidden ones).
SKIPPED_DIRS = frozenset({"node_modules", "__pycache__", "venv", "build", "dist", "site-packages"})


class ScanCancelled(Exception):
    """The scan stopped between two files: no request waits for it any more."""


class Cancel:
    """The flag a scan reads between files (set on the event loop, read in the thread)."""

    __slots__ = ("cancelled",)

    def __init__(self) -> None:
        self.cancelled = False

    def check(self) -> None:
        """Raise ScanCancelled once the flag is set."""
        if self.cancelled:
            raise ScanCancelled


@dataclass(eq=False)
class _Job(Generic[T]):
    future: asyncio.Future[T]
    cancel: Cancel
    waiters: int = 0


class Scans:
    """The server's workspace scans: one thread, shared jobs, stopped when nobody waits."""

    def __init__(self) -> None:
        self._executor = ThreadPoolExecutor(1, thread_name_prefix="qvr-scan")
        self._jobs: dict[Hashable, _Job[Any]] = {}
        #: scans started and scans stopped early (for the tests and the log)
        self.started = 0
        self.stopped = 0

    async def run(self, key: Hashable | None, work: Callable[[Cancel], T]) -> T:
        """`work(cancel)` in the scan thread; shared with the requests that want `key` now.

        A `key` of None is never shared. Raises ScanCancelled only when the
        job stopped for another reason than this request leaving (which sees
        its own CancelledError).
        """
        job: _Job[T] | None = self._jobs.get(key) if key is not None else None
        if job is None or job.cancel.cancelled or job.future.done():
            job = self._start(key, work)
        job.waiters += 1
        try:
            return await asyncio.shield(job.future)
        finally:
            job.waiters -= 1
            if job.waiters == 0 and not job.future.done():
                job.cancel.cancelled = True  # nobody waits: stop at the next file
                self.stopped += 1

    def _start(self, key: Hashable | None, work: Callable[[Cancel], T]) -> _Job[T]:
        cancel = Cancel()
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.run_in_executor(self._executor, work, cancel)
        job = _Job(future, cancel)
        self.started += 1
        if key is not None:
            self._jobs[key] = job

        def done(_: object) -> None:
            if key is not None and self._jobs.get(key) is job:
                del self._jobs[key]
            if not future.cancelled():
                future.exception()  # retrieved: a stopped scan nobody awaits is not an error

        future.add_done_callback(done)
        return job

    def shutdown(self) -> None:
        for job in self._jobs.values():
            job.cancel.cancelled = True
        self._executor.shutdown(wait=False, cancel_futures=True)


def list_files(roots: list[str], cancel: Cancel, deadline: float = float("inf")) -> list[str]:
    """The `.qvr` files under `roots` (at most MAX_FILES; what was found by `deadline`),
    hidden and SKIPPED_DIRS folders left out; stops when `cancel` is set."""
    found: list[str] = []
    for root in roots:
        for folder, dirs, names in os.walk(root):
            cancel.check()
            dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in SKIPPED_DIRS)
            found += [os.path.join(folder, n) for n in sorted(names) if n.endswith(".qvr")]
            if len(found) >= MAX_FILES or time.monotonic() > deadline:
                return found[:MAX_FILES]
    return found
