"""Keeping Python's cycle collector off the path of an edit.

A checked 5,000-line file is some 300,000 objects the collector tracks; a
full collection of them takes over 100 ms, and the collector starts one
every analysis or two, in whichever thread allocates next, so an edit's
diagnostics (or the hover after it) would wait for it. What the checker
builds holds no reference cycles (reference counting frees it), so the
server process turns automatic collection off and collects when the user
has paused for a while, or after many analyses without a pause.
"""

from __future__ import annotations

import asyncio
import gc

IDLE_SECONDS = 10.0
MOST_ANALYSES_BETWEEN = 500


class Collector:
    """Owns the process's cycle collection: after `idle` quiet seconds, never mid-edit."""

    def __init__(self, idle: float = IDLE_SECONDS, most: int = MOST_ANALYSES_BETWEEN) -> None:
        self.idle = idle
        self.most = most
        self.collections = 0
        self._since = 0
        self._pending: asyncio.TimerHandle | None = None
        gc.disable()

    def analysed(self) -> None:
        """Call on the event loop once an analysis (or building its tables) is done."""
        self._since += 1
        if self._pending is not None:
            self._pending.cancel()
        if self._since >= self.most:
            self.collect()
        else:
            self._pending = asyncio.get_running_loop().call_later(self.idle, self.collect)

    def collect(self) -> None:
        self._pending = None
        self._since = 0
        gc.collect()
        self.collections += 1

    def close(self) -> None:
        """Stop collecting on a timer and give collection back to Python."""
        if self._pending is not None:
            self._pending.cancel()
            self._pending = None
        gc.enable()
