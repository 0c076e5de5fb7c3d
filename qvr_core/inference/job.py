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
- `svi`: `steps` SVI steps with a guide (`guide`: AutoNormal by default, or
  one of `autoguides.GUIDES`) and Adam(`lr`), fitting the parameters and the
  guide together, as in the seeds; the summary's `posterior` is the table of
  200 draws from the fitted guide.
- `nuts`: NUTS over the parameters (Normal(0, 1) prior, via
  `bayesian_lift_parameters`) and every unobserved site; `chains` chains (4 by
  default) of `steps` iterations each, the first half warmup, in parallel
  processes (`chains.run_chains`); the summary's `posterior` is the table of
  `summary.summarize` with its convergence warnings.
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

from qvr_core.check.types import Seq
from qvr_core.datafile import DataFile
from qvr_core.inference.autoguides import GUIDES
from qvr_core.inference.chains import run_chains
from qvr_core.inference.data import (
    conform,
    read_data,
    resolve_data_path,
    select,
)
from qvr_core.inference.elbo import ELBO
from qvr_core.inference.errors import (
    InferenceError,
    NonFiniteLossError,
    RunOutOfMemoryError,
    RunTooLargeError,
)
from qvr_core.inference.lift import bayesian_lift_parameters
from qvr_core.inference.live import LiveDraws
from qvr_core.inference.mcmc import MCMCResult
from qvr_core.inference.nuts import NUTSKernel
from qvr_core.inference.results import RunResults
from qvr_core.inference.sites import latent_names
from qvr_core.inference.summary import SamplerStats, summarize
from qvr_core.inference.svi import SVI
from qvr_core.resources import (
    Estimate,
    MemoryBudgetError,
    check_budget,
    default_budget,
    estimate,
    format_bytes,
)
from qvr_core.run_arguments import METHODS as RUN_METHODS
from qvr_core.run_arguments import RunArgumentError, validate_run_arguments

METHODS = RUN_METHODS
ProgressFn = Callable[[int, int, float], None]
UpdateFn = Callable[[dict[str, Any]], None]
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
    data: DataFile | str | Path | None = None,
    data_root: str | Path | None = None,
    max_tree_depth: int = 6,
    chains: int = 4,
    guide: str = "normal",
    memory_budget: int | None = None,
    on_progress: ProgressFn | None = None,
    should_stop: StopFn | None = None,
    results: RunResults | None = None,
    predictive: bool = False,
    on_update: UpdateFn | None = None,
) -> dict[str, Any]:
    """Check `source`, read and validate the data, size the run, compile, run `method`;
    return the summary dict.

    `path` only names the source in messages. `data` is a path or the bytes of
    a file already read (`DataFile`, what the language server hands over).
    `data_root`, when given, is the workspace: relative data paths are
    resolved against it and paths outside it are refused. A run whose
    estimated memory (`qvr_core.resources`) is over `memory_budget` bytes
    (default: half the available memory) is refused before anything is
    allocated.

    `results`, when given, receives the draws (`qvr_core.inference.results`;
    `predictive` adds posterior predictive draws of the observed sites).
    `on_update`, when given, receives NUTS draws as they arrive: every chain's
    traces and the summary table so far (`qvr_core.inference.live`).
    """
    try:
        args = validate_run_arguments(
            {
                "program": program,
                "method": method,
                "steps": steps,
                "lr": lr,
                "seed": seed,
                "batch": batch,
                "seq_len": seq_len,
                "max_tree_depth": max_tree_depth,
                "chains": chains,
                "guide": guide,
            }
        )
    except RunArgumentError as e:
        raise InferenceError(str(e)) from None
    if memory_budget is not None and (
        isinstance(memory_budget, bool) or not isinstance(memory_budget, int) or memory_budget < 1
    ):
        raise InferenceError(f"memory_budget must be a number of bytes, not {memory_budget!r}")
    method = args.method
    with _user_errors():
        checked, name = _check(source, path, args.program)
        calls = _Calls(on_progress, should_stop, on_update, results, predictive)
        if _model_decl(checked, name) is not None:
            return _model(checked, name, args, data, data_root, calls)
        info = checked.programs[name]
        observed = [s.name for s in info.sites if s.kind == "observe"]
        loaded = None if data is None else _read(data, data_root, observed, checked, name)
        if loaded is not None:
            n, length = _data_shape(loaded[0], info)
        else:
            n, length = args.batch, args.seq_len
        budget = memory_budget if memory_budget is not None else default_budget()
        parallel = args.chains if method == "nuts" else 1
        need = estimate(
            checked, name, method=method, batch=n, seq_len=length, steps=args.steps, chains=parallel
        )
        try:
            check_budget(need, budget)
        except MemoryBudgetError as e:
            raise RunTooLargeError(f"{e}; lower those sizes or raise the memory budget") from None
        try:
            model = _compile(checked, path, name, args.seed, budget)
            if loaded is None:
                x, observations = _synthetic(model, observed, args.seed, n, length)
            else:
                x, observations = loaded
            head = {
                "method": method,
                "program": name,
                "data": _data_name(data),
                "batch": int(x.shape[0]),
            }
            run = _Run(model, x, observations, head, args.steps, calls)
            run.keep_data()
            with _flush_denormals():
                if method == "svi":
                    return _svi(run, args.lr, args.guide)
                if method == "nuts":
                    return _nuts(run, args.max_tree_depth, args.chains, args.seed)
                return draw_prior(run)
        except MemoryError:
            raise _out_of_memory(need, budget) from None
        except RuntimeError as e:
            if not _is_allocation_failure(e):
                raise
            raise _out_of_memory(need, budget) from None
    raise AssertionError("unreachable")  # pragma: no cover


