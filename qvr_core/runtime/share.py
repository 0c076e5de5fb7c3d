"""What one process scores of one SVI step: some rows of a plate, or of the batch.

Minibatch SVI (`--subsample Row=256`) scores B of a plate's N rows per step and
scales their log-density by N/B, so the ELBO stays unbiased; data-parallel SVI
(`torchrun`) splits the rows a step scores between processes, and each adds its
part of one loss. Both are one `Share`, set for the duration of a step
(`sharing`) and read where the terms are made: the model program's pass
(`runtime.model.program`), the guides and the ELBO (`qvr_core.inference`).

Rows drawn are the same in every process (the same generator, the same seed),
and so are the guide's random numbers: a guide draws its noise for all `drawn`
rows and keeps `mine`, so a run split over processes draws what one process
draws, and its loss is the same sum in another order.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

import torch


@dataclass(frozen=True)
class Share:
    """This process's part of one step.

    A model program (`plate` set): `rows` are the plate's rows drawn this step (global
    indices, `drawn` of them), `mine` the positions among them this process scores;
    each term over the plate is scaled by `scale` (N/B), every other term by
    `global_scale` (1 in the first process, 0 in the others, which would count it
    again). `local` maps each latent site over the plate to the plate's axis in its
    value: the guide draws those rows only.

    A seed program (`plate` None): `mine` are the examples of the batch this process
    scores out of `drawn`; the ELBO averages over all `drawn`.
    """

    drawn: int
    mine: torch.Tensor
    plate: str | None = None
    rows: torch.Tensor | None = None
    scale: float = 1.0
    global_scale: float = 1.0
    scaled: frozenset[str] = frozenset()
    local: Mapping[str, int] = field(default_factory=dict)

    @property
    def scored(self) -> int:
        """How many rows (or examples) this process scores."""
        return int(self.mine.numel())

    @property
    def my_rows(self) -> torch.Tensor:
        """The plate's rows this process scores (global indices)."""
        assert self.rows is not None, "a model program's share"
        return self.rows.index_select(0, self.mine)

    def factor(self, term: str) -> float:
        """What a model program's log-density term `term` is multiplied by."""
        return self.scale if term in self.scaled else self.global_scale


_SHARE: ContextVar[Share | None] = ContextVar("qvr_share", default=None)


def current_share() -> Share | None:
    """The share of the step running, or None (the whole of everything)."""
    return _SHARE.get()


@contextmanager
def sharing(share: Share | None) -> Iterator[None]:
    """`share` for the block (a step), then as before."""
    token = _SHARE.set(share)
    try:
        yield
    finally:
        _SHARE.reset(token)


def pick(value: torch.Tensor, axis: int, rows: torch.Tensor) -> torch.Tensor:
    """`value`'s entries at `rows` along `axis` (a view-free copy of those rows only)."""
    return value.index_select(axis, rows.to(value.device))
