"""What a NUTS run shows while it goes: every chain's draws so far, as trace series and
as the summary table with its warnings.

`LiveDraws` receives the draws `chains.run_chains` reads as they arrive and
reports a JSON-ready snapshot at most about once a second (less often when a
snapshot is costly: the next waits at least ten times as long as the last one
took, so a model with thousands of elements does not spend its run summarising):

    {"chains": 4, "warmup": 500, "draws": [120, 118, 0, 0],
     "traces": [{"label": "mu", "chains": [[[0, 1.2], [1, 0.9], ...], ...]}, ...],
     "posterior": <summary.summarize of the draws so far> | None}

The table is computed over the chains that have at least half as many draws
as the longest (and `MIN_DRAWS`), each cut to the shortest of them: chains run
two at a time on two cores, so the last ones start late, and a chain that has
just started would cut the others short. It is None until a chain has
`MIN_DRAWS` draws. The traces are
the first `TRACE_SCALARS` elements in the table's order, each chain thinned to
at most `TRACE_POINTS` evenly spaced draws (the first and the newest kept).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from qvr_core.draws.series import evenly_spaced
from qvr_core.inference import convergence
from qvr_core.inference.chains import ChainDraw
from qvr_core.inference.summary import SamplerStats, summarize
from qvr_core.text.units import element_label

TRACE_SCALARS = 8
TRACE_POINTS = 200
MIN_DRAWS = convergence.MIN_DRAWS
INTERVAL_SECONDS = 1.0
COST_FACTOR = 10.0

ReportFn = Callable[[dict[str, Any]], None]


class LiveDraws:
    """Collects each chain's draws and reports snapshots (see the module docstring)."""

    def __init__(
        self,
        chains: int,
        warmup: int,
        max_tree_depth: int,
        report: ReportFn,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.chains, self.warmup, self.max_tree_depth = chains, warmup, max_tree_depth
        self.report, self.clock = report, clock
        self.values: list[dict[str, list[np.ndarray]]] = [{} for _ in range(chains)]
        self.stats: list[list[tuple[bool, int, float]]] = [[] for _ in range(chains)]
        self._next: float | None = None  # a second after the first draw (not the start:
        # chain processes take seconds to start, and a snapshot of one draw says nothing)

    def add(self, chain: int, draw: ChainDraw) -> None:
        """One draw of `chain`; reports a snapshot when the last one is old enough."""
        for name, value in draw.values.items():
            self.values[chain].setdefault(name, []).append(value)
        self.stats[chain].append((draw.diverging, draw.tree_depth, draw.energy))
        if self._next is None:
            self._next = self.clock() + INTERVAL_SECONDS
        elif self.clock() >= self._next:
            self.send()

    def restart(self) -> None:
        """Forget the draws so far: another sampler draws them again from where the
        chains are (`--engine auto`'s hand-over), and a snapshot shows its draws alone."""
        self.values = [{} for _ in range(self.chains)]
        self.stats = [[] for _ in range(self.chains)]

    def send(self) -> None:
        """Report a snapshot now (the run's end sends the last one this way)."""
        start = self.clock()
        self.report(self.snapshot())
        cost = self.clock() - start
        self._next = self.clock() + max(INTERVAL_SECONDS, COST_FACTOR * cost)

    def snapshot(self) -> dict[str, Any]:
        return {
            "chains": self.chains,
            "warmup": self.warmup,
            "draws": [len(s) for s in self.stats],
            "traces": self._traces(),
            "posterior": self._posterior(),
        }

    def _sites(self) -> dict[str, tuple[int, ...]]:
        """Site names and shapes in the order the draws carry them."""
        for values in self.values:
            if values:
                return {name: tuple(v[0].shape) for name, v in values.items()}
        return {}

    def _posterior(self) -> dict[str, Any] | None:
        counts = [len(s) for s in self.stats]
        least = max(MIN_DRAWS, max(counts) // 2)
        ready = [c for c in range(self.chains) if counts[c] >= least]
        if not ready:
            return None
        n = min(len(self.stats[c]) for c in ready)
        arrays = {
            name: np.stack([np.stack(self.values[c][name][:n]) for c in ready])
            for name in self._sites()
        }
        per_chain = [self.stats[c][:n] for c in ready]
        stats = SamplerStats(
            diverging=np.array([[s[0] for s in chain] for chain in per_chain], dtype=bool),
            tree_depth=np.array([[s[1] for s in chain] for chain in per_chain], dtype=np.int64),
            energy=np.array([[s[2] for s in chain] for chain in per_chain], dtype=np.float64),
            max_tree_depth=self.max_tree_depth,
        )
        return summarize(arrays, stats).to_dict()

    def _traces(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for name, shape in self._sites().items():
            size = math.prod(shape)
            for i in range(min(size, TRACE_SCALARS - len(out))):
                _, label = element_label(name, shape, i)
                out.append(
                    {
                        "label": label,
                        "chains": [self._series(c, name, i) for c in range(self.chains)],
                    }
                )
            if len(out) >= TRACE_SCALARS:
                break
        return out

    def _series(self, chain: int, name: str, i: int) -> list[list[float | None]]:
        values = self.values[chain].get(name, [])
        return [
            [d, _finite(float(values[d].reshape(-1)[i]))]
            for d in evenly_spaced(len(values), TRACE_POINTS)
        ]


def _finite(v: float) -> float | None:
    return v if math.isfinite(v) else None
