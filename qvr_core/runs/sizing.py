"""A run sized against the memory budget before anything is allocated, and an
out-of-memory failure while it runs told in the estimate's words.

A seed program's estimate is `qvr_core.sizing.resources`' (parameters with optimiser
state, activations at this batch and length, what the method keeps), a model
program's `qvr_core.sizing.model_resources`' (its plates, its enumerated scopes, what
the method keeps of its latent values, the data): a run over the budget is
refused with `RunTooLargeError`, one line naming the declaration that needs the
most; a run that still runs out of memory (the machine had less to give than
the budget) ends with `RunOutOfMemoryError` naming what is big.

What a run keeps after its method, the pointwise log-likelihood (one float64 per
draw and observation, for PSIS-LOO), is kept only where it fits beside the estimate
(`log_likelihood_refusal`); it is left out, never the run refused, when it does not.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from qvr_core.check.module import CheckedModule
from qvr_core.inference.errors import RunOutOfMemoryError, RunTooLargeError
from qvr_core.runs.device import device_memory
from qvr_core.sizing.model_resources import estimate_model
from qvr_core.sizing.resources import (
    Estimate,
    MemoryBudgetError,
    check_budget,
    default_budget,
    estimate,
)
from qvr_core.text.units import format_bytes

if TYPE_CHECKING:
    import torch


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
            f"{format_bytes(need.total)} for {need.setting()}{what}"
        )


#: The bytes of one pointwise log-likelihood term (float64, as the results keep it).
TERM_BYTES = 8


def log_likelihood_refusal(sizing: Sizing | None, draws: int, points: int) -> str | None:
    """Why a run does not keep its pointwise log-likelihood, `draws` x `points` terms
    ("800 draws x 50 observations, 320 KB, would take the run ... past its memory
    budget of ..."), or None when they fit in the budget beside what the run was
    estimated to need (the default budget for a run not sized)."""
    need = draws * points * TERM_BYTES
    budget = sizing.budget if sizing is not None else default_budget()
    used = sizing.need.total if sizing is not None else 0
    if used + need <= budget:
        return None
    run = f" (about {format_bytes(used)})" if sizing is not None else ""
    return (
        f"{draws:,} draws x {points:,} observations, {format_bytes(need)}, would take the "
        f"run{run} past its memory budget of {format_bytes(budget)}"
    )


def budget_of(memory_budget: int | None) -> int:
    """The budget in bytes: the one given, or half the available memory."""
    return memory_budget if memory_budget is not None else default_budget()


def device_budget(budget: int, device: torch.device) -> int:
    """`budget` capped by what `device` has free (a CUDA GPU's memory, read now): a run
    there keeps its parameters, data, activations and sampler state on the GPU, whose
    memory is usually far smaller than the machine's, so that is what it must fit in.
    The CPU's budget is returned as it is (`budget_of` already measured the machine)."""
    free = device_memory(device)
    return budget if free is None else min(budget, free)


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
    return _admitted(need, budget, "lower those sizes or raise the memory budget")


def size_model_run(
    checked: CheckedModule,
    name: str,
    *,
    method: str,
    steps: int,
    chains: int,
    budget: int,
    data: Mapping[str, Any] | None = None,
    subsample: tuple[str, int] | None = None,
) -> Sizing:
    """The estimate of one run of model program `name`, refused when over `budget`: from
    its checked `Model` (its plates, enumerated scopes and what `method` keeps) and the
    data read for it (tensors by name; None for synthetic data), whose sizes also size
    the axes only the data fixes. Call it before the program is compiled."""
    arrays = list((data or {}).values())
    need = estimate_model(
        checked,
        name,
        method=method,
        steps=steps,
        chains=chains,
        data_bytes=sum(_nbytes(a) for a in arrays),
        rows=max((_numel(a) for a in arrays), default=None),
        subsample=subsample if method == "svi" else None,
    )
    return _admitted(need, budget, "make it smaller or raise the memory budget")


def _numel(a: Any) -> int:
    return int(getattr(a, "numel", lambda: 1)())


def _nbytes(a: Any) -> int:
    return _numel(a) * int(getattr(a, "element_size", lambda: 8)())


def _admitted(need: Estimate, budget: int, advice: str) -> Sizing:
    try:
        check_budget(need, budget)
    except MemoryBudgetError as e:
        raise RunTooLargeError(f"{e}; {advice}") from None
    return Sizing(need, budget)


def _is_allocation_failure(e: RuntimeError) -> bool:
    text = str(e).lower()
    signs = ("out of memory", "can't allocate memory", "cannot allocate memory", "bad_alloc")
    return any(sign in text for sign in signs)
