"""Checks that read values of the data into Python, declared so a recording can replay them.

The runtime checks what users pass (an index within its FinSet, say) by reading a
few numbers back into Python and raising a clear error. A recorded SVI step
(`inference.recorded_step`) that takes the batch as its input could not follow such
a read: the read's value changes with the batch, so the recorder refuses it and the
step stays eager. A check written with `check_values` tells the recorder what it is:
a function of a few tensors' values that raises or returns nothing, deciding no
control flow. The recorder (`inference.record`) then keeps those tensors as outputs
of the recording and runs the same check on each replay's values, so a batch with
an index out of range fails a replayed step with the message the eager step gives.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import partial

import torch

#: A check on the Python numbers read from its tensors' (0-d) values: raises or returns.
Check = Callable[..., None]
#: What a recording does with a check and its tensors (see `watching`).
Watcher = Callable[[Check, tuple[torch.Tensor, ...]], None]

_WATCHER: ContextVar[Watcher | None] = ContextVar("qvr_value_check_watcher", default=None)


def check_values(check: Check, *tensors: torch.Tensor) -> None:
    """Run `check` on the numbers the 0-d `tensors` hold; a recording watching (see
    `watching`) is told first, and runs the check itself."""
    watcher = _WATCHER.get()
    if watcher is not None:
        watcher(check, tensors)
        return
    run_check(check, tensors)


def check_within(
    values: torch.Tensor, low: int, high: int, fail: Callable[[int], Exception]
) -> None:
    """Every entry of `values` lies in `low..high`; else raise `fail(v)` for the lowest
    entry below `low` or else the highest above `high` (an index, a length)."""
    if values.numel():
        check_values(partial(_within, low, high, fail), values.min(), values.max())


def _within(low: int, high: int, fail: Callable[[int], Exception], lo: int, hi: int) -> None:
    if lo < low:
        raise fail(lo)
    if hi > high:
        raise fail(hi)


def run_check(check: Check, tensors: tuple[torch.Tensor, ...] | list[torch.Tensor]) -> None:
    """`check` on the Python numbers `tensors` hold (an int for an integer tensor)."""
    check(*(int(t) if not t.is_floating_point() else float(t) for t in tensors))


@contextmanager
def watching(watcher: Watcher) -> Iterator[None]:
    """Hand every `check_values` call inside to `watcher` instead of running it."""
    token = _WATCHER.set(watcher)
    try:
        yield
    finally:
        _WATCHER.reset(token)
