"""Which rows each SVI step scores, and this process's part of them (`runtime.share`).

- `--subsample Row=256` on a model program: each step draws 256 of Row's N rows
  without replacement (a generator of its own, seeded by the run's seed, so every
  process draws the same rows); the data and observations are those rows only,
  and the model scales the plate's terms by N/256 (`check.subsample` says which
  terms, which data and which local latents; the guide draws the local latents
  of those rows only).
- Over several processes (`runs.distributed`) the rows of a step, drawn or all of
  them, are cut into one contiguous chunk per rank; rank 0 alone adds the terms
  not over the plate. A seed program splits the examples of its batch.

A step's data is cut with `index_select`: a copy of the rows scored, never of the
whole data. A split that never changes (every row, every step) is cut once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch

from qvr_core.check.module import CheckedModule
from qvr_core.check.subsample import Refusal, SubsamplePlan, subsample_plan
from qvr_core.inference.errors import InferenceError
from qvr_core.runs.distributed import World
from qvr_core.runs.tensor_tree import map_tensors
from qvr_core.runtime.program import Observed
from qvr_core.runtime.share import Share, pick

#: Each step's rows come from this generator, seeded from the run's seed: the guide's and
#: the model's draws keep torch's global stream, as a run without subsampling has it.
ROWS_SEED_OFFSET = 0x5EED
#: Rows are drawn on the CPU (the generator's device) and moved with the data they pick.
CPU = torch.device("cpu")


@dataclass(frozen=True)
class Step:
    """One step's share and the inputs it scores."""

    share: Share | None
    x: Any
    observations: dict[str, Observed]


def plate_plan(checked: CheckedModule, program: str, plate: str | None) -> SubsamplePlan:
    """The plan of the plate to subsample or split. Without a plate named (a run over
    several processes), the one plate every observed site runs over."""
    model = checked.models[program]
    if plate is None:
        plates = {s.plates[0] for s in model.sites if s.kind == "observe" and s.plates}
        if len(plates) != 1:
            found = ", ".join(sorted(plates)) or "none"
            raise InferenceError(
                f"program {program}: to split a run over processes, name the plate to split "
                f"with --subsample PLATE=ROWS (rows: the plate's size to score all of it; "
                f"the observed sites' plates: {found})"
            )
        plate = plates.pop()
    plan = subsample_plan(checked, program, plate)
    if isinstance(plan, Refusal):  # its message names the line at fault
        raise InferenceError(f"program {program} cannot subsample {plate}: {plan.message}")
    return plan


class Minibatches:
    """Each SVI step's `Step` (see the module docstring)."""

    def __init__(
        self,
        x: Any,
        observations: Mapping[str, Observed],
        *,
        plan: SubsamplePlan | None,
        rows: int | None,
        seed: int,
        world: World | None,
        batch: int,
    ) -> None:
        self.x, self.observations = x, dict(observations)
        self.plan, self.world = plan, world
        self.first = world is None or world.first
        if plan is not None:
            self.total = plan.size
            self.drawn = plan.size if rows is None else rows
            if self.drawn > plan.size:
                raise InferenceError(
                    f"--subsample {plan.plate}={self.drawn}: {plan.plate} has {plan.size} rows"
                )
        else:
            self.total = self.drawn = batch
        parts = self.processes
        if self.drawn < parts:
            raise InferenceError(
                f"a step scores {self.drawn} rows, fewer than the {parts} processes sharing it"
            )
        start, stop = (0, self.drawn) if world is None else world.chunk(self.drawn)
        self.mine = torch.arange(start, stop, device=CPU)
        self.generator = torch.Generator().manual_seed(seed ^ ROWS_SEED_OFFSET)
        self.fixed: Step | None = None
        if self.drawn == self.total:  # every row each step: cut once
            self.fixed = self._step(torch.arange(self.total, device=CPU))

    @property
    def subsample(self) -> tuple[str, int] | None:
        """`(plate, rows)` when a step scores only some of a plate's rows, else None."""
        if self.plan is None or self.drawn == self.total:
            return None
        return self.plan.plate, self.drawn

    @property
    def processes(self) -> int:
        return 1 if self.world is None else self.world.size

    @property
    def scale(self) -> float:
        """N/B: how many rows each scored row stands for."""
        return self.total / self.drawn

    def __call__(self) -> Step:
        if self.fixed is not None:
            return self.fixed
        return self._step(draw_rows(self.total, self.drawn, self.generator))

    def _step(self, rows: torch.Tensor) -> Step:
        if self.plan is None:  # a seed program: examples of its batch
            share = Share(self.drawn, self.mine)
            mine = self.mine
            return Step(
                share,
                map_tensors(self.x, lambda t: pick(t, 0, mine)),
                map_tensors(self.observations, lambda t: pick(t, 0, mine)),
            )
        plan = self.plan
        share = Share(
            self.drawn,
            self.mine,
            plate=plan.plate,
            rows=rows,
            scale=self.scale,
            global_scale=1.0 if self.first else 0.0,
            scaled=plan.scaled,
            local=plan.local,
        )
        mine = share.my_rows
        x = {k: _cut(v, plan.data_axes.get(k), mine) for k, v in self.x.items()}
        observations = {
            k: _cut(v, plan.data_axes.get(k), mine) for k, v in self.observations.items()
        }
        return Step(share, x, observations)


def draw_rows(total: int, rows: int, generator: torch.Generator) -> torch.Tensor:
    """`rows` distinct rows of `total`, uniformly, sorted.

    A permutation of all rows costs O(total) each step (16 ms for 200,000 rows, more
    than the step); for a small share, draws with replacement, repeats dropped and
    drawn again, then `rows` of them picked uniformly, cost O(rows). Either way every
    set of `rows` rows is as likely (the procedure treats all rows alike)."""
    if 2 * rows > total:
        return torch.randperm(total, generator=generator, device=CPU)[:rows].sort().values
    got = torch.empty(0, dtype=torch.long, device=CPU)
    while got.numel() < rows:
        wanted = (rows - got.numel() + rows // 8 + 16,)
        more = torch.randint(total, wanted, generator=generator, device=CPU)
        got = torch.unique(torch.cat([got, more]))
    if got.numel() > rows:
        pick_some = torch.randperm(got.numel(), generator=generator, device=CPU)[:rows]
        got = got[pick_some].sort().values
    return got


def _cut(value: Any, axis: int | None, rows: torch.Tensor) -> Any:
    if axis is None or not isinstance(value, torch.Tensor):
        return value
    return pick(value, axis, rows)
