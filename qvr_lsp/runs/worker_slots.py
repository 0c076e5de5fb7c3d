"""At most N inference workers alive at once; further runs wait their turn, in order.

Twenty runs started together used to start twenty workers: 6.3 GB, every
one slowed by the others, none finishing. With a slot per core (by default)
runs beyond the limit wait, first come first served, so together they take
about as long as one after another, and a waiting run can still be cancelled.
The size comes from `QVR_INFERENCE_WORKERS`, else the cores this process may use.

The queue is linear in the runs that wait: a waiter joins and leaves in
O(1) (an ordered dict keyed by a ticket), and one poller, not one per waiter,
asks each waiter's `stop_reason` and tells it its place, a pass over the
queue every `POLL_SECONDS` while anyone waits. A waiter hears its place when
it joins and then at most every `REPORT_SECONDS` when it changed. (Each
waiter polling on its own and counting the runs ahead of it, and leaving by
rebuilding the queue, made cancelling 1,000 queued runs take 56 s.)
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
from collections import OrderedDict
from collections.abc import Callable

log = logging.getLogger("qvr_lsp")

POLL_SECONDS = 0.05
#: A waiter is told its place again at most this often.
REPORT_SECONDS = 0.5


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


class _Waiter:
    """One run in the queue: its turn (None when served, or the reason it stopped)."""

    __slots__ = ("count", "on_wait", "shown", "shown_at", "stop_reason", "turn")

    def __init__(
        self,
        turn: asyncio.Future[str | None],
        count: int,
        stop_reason: Callable[[], str | None],
        on_wait: Callable[[int], None] | None,
    ) -> None:
        self.turn = turn
        self.count = count
        self.stop_reason = stop_reason
        self.on_wait = on_wait
        self.shown = -1
        self.shown_at = float("-inf")


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
        self._waiters: OrderedDict[int, _Waiter] = OrderedDict()
        self._tickets = itertools.count()
        self._poller: asyncio.Task[None] | None = None
        #: how many times a waiter was looked at by the poller (linear in the queue per pass)
        self.visits = 0

    @property
    def waiting(self) -> int:
        return len(self._waiters)

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

        `on_wait(ahead)` hears how many runs are ahead when the run joins the
        queue and, throttled, whenever that changes. Give back the same
        `count` to `release`.
        """
        count = self.weight(count)
        if self.busy + count <= self.size and not self._waiters:
            self.busy += count
            self.running += 1
            return None
        reason = stop_reason()
        if reason is not None:
            return reason
        loop = asyncio.get_running_loop()
        waiter = _Waiter(loop.create_future(), count, stop_reason, on_wait)
        ticket = next(self._tickets)
        ahead = self.running + len(self._waiters)  # every waiter is ahead of a new one
        self._waiters[ticket] = waiter
        if on_wait is not None:
            waiter.shown, waiter.shown_at = ahead, loop.time()
            on_wait(ahead)
        if self._poller is None or self._poller.done():
            self._poller = loop.create_task(self._poll())
        try:
            return await waiter.turn  # None: `_hand_over` gave us the slots (`busy` counts them)
        except BaseException:  # cancelled while waiting
            turn = waiter.turn
            if turn.done() and not turn.cancelled() and turn.result() is None:
                self.release(count)  # the slots came just now: pass them on
            else:
                self._leave(ticket)
            raise

    def release(self, count: int = 1) -> None:
        """Give back `count` slots and hand them to the waiters in order, as they fit."""
        self.busy -= self.weight(count)
        self.running -= 1
        self._hand_over()

    def _hand_over(self) -> None:
        while self._waiters:
            ticket, waiter = next(iter(self._waiters.items()))
            if self.busy + waiter.count > self.size:
                return
            del self._waiters[ticket]
            if waiter.turn.done():  # cancelled, and not yet gone
                continue
            # asked again here, not only by the poller: a run cancelled since its last
            # pass must not start a worker because a slot came free first
            reason = waiter.stop_reason()
            if reason is not None:
                waiter.turn.set_result(reason)
                continue
            self.busy += waiter.count
            self.running += 1
            waiter.turn.set_result(None)

    def _leave(self, ticket: int) -> None:
        if self._waiters.pop(ticket, None) is not None:
            self._hand_over()  # a large run leaving may let smaller ones behind it start

    async def _poll(self) -> None:
        """While anyone waits: every POLL_SECONDS, one pass over the queue."""
        while self._waiters:
            await asyncio.sleep(POLL_SECONDS)
            self._pass()

    def _pass(self) -> None:
        """Ask each waiter whether it stops; tell the others their place if it changed."""
        now = asyncio.get_running_loop().time()
        ahead = self.running
        stopped: list[tuple[int, str]] = []
        for ticket, waiter in list(self._waiters.items()):
            self.visits += 1
            if waiter.turn.done():
                continue
            reason = waiter.stop_reason()
            if reason is not None:
                stopped.append((ticket, reason))
                continue
            report = waiter.on_wait is not None and ahead != waiter.shown
            if report and now - waiter.shown_at >= REPORT_SECONDS:
                waiter.shown, waiter.shown_at = ahead, now
                _call(waiter.on_wait, ahead)
            ahead += 1
        for ticket, reason in stopped:
            waiter = self._waiters.pop(ticket)
            if not waiter.turn.done():
                waiter.turn.set_result(reason)
        if stopped:
            self._hand_over()


def _call(listener: Callable[[int], None] | None, value: int) -> None:
    if listener is None:
        return
    try:
        listener(value)
    except Exception:  # a report that fails must not stop the queue
        log.exception("a queued run's report failed")