def _data_name(data: DataFile | str | Path | None) -> str:
    if data is None:
        return "synthetic"
    return data.name if isinstance(data, DataFile) else str(data)


def _is_allocation_failure(e: RuntimeError) -> bool:
    text = str(e).lower()
    signs = ("out of memory", "can't allocate memory", "cannot allocate memory", "bad_alloc")
    return any(sign in text for sign in signs)


def _out_of_memory(need: Estimate, budget: int) -> RunOutOfMemoryError:
    """What ran out, in the estimate's words: the total and the need most to blame (measured
    against what the machine could give, which was less than the budget)."""
    culprit = need.culprit(min(budget, default_budget()))
    what = f"; what is big: {culprit.describe()}" if culprit is not None else ""
    return RunOutOfMemoryError(
        f"the run ran out of memory: program {need.program} needs about "
        f"{format_bytes(need.total)} for {need.method} at batch {need.batch}, "
        f"seq_len {need.seq_len}{what}"
    )


def _data_shape(x: torch.Tensor, info: Any) -> tuple[int, int]:
    """The batch and sequence length of validated data."""
    length = int(x.shape[1]) if isinstance(info.type.dom, Seq) else 1
    return int(x.shape[0]), max(length, 1)


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


def _check(source: str, path: str | None, program: str | None) -> tuple[Any, str]:
    """The checked source and the program to run (refusing lets and unexported names)."""
    from qvr_core.check import check
    from qvr_core.runtime.errors import QvrError, format_diagnostics

    checked = check(source)
    if not checked.ok:
        raise QvrError(
            f"{path or 'the source'} has errors:\n" + format_diagnostics(checked.errors, path),
            checked.errors,
            path,
        )
    name = program if program is not None else checked.default_export
    if name is None:
        raise InferenceError(f"{path or 'the source'} exports nothing: add `export NAME`")
    if name not in checked.exports:
        raise InferenceError(
            f"'{name}' is not exported; exports: {', '.join(checked.exports) or 'none'}"
        )
    if _model_decl(checked, name) is not None:
        return checked, str(name)
    if name not in checked.programs or checked.programs[name].type is None:
        raise InferenceError(
            f"'{name}' is a let, not a program: inference needs a program with sample or "
            "observe steps"
        )
    return checked, str(name)


def _model_decl(checked: Any, name: str) -> Any:
    from qvr_core.runnable import model_program

    return model_program(checked, name)


def _model(
    checked: Any,
    name: str,
    args: Any,
    data: DataFile | str | Path | None,
    data_root: str | Path | None,
    calls: _Calls,
) -> dict[str, Any]:
    """A model program's run: its data by name (`qvr_core.inference.model_job`), then the
    methods every program has, its sites sampled as they are (no parameters to lift)."""
    from qvr_core.inference.model_job import one_thread, split_data, synthetic
    from qvr_core.runtime.model import compile_model

    torch.manual_seed(args.seed)
    model = compile_model(checked, name)
    if data is None:
        x, observations = split_data(model, synthetic(model, args.seed), "synthetic data")
    else:
        file = data if isinstance(data, DataFile) else resolve_data_path(data, data_root)
        shown = file.name if isinstance(file, DataFile) else str(file)
        x, observations = split_data(model, read_data(file), shown)
    if args.method == "prior":
        observations = {}
    head = {"method": args.method, "program": name, "data": _data_name(data), "batch": 1}
    run = _Run(model, x, observations, head, args.steps, calls)
    run.keep_data()
    with _flush_denormals(), one_thread():
        with torch.no_grad():
            model.run(x, observations)  # validates the data, records every site's support
        if args.method == "nuts":
            return _nuts(run, args.max_tree_depth, args.chains, args.seed, lift=False)
        if args.method == "svi":
            return _svi(run, args.lr, args.guide)
        return draw_prior(run)


