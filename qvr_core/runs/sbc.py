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
under the same seed, so a run is reproduced by its seed, whatever the number of
processes it runs in (`jobs`, each preparing the program once), and can go on from
where a stopped one ended (`done`: the simulations finished in order). Each fit's
draws, thinned evenly to `draws`, rank the true value: the count of draws below it,
0 to `draws`. A fit that fails (a simulated data set the sampler cannot start on) is
counted and left out, as are discrete sites the run sums out (they have no draws to
rank against).
"""

from __future__ import annotations

import multiprocessing
import signal
from collections.abc import Callable, Mapping
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import torch

from qvr_core.inference.chains import limit_processes
from qvr_core.inference.errors import InferenceError
from qvr_core.inference.results import RunResults
from qvr_core.runs.methods import Calls
from qvr_core.runs.prepare import DataSource, prepare
from qvr_core.runs.run import execute, run_arguments, user_errors
from qvr_core.runs.sizing import budget_of
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

    def add(self, outcome: Outcome) -> None:
        """The next simulation's ranks, or its failure."""
        if outcome.ranks is None:
            self.failed.append(outcome.failure or "a fit failed")
            return
        for name, ranks in outcome.ranks.items():
            self.ranks.setdefault(name, []).append(ranks)


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
    jobs: int = 1,
    resume: SbcRun | None = None,
    on_progress: SbcProgress | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> SbcRun:
    """`sims` simulations of the model program `program` of `source` (see the module),
    `jobs` at a time in as many processes (each with its share of the memory budget);
    `resume`: a stopped run of the same settings, continued. InferenceError for what
    cannot be calibrated (a network program, a model observing values it computes)."""
    if draws < 1:
        raise InferenceError("sbc: --draws must be at least 1")
    settings = _Settings(source, path, program, data, method, steps, chains, draws, seed)
    jobs = max(1, min(jobs, sims - (resume.done if resume is not None else 0)))
    budget = budget_of(memory_budget) // jobs
    simulator = _Simulator(settings, budget)  # also in this process: refusals come first
    out = resume or SbcRun(simulator.name, method, draws, seed)
    todo = range(out.done, sims)
    if jobs == 1:
        for i in todo:
            if should_stop is not None and should_stop():
                break
            out.add(simulator.simulate(i))
            if on_progress is not None:
                on_progress(out, i + 1, sims)
        return out
    context = multiprocessing.get_context("spawn")  # no fork of a process holding torch
    with ProcessPoolExecutor(jobs, context, _start_process, (settings, budget)) as pool:
        futures = {pool.submit(_simulate_in_process, i): i for i in todo}
        finished: dict[int, Outcome] = {}
        try:
            for future in as_completed(futures):
                finished[futures[future]] = future.result()
                while out.done in finished:  # in order: a resumed run goes on from `done`
                    out.add(finished.pop(out.done))
                    if on_progress is not None:
                        on_progress(out, out.done, sims)
                if should_stop is not None and should_stop():
                    break
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
    return out


@dataclass(frozen=True)
class _Settings:
    source: str
    path: str | None
    program: str | None
    data: DataSource
    method: str
    steps: int
    chains: int
    draws: int
    seed: int


@dataclass(frozen=True)
class Outcome:
    """One simulation's ranks by site, or why its fit failed."""

    ranks: dict[str, np.ndarray] | None
    failure: str | None = None


class _Simulator:
    """The prepared program and the settings: simulation `i`, drawn and fitted."""

    def __init__(self, settings: _Settings, budget: int) -> None:
        self.draws = settings.draws
        self.seed = settings.seed
        self.arguments = run_arguments(
            {
                "program": settings.program,
                "method": settings.method,
                "steps": settings.steps,
                "seed": settings.seed,
                "chains": settings.chains,
            },
            budget,
        )
        with user_errors():
            self.prepared = prepare(
                settings.source,
                self.arguments,
                path=settings.path,
                data=settings.data,
                memory_budget=budget,
            )
        self.name = self.prepared.name
        model = self.prepared.program
        if not isinstance(model, ModelProgram):
            raise InferenceError(
                f"sbc: {self.name} is a program of networks; simulation-based calibration "
                "draws a model program's parameters from their priors (family steps)"
            )
        if model.computed_names:
            raise InferenceError(
                f"sbc: {self.name} observes values it computes from its data "
                f"({', '.join(model.computed_names)}): a simulation cannot draw them"
            )
        self.model = model
        self.latents = [n for n in model.site_names if model.site_kind(n) == "sample"]

    def simulate(self, i: int) -> Outcome:
        s = self.seed + 1 + i
        torch.manual_seed(s)
        with torch.no_grad():
            drawn = self.model.run(self.prepared.x, None).values
        observed: dict[str, Observed] = {
            n: drawn[n].to(v.dtype) if isinstance(v, torch.Tensor) else drawn[n]
            for n, v in self.prepared.observations.items()
        }
        results = RunResults()
        try:
            with user_errors():
                execute(
                    replace(self.prepared, observations=observed),
                    replace(self.arguments, seed=s),
                    Calls(results=results),
                )
        except InferenceError as e:
            return Outcome(None, f"simulation {i + 1}: {str(e).splitlines()[0]}")
        posterior = results.groups.get("posterior", {})
        return Outcome(
            {
                name: rank(posterior[name], drawn[name].detach().cpu().numpy(), self.draws)
                for name in self.latents
                if name in posterior
            }
        )


_SIMULATOR: _Simulator | None = None  # a pool process's own


def _start_process(settings: _Settings, budget: int) -> None:
    """A pool process: Ctrl-C is the parent's to handle (it stops the pool, keeping what
    finished), so a process never prints its own KeyboardInterrupt."""
    global _SIMULATOR
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    torch.set_num_threads(1)
    limit_processes(1)  # the pool has the cores: a fit's chains stay in its process
    _SIMULATOR = _Simulator(settings, budget)


def _simulate_in_process(i: int) -> Outcome:
    assert _SIMULATOR is not None, "the pool's initializer made it"
    return _SIMULATOR.simulate(i)


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
