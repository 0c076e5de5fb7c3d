"""One inference run from QVR source to a JSON-ready summary.

`run_inference` is what both `qvr run` and the language server's worker process
call, so a run behaves the same from the terminal and from an editor. Without
data it does what the gallery's "Try it" sections do: under `seed`, draw every
parameter as `randn * 0.3`, make inputs with `model.example_input(batch,
seq_len)` and forward-sample the observed sites; then re-initialise the
parameters the same way under `seed + 1` and fit. With data (see
`qvr_core.inference.data` for the formats) it fits the program's own
initialisation (under `seed`) to the file's `x` and observed sites.

Methods:
- `svi`: `steps` SVI steps with an AutoNormalGuide and Adam(`lr`), fitting the
  parameters and the guide together, as in the seeds.
- `nuts`: NUTS over the parameters (Normal(0, 1) prior, via
  `bayesian_lift_parameters`) and every unobserved site; `steps` iterations, the
  first half warmup.
- `prior`: `steps` forward runs of the program, summarised per site.

Denormal floats are flushed to zero while a run lasts (see `_flush_denormals`).

Every problem a user can cause surfaces as `InferenceError` with a readable
message; a NaN or infinite loss raises `NonFiniteLossError` naming the step,
with the summary so far in its `summary` attribute. `should_stop()` returning
true ends the run cleanly with `"stopped": true`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from qvr_core.inference.data import read_data, resolve_data_path, select
from qvr_core.inference.elbo import ELBO
from qvr_core.inference.errors import InferenceError, NonFiniteLossError
from qvr_core.inference.guide import AutoNormalGuide
from qvr_core.inference.lift import bayesian_lift_parameters
from qvr_core.inference.mcmc import MCMC
from qvr_core.inference.nuts import NUTSKernel
from qvr_core.inference.sites import latent_names
from qvr_core.inference.svi import SVI

METHODS = ("svi", "nuts", "prior")
ProgressFn = Callable[[int, int, float], None]
StopFn = Callable[[], bool]


def run_inference(
    source: str,
    *,
    path: str | None = None,
    program: str | None = None,
    method: str = "svi",
    steps: int = 100,
    lr: float = 1e-2,
    seed: int = 0,
    batch: int = 16,
    seq_len: int = 8,
    data: str | Path | None = None,
    data_root: str | Path | None = None,
    max_tree_depth: int = 6,
    on_progress: ProgressFn | None = None,
    should_stop: StopFn | None = None,
) -> dict[str, Any]:
    """Compile `source`, set up data, run `method`; return the summary dict.

    `path` only names the source in messages. `data_root`, when given, is the
    workspace: relative data paths are resolved against it and paths outside
    it are refused (the language server passes its workspace folder).
    """
    if method not in METHODS:
        raise InferenceError(f"unknown method '{method}': use one of {', '.join(METHODS)}")
    for name, value in (("steps", steps), ("batch", batch), ("seq_len", seq_len)):
        if int(value) < 1:
            raise InferenceError(f"{name} must be at least 1, got {value}")
    if method == "svi" and not lr > 0:
        raise InferenceError(f"lr must be positive, got {lr}")
    with _user_errors():
        model, name = _compile(source, path, program, seed)
        observed = [s for s in model.site_names if model.site_kind(s) == "observe"]
        if data is None:
            x, observations = _synthetic(model, observed, seed, batch, seq_len)
        else:
            x, observations = _from_file(model, observed, data, data_root)
        head = {
            "method": method,
            "program": name,
            "data": str(data) if data else "synthetic",
            "batch": int(x.shape[0]),
        }
        run = _Run(model, x, observations, head, int(steps), on_progress, should_stop)
        with _flush_denormals():
            if method == "svi":
                return _svi(run, lr)
            if method == "nuts":
                return _nuts(run, max_tree_depth)
            return _prior(run)
    raise AssertionError("unreachable")  # pragma: no cover


@contextmanager
def _flush_denormals() -> Iterator[None]:
    """Treat denormal floats as zero during the run, then restore torch's default.

    Gradients that travel back through a long saturated recurrence (a scan of
    tanh cells) shrink into the denormal range, where CPU matrix products run
    several times slower; flushing them costs no accuracy that matters here
    and made an SVI step on the gallery RNN about 1.5x faster.
    """
    torch.set_flush_denormal(True)
    try:
        yield
    finally:
        torch.set_flush_denormal(False)


@contextmanager
def _user_errors() -> Iterator[None]:
    """Turn the errors a user can cause (bad source, bad shapes) into InferenceError."""
    from qvr_core.runtime.errors import QvrError, QvrRuntimeError

    try:
        yield
    except InferenceError:
        raise
    except (QvrError, QvrRuntimeError, OSError) as e:
        raise InferenceError(str(e)) from e


def _compile(source: str, path: str | None, program: str | None, seed: int) -> tuple[Any, str]:
    from qvr_core.dsl import loads

    prog = loads(source, path=path)
    torch.manual_seed(seed)  # the compiled initialisation is part of the run's seed
    if program is None:
        model = prog.morphism
        name = prog.module.default_export
    else:
        if program not in prog.exports:
            raise InferenceError(
                f"'{program}' is not exported; exports: {', '.join(prog.exports) or 'none'}"
            )
        model, name = prog[program], program
    if not hasattr(model, "site_names"):
        raise InferenceError(
            f"'{name}' is a let, not a program: inference needs a program with sample or "
            "observe steps"
        )
    return model, str(name)


def _reinit(model: torch.nn.Module) -> None:
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn_like(p) * 0.3)


def _synthetic(
    model: Any, observed: list[str], seed: int, batch: int, seq_len: int
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """The seeds' recipe: true parameters under `seed`, data, fresh parameters under seed+1."""
    torch.manual_seed(seed)
    _reinit(model)
    x = model.example_input(batch, seq_len)
    with torch.no_grad():
        values = model.run(x).values
    observations = {n: values[n].detach() for n in observed}
    torch.manual_seed(seed + 1)
    _reinit(model)
    return x, observations


