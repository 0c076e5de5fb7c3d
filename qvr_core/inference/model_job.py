"""One inference run of a model program (priors, plates, data by name), for `run_inference`.

A model program's data is a dict by name: its observed sites and its data names
(the free names its steps read, `sigma`, `group`, `x`). Without a data file, a
model that needs no data names is fitted to a synthetic data set: the observed
sites drawn from the prior under `seed`, as the gallery's "Try it" does.

- `nuts`: NUTS over every latent site in unconstrained space; `steps`
  iterations, the first half warmup; the summary has each site's posterior
  mean and sd (per element), R-hat, effective sample size and divergences.
- `svi`: an AutoNormalGuide fitted with Adam(`lr`) for `steps` steps; the
  posterior summary is from 500 draws of the fitted guide.
- `prior`: `steps` draws of every site from the prior (observed sites too).
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch

from qvr_core.inference.elbo import ELBO
from qvr_core.inference.errors import InferenceError, NonFiniteLossError
from qvr_core.inference.guide import AutoNormalGuide
from qvr_core.inference.job import draw_prior, loss_series
from qvr_core.inference.mcmc import MCMC
from qvr_core.inference.nuts import NUTSKernel
from qvr_core.inference.svi import SVI

#: Draws of the fitted guide that the SVI summary is computed from.
GUIDE_DRAWS = 500


def split_data(
    model: Any, data: dict[str, torch.Tensor] | None, source: str
) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    """(data names, observed sites) from a data set, refusing missing or unknown keys."""
    observed = [s.name for s in model.plan.sites if s.kind == "observe"]
    needed = [*model.data_names, *observed]
    data = dict(data or {})
    missing = [k for k in needed if k not in data]
    unknown = sorted(set(data) - set(needed))
    if missing or unknown:
        parts = []
        if missing:
            where = {n: model.plan.data_uses[n].span.start_line + 1 for n in model.data_names}
            where.update({s.name: s.step.span.start_line + 1 for s in model.plan.sites})
            parts.append("missing " + ", ".join(f"'{k}' (line {where[k]})" for k in missing))
        if unknown:
            parts.append(f"unexpected {', '.join(repr(k) for k in unknown)}")
        raise InferenceError(
            f"{source}: {'; '.join(parts)}. Program {model.name} reads "
            + (f"the data names {', '.join(model.data_names)} and " if model.data_names else "")
            + f"the observed sites {', '.join(observed) or '(none)'}"
        )
    x = {k: _tensor(data[k]) for k in model.data_names}
    return x, {k: _tensor(data[k]) for k in observed}


def _tensor(t: torch.Tensor) -> torch.Tensor:
    if t.dtype == torch.bool:
        return t.long()
    return t.to(torch.get_default_dtype()) if t.is_floating_point() else t.long()


def synthetic(model: Any, seed: int) -> dict[str, torch.Tensor]:
    """Observed sites drawn from the prior under `seed` (a model without data names)."""
    if model.data_names:
        raise InferenceError(
            f"program {model.name} reads the data names {', '.join(model.data_names)}: "
            "give a data file (--data) that holds them"
        )
    torch.manual_seed(seed)
    with torch.no_grad():
        values = model.run({}).values
    torch.manual_seed(seed + 1)
    return {s.name: values[s.name].detach() for s in model.plan.sites if s.kind == "observe"}


def run_model(run: Any, method: str, lr: float, depth: int) -> dict[str, Any]:
    """Run `method` on `run` (the job's `_Run`, with `x` the data names)."""
    model, x, obs = run.model, run.x, run.observations
    with one_thread():
        with torch.no_grad():
            model.run(x, obs)  # validates the data, records every site's support and shape
        if method == "nuts":
            return _nuts(run, depth)
        if method == "svi":
            return _svi(run, lr)
        return draw_prior(run)


@contextmanager
def one_thread() -> Iterator[None]:
    """Run torch on one thread while a model program runs, then restore the count.

    A model program's tensors are small (a plate of tens or thousands of numbers),
    where torch's intra-op threads cost more than they give: on a machine whose
    other core is busy, a Bernoulli log-density of 120 numbers took 20 ms with two
    threads against 0.01 ms with one, and NUTS on the hierarchical logistic
    example ran at 3.5 iterations per second instead of about 100.
    """
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _nuts(run: Any, depth: int) -> dict[str, Any]:
    num_warmup = run.steps // 2
    mcmc = MCMC(NUTSKernel(max_tree_depth=depth), num_warmup, max(run.steps - num_warmup, 1))
    losses: list[float] = []

    def progress(i: int, total: int, potential: float) -> None:
        if not math.isfinite(potential):
            raise NonFiniteLossError(i, potential, what="potential energy")
        losses.append(potential)
        run.report(i, total, potential)

    start = time.perf_counter()
    result = mcmc.run(
        run.model, run.x, run.observations, on_progress=progress, should_stop=run.should_stop
    )
    seconds = time.perf_counter() - start
    summary = result.summary()
    draws = int(result.log_densities.shape[1]) if result.log_densities.dim() == 2 else 0
    posterior = {
        name: {
            **_moments(s.reshape(-1, *s.shape[2:])),
            "r_hat": _finite(summary[name]["r_hat_max"]),
            "ess": _finite(summary[name]["ess_min"]),
        }
        for name, s in result.samples.items()
    }
    ess = [v["ess"] for v in posterior.values() if v["ess"] is not None]
    return {
        **run.head,
        "steps": len(losses),
        "num_warmup": num_warmup,
        "num_samples": draws,
        "acceptance": _finite(float(result.acceptance_rates.mean())) if draws else None,
        "divergences": int(result.divergence_counts.sum()) if draws else 0,
        "warmup_divergences": int(result.warmup_divergence_counts.sum()),
        "step_size": _finite(float(result.step_sizes.mean())) if draws else None,
        "r_hat": {k: v["r_hat"] for k, v in posterior.items()},
        "ess": {k: v["ess"] for k, v in posterior.items()},
        "r_hat_max": max((v["r_hat"] for v in posterior.values() if v["r_hat"]), default=None),
        "ess_min": min(ess, default=None),
        "posterior": posterior,
        **loss_series(losses, seconds),
        "stopped": result.stopped,
    }


def _svi(run: Any, lr: float) -> dict[str, Any]:
    model, x, obs = run.model, run.x, run.observations
    guide = AutoNormalGuide(model, observed_names=set(obs))
    optim = torch.optim.Adam(list(guide.parameters()), lr=lr)
    svi = SVI(model, guide, optim, ELBO(num_particles=1))
    losses: list[float] = []
    start = time.perf_counter()
    stopped = False
    for step in range(1, run.steps + 1):
        if run.stop_requested():
            stopped = True
            break
        try:
            loss = svi.step(x, obs)
        except NonFiniteLossError as e:
            e.summary = {**run.head, "steps": len(losses), **loss_series(losses, 0.0)}  # type: ignore[attr-defined]  # the job reports the run so far
            raise
        losses.append(loss)
        run.report(step, run.steps, loss)
    seconds = time.perf_counter() - start
    with torch.no_grad():
        draws = [guide.rsample(x) for _ in range(GUIDE_DRAWS)]
    posterior = {
        name: _moments(torch.stack([d[name] for d in draws])) for name in guide.latent_names
    }
    return {
        **run.head,
        "steps": len(losses),
        "lr": lr,
        "posterior": posterior,
        **loss_series(losses, seconds),
        "stopped": stopped,
    }


def _moments(s: torch.Tensor) -> dict[str, Any]:
    """Posterior mean and sd per element of a site (draws on the first axis)."""
    f = s.detach().to(torch.float64)
    sd = f.std(0) if f.shape[0] > 1 else torch.zeros_like(f[0])
    return {"shape": list(f.shape[1:]), "mean": f.mean(0).tolist(), "sd": sd.tolist()}


def _finite(v: float) -> float | None:
    return v if math.isfinite(v) else None
