"""`WorkerSlots`: at most N at once, first come first served, waiters can give up."""

from __future__ import annotations

import asyncio

import pytest

from qvr_lsp.runs import worker_slots
from qvr_lsp.runs.worker_slots import WorkerSlots, default_size


def never() -> None:
    return None


async def test_runs_beyond_the_size_wait_in_order():
    slots = WorkerSlots(2)
    order: list[int] = []
    alive = 0
    most = 0

    async def run(i: int) -> None:
        nonlocal alive, most
        assert await slots.acquire(never) is None
        alive += 1
        most = max(most, alive)
        order.append(i)
        await asyncio.sleep(0.01)
        alive -= 1
        slots.release()

    await asyncio.gather(*(run(i) for i in range(10)))
    assert most == 2
    assert order == list(range(10))
    assert slots.busy == 0 and slots.waiting == 0


async def test_a_waiter_that_gives_up_leaves_the_queue_and_is_told_its_place():
    slots = WorkerSlots(1)
    assert await slots.acquire(never) is None
    stop = False
    places: list[int] = []
    waiting = asyncio.ensure_future(
        slots.acquire(lambda: "cancelled" if stop else None, places.append)
    )
    await asyncio.sleep(0.1)
    assert places == [1] and slots.waiting == 1
    stop = True
    assert await asyncio.wait_for(waiting, 1) == "cancelled"
    assert slots.waiting == 0
    slots.release()
    assert slots.busy == 0


async def test_a_slot_handed_to_a_cancelled_task_is_passed_on():
    slots = WorkerSlots(1)
    assert await slots.acquire(never) is None
    first = asyncio.ensure_future(slots.acquire(never))
    second = asyncio.ensure_future(slots.acquire(never))
    await asyncio.sleep(0.01)
    slots.release()  # hands the slot to `first` ...
    first.cancel()  # ... which is cancelled before it sees it
    with pytest.raises(asyncio.CancelledError):
        await first
    assert await asyncio.wait_for(second, 1) is None
    assert slots.busy == 1
    slots.release()
    assert slots.busy == 0


def test_default_size_is_the_cores_unless_set(monkeypatch):
    monkeypatch.delenv("QVR_INFERENCE_WORKERS", raising=False)
    monkeypatch.setattr(worker_slots.os, "sched_getaffinity", lambda _pid: {0, 1, 2}, raising=False)
    assert default_size() == 3
    monkeypatch.setenv("QVR_INFERENCE_WORKERS", "5")
    assert default_size() == 5
    monkeypatch.setenv("QVR_INFERENCE_WORKERS", "many")
    assert default_size() == 3


async def test_a_run_of_parallel_chains_takes_a_slot_per_process_and_keeps_its_turn():
    slots = WorkerSlots(2)
    assert await slots.acquire(never) is None  # a one-process run
    chains = asyncio.ensure_future(slots.acquire(never, count=4))  # wants both slots
    await asyncio.sleep(0.01)
    later = asyncio.ensure_future(slots.acquire(never))  # would fit, but comes after
    await asyncio.sleep(0.1)
    assert not chains.done() and not later.done() and slots.busy == 1
    slots.release()
    assert await asyncio.wait_for(chains, 1) is None and slots.busy == 2
    await asyncio.sleep(0.1)
    assert not later.done()
    slots.release(4)
    assert await asyncio.wait_for(later, 1) is None and slots.busy == 1
    slots.release()
    assert slots.busy == 0 and slots.running == 0


async def test_a_slot_freed_before_the_poller_sees_a_cancel_goes_to_the_next_live_run():
    """The stop is asked when the slot is handed over, not only on the poller's pass: a
    run cancelled a moment before the slot came free never starts a worker."""
    slots = WorkerSlots(1)
    assert await slots.acquire(never) is None
    stop = False
    cancelled = asyncio.ensure_future(slots.acquire(lambda: "cancelled" if stop else None))
    live = asyncio.ensure_future(slots.acquire(never))
    await asyncio.sleep(0)  # both queued
    assert slots.waiting == 2
    stop = True
    slots.release()  # at once: no poller pass in between
    assert slots.busy == 1 and slots.waiting == 0  # handed on in that call
    assert await asyncio.wait_for(cancelled, 1) == "cancelled"
    assert await asyncio.wait_for(live, 1) is None
    assert slots.busy == 1 and slots.running == 1 and slots.waiting == 0
    slots.release()
    assert slots.busy == 0 and slots.running == 0