def _from_file(
    model: Any, observed: list[str], data: str | Path, root: str | Path | None
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    file = resolve_data_path(data, root)
    x, observations = select(read_data(file), observed, str(file))
    like = model.example_input(1, 1)
    x = _cast(_unsqueeze_unit(x, like), like.dtype, "x", file)
    with torch.no_grad():
        values = model.run(x).values
    return x, {
        k: _cast(_unsqueeze_unit(v, values[k]), values[k].dtype, k, file)
        for k, v in observations.items()
    }


def _unsqueeze_unit(t: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """A column of numbers for a one-dimensional value: (B,) -> (B, 1)."""
    if t.dim() == 1 and like.dim() == 2 and like.shape[-1] == 1:
        return t.unsqueeze(-1)
    return t


def _cast(t: torch.Tensor, dtype: torch.dtype, key: str, file: Path) -> torch.Tensor:
    if dtype.is_floating_point:
        return t.to(dtype)
    if t.is_floating_point() and not bool((t == t.round()).all()):
        raise InferenceError(f"{file}: '{key}' holds FinSet values and must be whole numbers")
    return t.to(dtype)


@dataclass
class _Run:
    """What every method needs: the model, its data, the summary head and the callbacks."""

    model: Any
    x: torch.Tensor
    observations: dict[str, torch.Tensor]
    head: dict[str, Any]
    steps: int
    on_progress: ProgressFn | None
    should_stop: StopFn | None

    def stop_requested(self) -> bool:
        return self.should_stop is not None and bool(self.should_stop())

    def report(self, step: int, total: int, loss: float) -> None:
        if self.on_progress is not None:
            self.on_progress(step, total, loss)


def _finite(v: float) -> float | None:
    return v if math.isfinite(v) else None


def _svi(run: _Run, lr: float) -> dict[str, Any]:
    model, x, observations = run.model, run.x, run.observations
    guide = AutoNormalGuide(model, observed_names=set(observations))
    params = list(model.parameters()) + list(guide.parameters())
    optim = torch.optim.Adam(params, lr=lr, foreach=True)  # one fused pass over all tensors
    svi = SVI(model, guide, optim, ELBO(num_particles=1))
    losses: list[float] = []
    start = time.perf_counter()

    def summary(stopped: bool) -> dict[str, Any]:
        seconds = time.perf_counter() - start
        return {
            **run.head,
            "steps": len(losses),
            "lr": lr,
            **_series(losses, seconds),
            "stopped": stopped,
        }

    for step in range(1, run.steps + 1):
        if run.stop_requested():
            return summary(True)
        try:
            loss = svi.step(x, observations)
        except NonFiniteLossError as e:
            e.summary = summary(True)  # type: ignore[attr-defined]  # the run so far, for the caller
            raise
        losses.append(loss)
        run.report(step, run.steps, loss)
    return summary(False)


def _nuts(run: _Run, depth: int) -> dict[str, Any]:
    model, x, observations = run.model, run.x, run.observations
    with torch.no_grad():
        drawn = model.run(x, observations).values
    extra = {n: tuple(drawn[n].shape) for n in latent_names(model, observations)}
    lifted, lx, lobs = bayesian_lift_parameters(model, x, observations, additional_latents=extra)
    num_warmup = run.steps // 2
    mcmc = MCMC(NUTSKernel(max_tree_depth=depth), num_warmup, max(run.steps - num_warmup, 1))
    losses: list[float] = []

    def progress(i: int, total: int, potential: float) -> None:
        if not math.isfinite(potential):
            raise NonFiniteLossError(i, potential, what="potential energy")
        losses.append(potential)
        run.report(i, total, potential)

    start = time.perf_counter()
    result = mcmc.run(lifted, lx, lobs, on_progress=progress, should_stop=run.should_stop)
    seconds = time.perf_counter() - start
    site_summary = result.summary()
    r_hat = {k: _finite(v["r_hat_max"]) for k, v in site_summary.items()}
    ess = {k: _finite(v["ess_min"]) for k, v in site_summary.items()}
    draws = int(result.log_densities.shape[1]) if result.log_densities.dim() == 2 else 0
    return {
        **run.head,
        "steps": len(losses),
        "num_warmup": num_warmup,
        "num_samples": draws,
        "acceptance": _finite(float(result.acceptance_rates.mean())) if draws else None,
        "divergences": int(result.divergence_counts.sum()) if draws else 0,
        "warmup_divergences": int(result.warmup_divergence_counts.sum()),
        "step_size": _finite(float(result.step_sizes.mean())) if draws else None,
        "r_hat": r_hat,
        "ess": ess,
        "r_hat_max": max((v for v in r_hat.values() if v is not None), default=None),
        "ess_min": min((v for v in ess.values() if v is not None), default=None),
        **_series(losses, seconds),
        "stopped": result.stopped,
    }


def _series(losses: list[float], seconds: float) -> dict[str, Any]:
    """The loss series and its timing, the part every method's summary shares."""
    return {
        "initial_loss": losses[0] if losses else None,
        "final_loss": losses[-1] if losses else None,
        "losses": losses,
        "seconds": seconds,
        "steps_per_second": len(losses) / seconds if seconds > 0 else None,
    }


def _prior(run: _Run) -> dict[str, Any]:
    """Forward runs under the current parameters (the seed's 'true' ones without data)."""
    model = run.model
    draws: dict[str, list[torch.Tensor]] = {n: [] for n in model.site_names}
    losses: list[float] = []
    start = time.perf_counter()
    stopped = False
    with torch.no_grad():
        for step in range(1, run.steps + 1):
            if run.stop_requested():
                stopped = True
                break
            result = model.run(run.x)
            for n in model.site_names:
                draws[n].append(result.values[n])
            losses.append(-float(result.log_joint.mean()))
            run.report(step, run.steps, losses[-1])
    seconds = time.perf_counter() - start
    sites = {n: _describe(model, n, vs) for n, vs in draws.items() if vs}
    return {
        **run.head,
        "steps": len(losses),
        "sites": sites,
        **_series(losses, seconds),
        "stopped": stopped,
    }


def _describe(model: Any, name: str, values: list[torch.Tensor]) -> dict[str, Any]:
    v = torch.stack(values)
    out: dict[str, Any] = {
        "kind": model.site_kind(name),
        "support": model.site_support(name),
        "shape": list(v.shape[1:]),
    }
    if v.is_floating_point():
        f = v.to(torch.float64)
        out.update(
            mean=float(f.mean()),
            sd=float(f.std()) if f.numel() > 1 else 0.0,
            min=float(f.min()),
            max=float(f.max()),
        )
    else:
        counts = torch.bincount(v.reshape(-1).clamp(min=0))
        top = torch.argsort(counts, descending=True)[:5]
        total = int(v.numel())
        out["most_frequent"] = [
            {"value": int(i), "fraction": int(counts[i]) / total} for i in top if counts[i] > 0
        ]
    return out
