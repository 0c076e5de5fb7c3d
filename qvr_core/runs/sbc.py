"""Simulation-based calibration: does fitting this model recover what it simulated?

Talts, Betancourt, Simpson, Vehtari and Gelman (2018): draw the parameters from the
prior, simulate a data set from them, fit the model to it, and note where each true
value ranks among the posterior draws. If the model's code and the sampler are right,
the ranks are uniform over the simulations; a posterior that is too narrow, too wide
or shifted shows in their distribution (`qvr_core.posterior.calibration` reads it).

`calibrate` runs it for a model program as `qvr run` prepares it: the data file's
data names (or `qvr data`'s synthetic ones) stay as they are, and each simulation
replaces the observed sites by a draw of the model (`ModelProgram.run` draws every
site given the data names). Simulation `i` draws under seed `seed + 1 + i` and fits
under the same seed, so a run is reproduced by its seed and can go on from where a
stopped one ended (`done`). Each fit's draws, thinned evenly to `draws`, rank the true
value: the count of draws below it, 0 to `draws`. A fit that fails (a simulated data
set the sampler cannot start on) is counted and left out, as are discrete sites the
run sums out (they have no draws to rank against).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import torch

from qvr_core.inference.errors import InferenceError
from qvr_core.inference.results import RunResults
from qvr_core.runs.methods import Calls
from qvr_core.runs.prepare import DataSource, prepare
from qvr_core.runs.run import execute, run_arguments, user_errors
from qvr_core.runtime.model import ModelProgram
from qvr_core.runtime.program import Observed

#: (the run so far, simulations done, simulations asked) after each simulation.
SbcProgress = Callable[["SbcRun", int, int], None]


@dataclass
class SbcRun:
    """The ranks so far: per site `(simulation, *shape)` in 0..`draws`."""

    program: str
    method: str
    draws: int
    seed: int
    ranks: dict[str, list[np.ndarray]] = field(default_factory=dict)
    failed: list[str] = field(default_factory=list)  # why each failed fit failed

    @property
    def done(self) -> int:
        """Simulations with ranks, and those that failed: where a resumed run goes on."""
        first = next(iter(self.ranks.values()), [])
        return len(first) + len(self.failed)

    def arrays(self) -> dict[str, np.ndarray]:
        return {n: np.stack(v) for n, v in self.ranks.items() if v}


def calibrate(
    source: str,
    *,
    path: str | None = None,
    program: str | None = None,
    data: DataSource = None,
    sims: int = 100,
    method: str = "nuts",
    steps: int = 1000,
    chains: int = 2,
    draws: int = 100,
    seed: int = 0,
    memory_budget: int | None = None,
    resume: SbcRun | None = None,
    on_progress: SbcProgress | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> SbcRun:
    """`sims` simulations of the model program `program` of `source` (see the module);
    `resume`: a stopped run of the same settings, continued. InferenceError for what
    cannot be calibrated (a network program, a model observing values it computes)."""
    if draws < 1:
        raise InferenceError("sbc: --draws must be at least 1")
    arguments = run_arguments(
        {"program": program, "method": method, "steps": steps, "seed": seed, "chains": chains},
        memory_budget,
    )
    with user_errors():
        prepared = prepare(source, arguments, path=path, data=data, memory_budget=memory_budget)
    model = prepared.program
    if not isinstance(model, ModelProgram):
        raise InferenceError(
            f"sbc: {prepared.name} is a program of networks; simulation-based calibration "
            "draws a model program's parameters from their priors (family steps)"
        )
    if model.computed_names:
        raise InferenceError(
            f"sbc: {prepared.name} observes values it computes from its data "
            f"({', '.join(model.computed_names)}): a simulation cannot draw them"
        )
    latents = [n for n in model.site_names if model.site_kind(n) == "sample"]
    out = resume or SbcRun(prepared.name, method, draws, seed)
    for i in range(out.done, sims):
        if should_stop is not None and should_stop():
            break
        s = seed + 1 + i
        torch.manual_seed(s)
        with torch.no_grad():
            drawn = model.run(prepared.x, None).values
        observed: dict[str, Observed] = {
            n: drawn[n].to(v.dtype) if isinstance(v, torch.Tensor) else drawn[n]
            for n, v in prepared.observations.items()
        }
        results = RunResults()
        try:
            with user_errors():
                execute(
                    replace(prepared, observations=observed),
                    replace(arguments, seed=s),
                    Calls(results=results),
                )
        except InferenceError as e:
            out.failed.append(f"simulation {i + 1}: {str(e).splitlines()[0]}")
        else:
            posterior = results.groups.get("posterior", {})
            for name in latents:
                if name in posterior:
                    out.ranks.setdefault(name, []).append(
                        rank(posterior[name], drawn[name].detach().cpu().numpy(), draws)
                    )
        if on_progress is not None:
            on_progress(out, i + 1, sims)
    return out


def rank(draws: np.ndarray, truth: np.ndarray, kept: int) -> np.ndarray:
    """How many of `kept` draws, evenly spaced over every chain's `(chain, draw, ...)`,
    are below the true value, elementwise (0 to `kept`; ties count half, rounded down)."""
    flat = draws.reshape(-1, *draws.shape[2:])
    picks = np.linspace(0, flat.shape[0] - 1, num=min(kept, flat.shape[0])).round().astype(int)
    thinned = flat[picks]
    if thinned.shape[0] < kept:  # fewer draws than asked: repeat evenly to `kept`
        thinned = thinned[np.linspace(0, thinned.shape[0] - 1, num=kept).round().astype(int)]
    below = (thinned < truth).sum(0) + 0.5 * (thinned == truth).sum(0)
    ranks: np.ndarray = np.floor(below).astype(np.int64)
    return ranks


def resumed(attrs: Mapping[str, Any], ranks: Mapping[str, np.ndarray]) -> SbcRun:
    """A stopped run read back from its file (`qvr sbc --output`): its settings and ranks."""
    run = SbcRun(
        str(attrs["program"]), str(attrs["method"]), int(attrs["draws"]), int(attrs["seed"])
    )
    run.ranks = {n: list(v) for n, v in ranks.items()}
    failed = str(attrs.get("failed", ""))
    run.failed = [f for f in failed.split("\n") if f]
    return run
