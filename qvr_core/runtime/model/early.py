"""Drawing a series that the model reads before its `observe` (GARCH's variance reads
y[t - 1]): run the program again with the same random numbers until the series settles.

A model program has no loop over time. When a let reads an observed series before the
series' `observe` (`let e2 = lag((y - mu) * (y - mu), 1)`), a fit is given y and reads
it as data; a draw of y (the prior predictive, synthetic data, the posterior
predictive) has no y to read. Stan's generated quantities would loop over t. Here each
run reads the series drawn by the run before (zeros at first) and draws it anew from
the same random state, so the noise of every entry is the same in every run. Entry t
depends only on the entries before it (`lag`, `lags` and `linear_recurrence` read
backwards, elementwise steps read their own entry), so the first run draws entry 0 as
the model does, the second entry 1 as well, and after at most T + 1 runs two runs
agree exactly: that is the model's draw, entry by entry as Stan's loop makes it. A
model that reads later entries (a sum over the whole series) never agrees with itself
in T + 1 runs and is refused, naming the series.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TypeVar

import torch

from qvr_core.runtime.errors import QvrRuntimeError

T = TypeVar("T")
Series = dict[str, torch.Tensor]

_EARLY: ContextVar[Mapping[str, torch.Tensor] | None] = ContextVar("qvr_read_early", default=None)


class ReadEarly(QvrRuntimeError):
    """A run read the observed series `name` before its `observe` with no value for it."""

    def __init__(self, message: str, name: str) -> None:
        super().__init__(message, site=name)
        self.name = name


@contextmanager
def reading_early(series: Mapping[str, torch.Tensor]) -> Iterator[None]:
    """In this block a run that reads an observed series before its `observe` reads it
    from `series` (the draw of the run before) and still draws it at its `observe`."""
    token = _EARLY.set(series)
    try:
        yield
    finally:
        _EARLY.reset(token)


def early_value(name: str) -> torch.Tensor | None:
    """The value `reading_early` gives the series `name`, if any."""
    series = _EARLY.get()
    return None if series is None else series.get(name)


def settle(run: Callable[[Series], tuple[T, Series]], guess: Series, limit: int, program: str) -> T:
    """`run(guess)` (a result and the series it drew) repeated from one random state
    until the series it draws are the ones it read; at most `limit` runs."""
    state = torch.random.get_rng_state()
    for _ in range(limit):
        torch.random.set_rng_state(state)
        out, drawn = run(guess)
        if drawn.keys() == guess.keys() and all(torch.equal(drawn[n], guess[n]) for n in guess):
            return out
        guess = drawn
    names = ", ".join(f"'{n}'" for n in sorted(guess))
    raise QvrRuntimeError(
        f"program {program}: a draw of {names}, which it reads before the observe, did not "
        f"settle in {limit} runs: the model reads later entries of the series than the one "
        "it draws (a draw is made step by step, each entry from those before it)"
    )


def step_limit(guess: Mapping[str, torch.Tensor]) -> int:
    """Enough runs for series drawn one entry per run: all their entries, and one more
    run that agrees."""
    return sum(int(v.numel()) for v in guess.values()) + 2
