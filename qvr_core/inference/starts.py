"""Where each chain of a run starts: its own prior draw, or a Pathfinder start.

`run_chains` asks here once, before it places its chains in processes, so a chain
starts at the same point whichever process runs it and however many there are. Each
chain's own start is the one `mcmc.sample_chains` would draw under its seed (the
program run forward); with `init="pathfinder"` (the default) one Pathfinder path runs
from each of those starts and from further forward draws (`PATHS` paths at least), all
advanced together (`lockstep`), and the chains start at draws resampled from every
path's approximation (`pathfinder`). Where Pathfinder
cannot help (a model of more than `pathfinder.MAX_COORDINATES` coordinates, a path
that raises, no draw with a finite density) a chain keeps its own start, and the
sampler's own retries (`NUTSChain.begin`) take it from there.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
import torch

from qvr_core.inference.lockstep import TaskError, run_together
from qvr_core.inference.many import Batched, ManyPotential, RowError
from qvr_core.inference.mcmc import ProgramPotential, seeded_start
from qvr_core.inference.nuts import Requests
from qvr_core.inference.pathfinder import MAX_COORDINATES, resampled_starts, single_path
from qvr_core.inference.sites import FlatLayout, ProgramLike
from qvr_core.runtime.program import Observed

log = logging.getLogger(__name__)
T = TypeVar("T")

#: Pathfinder paths a run begins, at least (Stan's default is 4): one from each chain's
#: own start and the rest from further forward draws, so that a posterior whose minor
#: mode has the wider basin (Lotka-Volterra's slow oscillation) still has paths that
#: reach its main one.
PATHS = 8


@dataclass(frozen=True)
class Starts:
    """Each chain's first position (None: the one it draws itself), and the batched
    potential recorded on the way, for the chains to use rather than record again."""

    positions: list[torch.Tensor] | None
    recorded: Batched | None = None


def child_seeds(seed: int, first: int, stop: int) -> list[int]:
    """Independent seeds derived from a run's seed: its children `first` to `stop - 1`.
    The chains take the first ones (`chains.chain_seeds`), the forward draws of the
    Pathfinder paths beyond one per chain the next ones."""
    children = np.random.SeedSequence(seed).spawn(stop)[first:]
    return [int(c.generate_state(1, np.uint64)[0] >> np.uint64(1)) for c in children]


def own_starts(
    model: ProgramLike,
    x: Any,
    observations: Mapping[str, Observed],
    layout: FlatLayout,
    seeds: Sequence[int],
) -> torch.Tensor:
    """Each chain's own start, as `mcmc.sample_chains` draws it under the chain's seed;
    the caller's random stream is left as it was."""
    with torch.random.fork_rng():
        given = dict(observations)
        return torch.stack([seeded_start(model, x, given, layout, seed) for seed in seeds])


def chain_starts(
    model: ProgramLike,
    x: Any,
    observations: Mapping[str, Observed],
    layout: FlatLayout,
    seeds: Sequence[int],
    seed: int,
    *,
    init: str = "pathfinder",
    recorded: Batched | None = None,
) -> Starts:
    """The starts of the chains seeded `seeds` of a run seeded `seed` (see the module)."""
    if init == "prior" or not 0 < layout.size <= MAX_COORDINATES:
        return Starts(None, recorded)
    count = max(len(seeds), PATHS)
    own = own_starts(
        model, x, observations, layout, [*seeds, *child_seeds(seed, len(seeds), count)]
    )
    eager = ProgramPotential(model, x, dict(observations), layout)
    chains = own[: len(seeds)]
    potential = ManyPotential(eager, eager.log_density, chains, recorded=recorded)
    streams = np.random.SeedSequence(seed).spawn(count + 1)[count].spawn(count + 1)
    tasks = [
        _in_dtype(single_path(row.detach().cpu().numpy(), np.random.default_rng(s)), own.dtype)
        for row, s in zip(own, streams, strict=False)
    ]
    try:
        paths = run_together(tasks, _FailuresAsInfinite(potential))
    except TaskError as e:  # Pathfinder's own arithmetic failed: the chains' own starts
        log.debug("Pathfinder gave no starts: path %d failed (%s)", e.index, e.error)
        return Starts(None, potential.function)
    chosen = resampled_starts(paths, len(seeds), np.random.default_rng(streams[-1]))
    positions = [torch.from_numpy(c).to(own.dtype) for c in chosen]
    positions += [chains[c] for c in range(len(chosen), len(seeds))]  # too few draws
    return Starts(positions, potential.function)


def _in_dtype(task: Requests[T], dtype: torch.dtype) -> Requests[T]:
    """`task` asking for its positions in the model's dtype (Pathfinder works in float64)."""
    as_numpy = torch.empty(0, dtype=dtype).numpy().dtype
    try:
        position = next(task)
        while True:
            reply = yield position.astype(as_numpy, copy=False)
            position = task.send(reply)
    except StopIteration as done:
        return done.value


class _FailuresAsInfinite:
    """The batched potential, where the model raises at a position (a Cholesky factor of
    a far point a line search tried) answering U = inf for it: for Pathfinder such a point
    has no density, and the line search steps back; the chains meet the error themselves
    if their draws reach it."""

    def __init__(self, potential: ManyPotential) -> None:
        self.potential = potential

    def __call__(self, positions: torch.Tensor) -> tuple[list[float], torch.Tensor]:
        try:
            return self.potential(positions)
        except RowError:
            rows = [self._one(z) for z in positions]
            return [u for u, _ in rows], torch.stack([g for _, g in rows])

    def _one(self, z: torch.Tensor) -> tuple[float, torch.Tensor]:
        try:
            return self.potential.eager(z)
        except Exception:
            return math.inf, torch.full_like(z, math.nan)
