"""Keeping Python's cycle collector off the path of an edit.

A checked 5,000-line file is some 300,000 objects the collector tracks; a
full collection of them takes over 100 ms, and the collector starts one
every analysis or two, in whichever thread allocates next, so an edit's
diagnostics would wait for it. What the checker builds holds no reference
cycles (reference counting frees it), so the server process freezes what
exists after each analysis (`gc.freeze`: later collections skip it) and
collects everything only once the user has paused for a while.
"""

from __future__ import annotations

import asyncio
import gc

IDLE_SECONDS = 20.0


class Collector:
    """Freezes after each analysis; a full collection after `idle` quiet seconds."""

    def __init__(self, idle: float = IDLE_SECONDS) -> None:
        self.idle = idle
        self._pending: asyncio.TimerHandle | None = None
        self.collections = 0

    def analysed(self) -> None:
        """Call on the event loop once an analysis is done."""
        gc.freeze()
        if self._pending is not None:
            self._pending.cancel()
        self._pending = asyncio.get_running_loop().call_later(self.idle, self.collect)

    def collect(self) -> None:
        """A full collection of everything, frozen or not, then freeze the survivors."""
        self._pending = None
        gc.unfreeze()
        gc.collect()
        gc.freeze()
        self.collections += 1

    def close(self) -> None:
        if self._pending is not None:
            self._pending.cancel()
            self._pending = None
