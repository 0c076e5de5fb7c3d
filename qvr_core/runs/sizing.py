"""A run sized against the memory budget before anything is allocated, and an
out-of-memory failure while it runs told in the estimate's words.

The estimate is `qvr_core.resources`' (parameters with optimiser state,
activations at this batch and length, what the method keeps): a run over the
budget is refused with `RunTooLargeError`; a run that still runs out of memory
(the machine had less to give than the budget) ends with `RunOutOfMemoryError`
naming what is big.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from qvr_core.check.module import CheckedModule
from qvr_core.inference.errors import RunOutOfMemoryError, RunTooLargeError
from qvr_core.resources import (
    Estimate,
    MemoryBudgetError,
    check_budget,
    default_budget,
    estimate,
    format_bytes,
)


@dataclass(frozen=True)
class Sizing:
    """What a run needs and the budget it was admitted under."""

    need: Estimate
    budget: int

    @contextmanager
    def guard(self) -> Iterator[None]:
        """Turn running out of memory inside into `RunOutOfMemoryError`."""
        try:
            yield
        except MemoryError:
            raise self.out_of_memory() from None
        except RuntimeError as e:
            if not _is_allocation_failure(e):
                raise
            raise self.out_of_memory() from None

    def out_of_memory(self) -> RunOutOfMemoryError:
        """What ran out, in the estimate's words: the total and the need most to blame
        (measured against what the machine could give, which was less than the budget)."""
        need = self.need
        culprit = need.culprit(min(self.budget, default_budget()))
        what = f"; what is big: {culprit.describe()}" if culprit is not None else ""
        return RunOutOfMemoryError(
            f"the run ran out of memory: program {need.program} needs about "
            f"{format_bytes(need.total)} for {need.method} at batch {need.batch}, "
            f"seq_len {need.seq_len}{what}"
        )


def budget_of(memory_budget: int | None) -> int:
    """The budget in bytes: the one given, or half the available memory."""
    return memory_budget if memory_budget is not None else default_budget()


def size_run(
    checked: CheckedModule,
    name: str,
    *,
    method: str,
    batch: int,
    seq_len: int,
    steps: int,
    chains: int,
    budget: int,
) -> Sizing:
    """The estimate of one run of program `name`; refused when over `budget`."""
    parallel = chains if method == "nuts" else 1
    need = estimate(
        checked, name, method=method, batch=batch, seq_len=seq_len, steps=steps, chains=parallel
    )
    try:
        check_budget(need, budget)
    except MemoryBudgetError as e:
        raise RunTooLargeError(f"{e}; lower those sizes or raise the memory budget") from None
    return Sizing(need, budget)


def _is_allocation_failure(e: RuntimeError) -> bool:
    text = str(e).lower()
    signs = ("out of memory", "can't allocate memory", "cannot allocate memory", "bad_alloc")
    return any(sign in text for sign in signs)