def _compile(checked: Any, path: str | None, name: str, seed: int, budget: int) -> Any:
    from qvr_core.runtime.compile import Compiler

    torch.manual_seed(seed)  # the compiled initialisation is part of the run's seed
    return Compiler(checked, path, memory_budget=budget).export(name)


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


def _read(
    data: DataFile | str | Path,
    root: str | Path | None,
    observed: list[str],
    checked: Any,
    name: str,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """The data, read once and validated against the program's types."""
    file = data if isinstance(data, DataFile) else resolve_data_path(data, root)
    shown = file.name if isinstance(file, DataFile) else str(file)
    x, observations = select(read_data(file), observed, shown)
    info = checked.programs[name]
    types = {s.name: s.value_type for s in info.sites if s.kind == "observe"}
    return conform(x, observations, info.type.dom, types, shown)


@dataclass(frozen=True)
class _Calls:
    """What the caller of a run asked for besides the summary: callbacks and results."""

    on_progress: ProgressFn | None
    should_stop: StopFn | None
    on_update: UpdateFn | None
    results: RunResults | None  # receives the draws when given
    predictive: bool  # posterior predictive draws into `results`


@dataclass
class _Run:
    """What every method needs: the model, its data, the summary head and the caller's calls."""

    model: Any
    x: torch.Tensor | dict[str, torch.Tensor]  # a program's input; a model's data by name
    observations: dict[str, torch.Tensor]
    head: dict[str, Any]
    steps: int
    calls: _Calls

    @property
    def should_stop(self) -> StopFn | None:
        return self.calls.should_stop

    @property
    def results(self) -> RunResults | None:
        return self.calls.results

    @property
    def predictive(self) -> bool:
        return self.calls.predictive

    def keep_data(self) -> None:
        """The observed sites and the inputs (a program's `x`, a model's data names) into
        the results, when the caller keeps them."""
        if self.results is None:
            return
        self.results.add("observed_data", self.observations)
        inputs = self.x if isinstance(self.x, dict) else {"x": self.x}
        if inputs:
            self.results.add("constant_data", inputs)

    def stop_requested(self) -> bool:
        return self.should_stop is not None and bool(self.should_stop())

    def report(self, step: int, total: int, loss: float) -> None:
        if self.calls.on_progress is not None:
            self.calls.on_progress(step, total, loss)


def _finite(v: float) -> float | None:
    return v if math.isfinite(v) else None


def _svi(run: _Run, lr: float, guide_name: str = "normal") -> dict[str, Any]:
    model, x, observations = run.model, run.x, run.observations
    guide = GUIDES[guide_name](model, observed_names=set(observations))
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
            "guide": guide_name,
            **loss_series(losses, seconds),  # the loss is -ELBO
            "posterior": _guide_posterior(run, guide) if losses else None,
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


GUIDE_DRAWS = 200


def _guide_posterior(run: _Run, guide: Any) -> dict[str, Any] | None:
    """The summary table of `GUIDE_DRAWS` draws from the fitted guide (independent draws:
    no R-hat or ESS), which also go to the results' posterior group as one chain."""
    draws: dict[str, list[torch.Tensor]] = {}
    with torch.no_grad():
        for _ in range(GUIDE_DRAWS):
            for name, value in guide.rsample(run.x).items():
                draws.setdefault(name, []).append(value.detach())
    if not draws:
        return None
    stacked = {n: torch.stack(v)[None] for n, v in draws.items()}  # (chain 1, draw, ...)
    if run.results is not None:
        run.results.add("posterior", stacked)
        if run.predictive:
            run.results.add("posterior_predictive", _predictive(run.model, run.x, stacked, run))
    arrays = {n: v.to(torch.float64).numpy() for n, v in stacked.items()}
    return summarize(arrays, diagnostics=False).to_dict()


def _nuts(run: _Run, depth: int, chains: int, seed: int, lift: bool = True) -> dict[str, Any]:
    """NUTS over every latent site; with `lift`, over the program's parameters too (under
    a Normal(0, 1) prior): the seeds' programs have weights, model programs only sites."""
    model, x, observations = run.model, run.x, run.observations
    if lift:
        with torch.no_grad():
            drawn = model.run(x, observations).values
        extra = {n: tuple(drawn[n].shape) for n in latent_names(model, observations)}
        lifted, lx, lobs = bayesian_lift_parameters(
            model, x, observations, additional_latents=extra
        )
    else:
        lifted, lx, lobs = model, x, observations
    num_warmup = run.steps // 2
    num_samples = max(run.steps - num_warmup, 1)
    kernel = NUTSKernel(max_tree_depth=depth)
    traces: list[list[float]] = [[] for _ in range(chains)]

    def progress(i: int, total: int, potential: float, chain: int) -> None:
        if not math.isfinite(potential):
            raise NonFiniteLossError(i, potential, what="potential energy")
        traces[chain].append(potential)
        run.report(i, total, potential)

    live = None
    if run.calls.on_update is not None:
        live = LiveDraws(chains, num_warmup, depth, run.calls.on_update)
    start = time.perf_counter()
    result = run_chains(
        lifted,
        lx,
        lobs,
        kernel,
        num_warmup,
        num_samples,
        chains=chains,
        seed=seed,
        on_progress=progress,
        on_draw=None if live is None else live.add,
        should_stop=run.should_stop,
    )
    seconds = time.perf_counter() - start
    if live is not None:
        live.send()  # every draw, before the summary
    site_summary = result.summary()
    r_hat = {k: _finite(v["r_hat_max"]) for k, v in site_summary.items()}
    ess = {k: _finite(v["ess_min"]) for k, v in site_summary.items()}
    draws = int(result.log_densities.shape[1]) if result.log_densities.dim() == 2 else 0
    posterior = posterior_summary(result, depth) if draws else None
    if run.results is not None and draws:
        _keep_nuts(run, result, lifted, lx)
    return {
        **run.head,
        "steps": sum(len(t) for t in traces),
        "chains": int(result.log_densities.shape[0]) if draws else 0,
        "chains_requested": chains,
        "processes": result.processes,
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
        "posterior": posterior,
        **loss_series(traces[0], seconds),  # the first chain's potential energy
        "traces": traces,  # every chain's, warmup included
        "steps_per_second": sum(len(t) for t in traces) / seconds if seconds > 0 else None,
        "stopped": result.stopped,
    }


def _keep_nuts(run: _Run, result: MCMCResult, lifted: Any, x: Any) -> None:
    """The draws, their statistics and, with `predictive`, the observed sites drawn again."""
    assert run.results is not None
    run.results.add("posterior", result.samples)
    run.results.add(
        "sample_stats",
        {
            "diverging": result.diverging,
            "tree_depth": result.tree_depths,
            "energy": result.energies,
            "n_steps": result.num_leapfrog_steps,
            "lp": result.log_densities,
        },
    )
    if run.predictive:
        run.results.add("posterior_predictive", _predictive(lifted, x, result.samples, run))


def _predictive(
    model: Any, x: Any, samples: dict[str, torch.Tensor], run: _Run
) -> dict[str, torch.Tensor]:
    """Each observed site drawn under each draw of `samples` (`(chain, draw, ...)`)."""
    names = list(run.observations)
    chains, draws = next(iter(samples.values())).shape[:2]
    out: dict[str, list[torch.Tensor]] = {n: [] for n in names}
    with torch.no_grad():
        for c in range(chains):
            for d in range(draws):
                values = model.run(x, None, {k: v[c, d] for k, v in samples.items()}).values
                for n in names:
                    out[n].append(values[n])
    return {n: torch.stack(v).reshape(chains, draws, *v[0].shape) for n, v in out.items()}


def posterior_summary(result: MCMCResult, max_tree_depth: int) -> dict[str, Any]:
    """The summary table and warnings of NUTS draws (`summary.summarize`), JSON-ready."""
    stats = SamplerStats(
        diverging=result.diverging.numpy(),
        tree_depth=result.tree_depths.numpy(),
        energy=result.energies.numpy(),
        max_tree_depth=max_tree_depth,
    )
    draws = {k: v.detach().to(torch.float64).numpy() for k, v in result.samples.items()}
    return summarize(draws, stats).to_dict()


def loss_series(losses: list[float], seconds: float) -> dict[str, Any]:
    """The loss series and its timing, the part every method's summary shares."""
    return {
        "initial_loss": losses[0] if losses else None,
        "final_loss": losses[-1] if losses else None,
        "losses": losses,
        "seconds": seconds,
        "steps_per_second": len(losses) / seconds if seconds > 0 else None,
    }


def draw_prior(run: _Run) -> dict[str, Any]:
    """Forward runs under the current parameters (the seed's 'true' ones without data); a
    model program's run too (its log joint is one number, so mean and sum agree)."""
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
    if run.results is not None and losses:
        for kind, group in (("sample", "prior"), ("observe", "prior_predictive")):
            kept = {n: torch.stack(vs)[None] for n, vs in draws.items() if vs}
            run.results.add(group, {n: v for n, v in kept.items() if model.site_kind(n) == kind})
    return {
        **run.head,
        "steps": len(losses),
        "sites": sites,
        **loss_series(losses, seconds),
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
