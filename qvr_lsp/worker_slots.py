"""At most N inference workers alive at once; further runs wait their turn, in order.

Twenty runs started together used to start twenty workers: 6.3 GB, every
one slowed by the others, none finishing. With a slot per core (by default)
runs beyond the limit wait, first come first served, so together they take
about as long as one after another, and a waiting run can still be cancelled.
The size comes from `QVR_INFERENCE_WORKERS`, else the cores this process may use.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections import deque
from collections.abc import Callable

log = logging.getLogger("qvr_lsp")

POLL_SECONDS = 0.05


def default_size() -> int:
    """`QVR_INFERENCE_WORKERS` when it is a positive integer, else the usable cores."""
    value = os.environ.get("QVR_INFERENCE_WORKERS", "").strip()
    if value:
        if value.isdigit() and int(value) > 0:
            return int(value)
        log.warning("QVR_INFERENCE_WORKERS=%r is not a positive integer; using the cores", value)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not on Linux
        return max(1, os.cpu_count() or 1)


class WorkerSlots:
    """A first-come-first-served counting semaphore whose waiters can give up."""

    def __init__(self, size: int | None = None) -> None:
        self.size = size if size is not None else default_size()
        self.busy = 0
        self._waiters: deque[asyncio.Future[None]] = deque()

    @property
    def waiting(self) -> int:
        return sum(1 for w in self._waiters if not w.done())

    async def acquire(
        self,
        stop_reason: Callable[[], str | None],
        on_wait: Callable[[int], None] | None = None,
    ) -> str | None:
        """Take a slot (None), or the reason `stop_reason` gave while waiting for one.

        `on_wait(ahead)` hears how many runs are ahead whenever that changes.
        """
        if self.busy < self.size and not self._waiters:
            self.busy += 1
            return None
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(turn)
        shown = -1
        try:
            while not turn.done():
                reason = stop_reason()
                if reason is not None:
                    self._leave(turn)
                    return reason
                ahead = self._ahead_of(turn)
                if on_wait is not None and ahead != shown:
                    shown = ahead
                    on_wait(ahead)
                await asyncio.wait({turn}, timeout=POLL_SECONDS)
            return None  # `release` handed its slot over: `busy` already counts it
        except BaseException:  # cancelled while waiting
            if turn.done() and not turn.cancelled():
                self.release()  # the slot came just now: pass it on
            else:
                self._leave(turn)
            raise

    def release(self) -> None:
        """Hand the slot to the first waiter, or free it."""
        while self._waiters:
            turn = self._waiters.popleft()
            if not turn.done():
                turn.set_result(None)
                return
        self.busy -= 1

    def _leave(self, turn: asyncio.Future[None]) -> None:
        turn.cancel()
        with contextlib.suppress(ValueError):
            self._waiters.remove(turn)

    def _ahead_of(self, turn: asyncio.Future[None]) -> int:
        ahead = self.busy  # the runs going now
        for waiter in self._waiters:
            if waiter is turn:
                break
            ahead += not waiter.done()
        return ahead
