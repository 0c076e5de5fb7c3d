"""At most N inference workers alive at once; further runs wait their turn, in order.

Twenty runs started together used to start twenty workers: 6.3 GB, every
one slowed by the others, none finishing. With a slot per core (by default)
runs beyond the limit wait, first come first served, so together they take
about as long as one after another, and a waiting run can still be cancelled.
The size comes from `QVR_INFERENCE_WORKERS`, else the cores this process may use.
"""

from __future__ import annotations

import asyncio
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
    """A first-come-first-served counting semaphore whose waiters can give up.

    A run may take several slots at once (NUTS chains in parallel processes take
    one per process, never more than the size); it then waits until that many
    are free, and no later run overtakes it.
    """

    def __init__(self, size: int | None = None) -> None:
        self.size = size if size is not None else default_size()
        self.busy = 0  # slots taken
        self.running = 0  # runs holding them
        self._waiters: deque[tuple[asyncio.Future[None], int]] = deque()

    @property
    def waiting(self) -> int:
        return sum(1 for w, _ in self._waiters if not w.done())

    def weight(self, count: int) -> int:
        """How many slots a run that wants `count` takes: at least 1, at most all."""
        return max(1, min(int(count), self.size))

    async def acquire(
        self,
        stop_reason: Callable[[], str | None],
        on_wait: Callable[[int], None] | None = None,
        count: int = 1,
    ) -> str | None:
        """Take `count` slots (None), or the reason `stop_reason` gave while waiting.

        `on_wait(ahead)` hears how many runs are ahead whenever that changes.
        Give back the same `count` to `release`.
        """
        count = self.weight(count)
        if self.busy + count <= self.size and not self._waiters:
            self.busy += count
            self.running += 1
            return None
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append((turn, count))
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
            return None  # `_hand_over` gave us the slots: `busy` already counts them
        except BaseException:  # cancelled while waiting
            if turn.done() and not turn.cancelled():
                self.release(count)  # the slots came just now: pass them on
            else:
                self._leave(turn)
            raise

    def release(self, count: int = 1) -> None:
        """Give back `count` slots and hand them to the waiters in order, as they fit."""
        self.busy -= self.weight(count)
        self.running -= 1
        self._hand_over()

    def _hand_over(self) -> None:
        while self._waiters:
            turn, count = self._waiters[0]
            if turn.done():
                self._waiters.popleft()
                continue
            if self.busy + count > self.size:
                return
            self._waiters.popleft()
            self.busy += count
            self.running += 1
            turn.set_result(None)

    def _leave(self, turn: asyncio.Future[None]) -> None:
        turn.cancel()
        self._waiters = deque(w for w in self._waiters if w[0] is not turn)
        self._hand_over()  # a large run leaving may let smaller ones behind it start

    def _ahead_of(self, turn: asyncio.Future[None]) -> int:
        ahead = self.running  # the runs going now
        for waiter, _ in self._waiters:
            if waiter is turn:
                break
            ahead += not waiter.done()
        return ahead
