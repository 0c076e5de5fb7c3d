"""NUTS and SVI on model programs with discrete latent sites: summed out, drawn back.

Gradient-based inference moves continuous values only. A model program's discrete
latent sites with finitely many values are summed out of the log joint exactly
(`runtime.model.enumerate.SummedModel`, the `marginalize` machinery), so NUTS and
SVI see the continuous sites alone; after the fit each discrete site is drawn from
its exact posterior given each continuous draw (Pyro's `infer_discrete`), so the
summary and the results have it as they have every other latent.

- `summed_out(program, observations)`: the program inference runs on (a model
  program with such sites wrapped, any other as it is);
- `with_discrete_draws(result, program, x, observations)`: NUTS draws with the
  discrete sites added, R-hat and ESS included;
- `discrete_draws(program, x, observations, values)`: one draw of them given
  `values`; `WithDiscreteDraws(guide, ...)`, a fitted guide whose draws carry them;
- `exact_draws(...)`: NUTS's result when nothing continuous is left to move: the
  posterior is then the discrete sites' alone, and every draw is exact;
- `log_evidence(program, x, observations)`: SVI's loss then, -log p(data), exact,
  and `ExactPosterior(program, observations)` its posterior draws, as a guide's.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import torch
from torch import nn

from qvr_core.inference.chains import chain_seeds
from qvr_core.inference.convergence import ess_bulk, rhat
from qvr_core.inference.errors import InferenceError
from qvr_core.inference.mcmc import MCMCResult
from qvr_core.inference.sites import ProgramLike, latent_names
from qvr_core.runtime.model import ModelProgram
from qvr_core.runtime.model.enumerate import SummedModel, summed_names
from qvr_core.runtime.program import Observed

ProgressFn = Callable[[int, int, float, int], None]  # (done, total, potential, chain)


def summed_out(program: ProgramLike, observations: Mapping[str, Observed]) -> ProgramLike:
    """`program` with its discrete latent sites summed out, when it is a model program
    that has some (refused, with the site's line, where one cannot be); else itself."""
    if not isinstance(program, ModelProgram) or not summed_names(program, observations):
        return program
    return SummedModel(program, model_data(observations))


def has_continuous_latents(program: ProgramLike, observations: Mapping[str, Observed]) -> bool:
    """Whether anything is left for NUTS to move once the discrete sites are summed out."""
    return bool(latent_names(program, observations))


def discrete_draws(
    program: ProgramLike,
    x: Any,
    observations: Mapping[str, Observed],
    values: Mapping[str, torch.Tensor],
) -> dict[str, torch.Tensor]:
    """One exact posterior draw of the summed sites given the other latents' `values`
    (nothing for a program without summed sites)."""
    if not isinstance(program, SummedModel):
        return {}
    return program.posterior(x, {**model_data(observations), **values})


def model_data(observations: Mapping[str, Observed]) -> dict[str, torch.Tensor]:
    """A model program's observations: whole values (only a seed program's per-position
    sites take a mask)."""
    out = {k: v for k, v in observations.items() if isinstance(v, torch.Tensor)}
    if len(out) != len(observations):
        masked = ", ".join(sorted(set(observations) - set(out)))
        raise InferenceError(
            f"site(s) {masked}: a mask applies to a site observed at every position of a "
            "sequence; a model program's observations are whole"
        )
    return out


class WithDiscreteDraws:
    """A fitted guide whose every draw carries the summed sites too, each drawn from its
    exact posterior given the guide's draw (what SVI's posterior table is made of)."""

    def __init__(
        self, guide: Any, program: ProgramLike, x: Any, observations: Mapping[str, Observed]
    ) -> None:
        self.guide, self.program, self.x, self.observations = guide, program, x, observations

    def rsample(self, x: Any) -> dict[str, torch.Tensor]:
        values: dict[str, torch.Tensor] = self.guide.rsample(x)
        return {**values, **discrete_draws(self.program, x, self.observations, values)}

    def parameters(self, recurse: bool = True) -> Iterator[nn.Parameter]:
        return iter(self.guide.parameters(recurse))


class ExactPosterior:
    """The exact posterior of a program with nothing but summed latents, as a guide
    without parameters: each draw is exact (SVI's posterior table then)."""

    def __init__(self, program: SummedModel, observations: Mapping[str, Observed]) -> None:
        self.program, self.observations = program, model_data(observations)

    def rsample(self, x: Any) -> dict[str, torch.Tensor]:
        return self.program.posterior(x, self.observations)

    def parameters(self, recurse: bool = True) -> Iterator[nn.Parameter]:
        return iter(())


def with_discrete_draws(
    result: MCMCResult,
    program: ProgramLike,
    x: Any,
    observations: Mapping[str, Observed],
) -> MCMCResult:
    """`result` with each summed site drawn under every draw `(chain, draw, ...)` of the
    continuous sites, in the program's site order, with its R-hat and ESS."""
    if not isinstance(program, SummedModel) or not result.samples:
        return result
    chains, n = next(iter(result.samples.values())).shape[:2]
    drawn: dict[str, list[torch.Tensor]] = {name: [] for name in program.summed}
    for c in range(chains):
        for d in range(n):
            values = {k: v[c, d] for k, v in result.samples.items()}
            for name, value in discrete_draws(program, x, observations, values).items():
                drawn[name].append(value)
    stacked = {k: torch.stack(v).reshape(chains, n, *v[0].shape) for k, v in drawn.items() if v}
    merged = {**result.samples, **stacked}
    result.samples = {k: merged[k] for k in program.program.site_names if k in merged}
    _diagnose(result, stacked)
    return result


def exact_draws(
    program: SummedModel,
    x: Any,
    observations: Mapping[str, Observed],
    *,
    chains: int,
    draws: int,
    seed: int,
    on_progress: ProgressFn | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> MCMCResult:
    """`chains` x `draws` exact posterior draws of the summed sites, when no continuous
    latent is left: each chain seeded as NUTS's would be (`chains.chain_seeds`), the log
    joint of each draw its log density, no warmup and no sampler statistics (NaN)."""
    observations = model_data(observations)
    per_chain: list[list[dict[str, torch.Tensor]]] = []
    densities: list[list[float]] = []
    total, done, stopped = chains * draws, 0, False
    with torch.random.fork_rng():
        for c, chain_seed in enumerate(chain_seeds(seed, chains)):
            torch.manual_seed(chain_seed)
            per_chain.append([])
            densities.append([])
            for _ in range(draws):
                if should_stop is not None and should_stop():
                    stopped = True
                    break
                values = program.posterior(x, observations)
                with torch.no_grad():
                    lp = float(program.log_joint(x, {**observations, **values}).sum())
                per_chain[c].append(values)
                densities[c].append(lp)
                done += 1
                if on_progress is not None:
                    on_progress(done, total, -lp, c)
            if stopped:
                break
    longest = max((len(r) for r in per_chain), default=0)
    kept = [c for c, r in enumerate(per_chain) if r and 2 * len(r) >= longest]
    n = min((len(per_chain[c]) for c in kept), default=0)
    samples = {
        name: torch.stack([torch.stack([per_chain[c][d][name] for d in range(n)]) for c in kept])
        for name in program.summed
        if n
    }
    m = len(kept) if n else 0
    nan = torch.full((m,), math.nan, dtype=torch.float64)
    result = MCMCResult(
        samples=samples,
        log_densities=torch.tensor(
            [densities[c][:n] for c in kept] if n else [], dtype=torch.float64
        ).reshape(m, n),
        acceptance_rates=nan,
        divergence_counts=torch.zeros(m, dtype=torch.int64),
        step_sizes=nan.clone(),
        tree_depths=torch.zeros(m, n, dtype=torch.int64),
        num_leapfrog_steps=torch.zeros(m, n, dtype=torch.int64),
        warmup_divergence_counts=torch.zeros(m, dtype=torch.int64),
        energies=torch.full((m, n), math.nan, dtype=torch.float64),
        diverging=torch.zeros(m, n, dtype=torch.bool),
        seeds=chain_seeds(seed, chains),
        stopped=stopped,
    )
    _diagnose(result, samples)
    return result


def log_evidence(
    program: SummedModel, x: Any, observations: Mapping[str, Observed]
) -> torch.Tensor:
    """log p(data) with every latent summed out: the log joint with nothing but the data
    given, when no continuous latent is left (SVI's optimum then, reached exactly)."""
    with torch.no_grad():
        return program.log_joint(x, model_data(observations)).sum()


def _diagnose(result: MCMCResult, samples: Mapping[str, torch.Tensor]) -> None:
    """R-hat and ESS of the draws in `samples`, into `result`."""
    for name, s in samples.items():
        drawn = s.shape[1] > 0
        result.r_hat[name] = torch.from_numpy(rhat(s.double())) if drawn else torch.zeros(0)
        result.ess[name] = torch.from_numpy(ess_bulk(s.double())) if drawn else torch.zeros(0)


__all__ = [
    "ExactPosterior",
    "WithDiscreteDraws",
    "discrete_draws",
    "exact_draws",
    "has_continuous_latents",
    "log_evidence",
    "summed_out",
    "with_discrete_draws",
]
