"""The three methods of a run, each from a prepared program to a `RunSummary`.

- `run_svi`: `steps` SVI steps with a guide (`guide`: AutoNormal by default,
  or one of `inference.autoguides.GUIDES`) and Adam(`lr`), fitting the
  program's parameters and the guide together, as in the seeds; the
  summary's `posterior` is the table of `GUIDE_DRAWS` draws from the fitted
  guide.
- `run_nuts`: NUTS over a target's latents (`lift_parameters` makes a seed
  program's weights latents under a Normal(0, 1) prior; a model program is
  its own target), `chains` chains of `steps` iterations each, the first half
  warmup, advanced together (`inference.chains.run_chains`); the
  summary's `posterior` is the table of `inference.summary.summarize` with
  its convergence warnings.
- `run_prior`: `steps` forward runs of the program, summarised per site.

For SVI and NUTS a model program's discrete latent sites are summed out and drawn
back from their posterior given each draw (`inference.discrete`); with nothing
continuous left, both give exact draws.

The algorithms are `qvr_core.inference`'s; this module drives them, reports
progress, honours a stop request and keeps the draws in `RunResults`.

With results kept, SVI and NUTS also keep the pointwise log-likelihood of every
draw (`keep_log_likelihood`), the `log_likelihood` group PSIS-LOO and WAIC read
(`qvr compare`): one variable per observed site, `(chain, draw, *plates)`. A model
program's terms are its runtime's (`ModelProgram.log_likelihood`: elementwise, a
`marginalize` scope's or a summed discrete site's per-group marginal); a seed
program's are its sites' per-example log-densities (a sequence's positions summed:
one term per example). Left out, with a warning in the summary and the reason in
the results' `attrs`, when it would not fit in the memory budget (`runs.sizing`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from functools import partial
from typing import Any, Protocol, cast

import torch
from torch import nn

from qvr_core.inference.adam import Adam
from qvr_core.inference.autoguides import GUIDES
from qvr_core.inference.chains import ChainShare, HandedOver, run_chains
from qvr_core.inference.discrete import (
    ExactPosterior,
    WithDiscreteDraws,
    exact_draws,
    has_continuous_latents,
    log_evidence,
    summed_out,
    with_discrete_draws,
)
from qvr_core.inference.elbo import ELBO
from qvr_core.inference.errors import InferenceError, NonFiniteLossError, is_torch_error
from qvr_core.inference.fisher import chosen_metric
from qvr_core.inference.lift import LiftedProgram, bayesian_lift_parameters
from qvr_core.inference.live import LiveDraws
from qvr_core.inference.mcmc import MCMCResult
from qvr_core.inference.nuts import NUTSKernel
from qvr_core.inference.results import RunResults
from qvr_core.inference.sites import ProgramLike, latent_names
from qvr_core.inference.summary import FitWarning, SamplerStats, Summary, summarize
from qvr_core.inference.svi import SVI, Reducer
from qvr_core.runs.attention_record import (
    NUTS_DRAWS,
    PRIOR_BASIS,
    SVI_BASIS,
    attention_data,
    has_attention,
    nuts_basis,
    record_attention,
)
from qvr_core.runs.minibatch import Minibatches
from qvr_core.runs.numpyro_nuts import (
    METRICS,
    Engine,
    EngineRun,
    Export,
    Resume,
    Takeover,
    exported,
    refusal,
)
from qvr_core.runs.numpyro_nuts import sample as sample_numpyro
from qvr_core.runs.predictive import posterior_predictive
from qvr_core.runs.sequence_data import data_keys, observed_values
from qvr_core.runs.sizing import Sizing, log_likelihood_refusal
from qvr_core.runs.summary import (
    AttentionWeights,
    Frequency,
    Method,
    NutsStats,
    RunSummary,
    SiteDraws,
    SviFit,
    finite,
)
from qvr_core.runtime.errors import QvrRuntimeError, first_line
from qvr_core.runtime.model import ModelProgram
from qvr_core.runtime.model.enumerate import SummedModel
from qvr_core.runtime.padding import Padded, unpad
from qvr_core.runtime.program import Observed, ProgramModule
from qvr_core.runtime.share import sharing

#: Draws of the fitted guide that the SVI summary is computed from.
GUIDE_DRAWS = 200

#: A program's input: a seed program's batched tensor (`Padded` when its sequences have
#: different lengths), a model program's data by name.
Input = torch.Tensor | Padded | dict[str, torch.Tensor]
ProgressFn = Callable[[int, int, float], None]
UpdateFn = Callable[[dict[str, Any]], None]
StopFn = Callable[[], bool]


@dataclass(frozen=True)
class Calls:
    """What the caller of a run asked for besides the summary: callbacks and results."""

    on_progress: ProgressFn | None = None  # (step, total, loss) after every step
    should_stop: StopFn | None = None  # true: end the run cleanly, `stopped` set
    on_update: UpdateFn | None = None  # NUTS draws so far (`inference.live`)
    results: RunResults | None = None  # receives the draws when given
    predictive: bool = False  # posterior predictive draws into `results`


@dataclass(frozen=True)
class Job:
    """What every method needs: the program, its data, the summary's head, the calls."""

    method: Method
    name: str  # the program's
    data: str  # "synthetic", or the data file's name
    program: ProgramLike
    x: Input
    observations: dict[str, Observed]  # a seed program's may be `Masked`
    steps: int
    calls: Calls
    sizing: Sizing | None = None  # the estimate the run was admitted under

    @property
    def batch(self) -> int:
        return self.batch_of(self.x)

    @staticmethod
    def batch_of(x: Input) -> int:
        """A seed program's examples (a model program's data: one)."""
        return 1 if isinstance(x, dict) else int(unpad(x)[0].shape[0])

    @property
    def results(self) -> RunResults | None:
        return self.calls.results

    @property
    def observed(self) -> dict[str, Observed]:
        """The observations of the program's sites: what a guide conditions on and the
        results keep as observed data."""
        sites = set(self.program.site_names)
        return {k: v for k, v in self.observations.items() if k in sites}

    @property
    def data_names(self) -> dict[str, torch.Tensor]:
        """What the program reads by name besides its sites: a seed program's data names
        that pick positions (`h[picks]`), given with the observations as `run` takes them."""
        sites = set(self.program.site_names)
        return {
            k: v
            for k, v in self.observations.items()
            if k not in sites and isinstance(v, torch.Tensor)  # positions: never masked
        }

    def keep_data(self) -> None:
        """The observed sites and the inputs (a program's `x`, a model's data names) into
        the results, when the caller keeps them."""
        if self.results is None:
            return
        self.results.add("observed_data", observed_values(self.observed))
        inputs = self.x if isinstance(self.x, dict) else data_keys(self.x, self.observed)
        inputs = {**inputs, **self.data_names}  # read, not observed
        if inputs:
            self.results.add("constant_data", inputs)

    def stop_requested(self) -> bool:
        return self.calls.should_stop is not None and bool(self.calls.should_stop())

    def report(self, step: int, total: int, loss: float) -> None:
        if self.calls.on_progress is not None:
            self.calls.on_progress(step, total, loss)

    def summary(
        self,
        losses: list[float],
        seconds: float,
        stopped: bool,
        *,
        steps: int | None = None,
        posterior: Summary | None = None,
        svi: SviFit | None = None,
        nuts: NutsStats | None = None,
        sites: dict[str, SiteDraws] | None = None,
        attention: tuple[AttentionWeights, ...] = (),
        redrawn: int = 0,
    ) -> RunSummary:
        """The summary of this job (`steps`: one per loss unless given)."""
        return RunSummary(
            method=self.method,
            program=self.name,
            data=self.data,
            batch=self.batch,
            steps=len(losses) if steps is None else steps,
            losses=tuple(losses),
            seconds=seconds,
            stopped=stopped,
            posterior=posterior,
            svi=svi,
            nuts=nuts,
            sites=sites,
            attention=attention,
            redrawn=redrawn,
        )

    def attention(
        self,
        runner: ProgramLike,
        x: Input,
        observations: Mapping[str, Observed],
        values: list[dict[str, torch.Tensor]],
        basis: str,
    ) -> tuple[AttentionWeights, ...]:
        """The attention weights of the first example (`runs.attention_record`), one
        forward pass of `runner` per entry of `values`; kept in the results too."""
        passes = [partial(runner.run, x, observations, v) for v in values]
        records = record_attention(self.program, passes, x, basis)
        if records and self.results is not None:
            self.results.add("constant_data", attention_data(records))
        return records


# ------------------------------------------------------------------ SVI


class _Guide(Protocol):
    """What the SVI summary needs of a fitted guide (`inference.autoguides.GUIDES`)."""

    def rsample(self, x: Any) -> dict[str, torch.Tensor]: ...
    def parameters(self, recurse: bool = True) -> Iterator[nn.Parameter]: ...


def run_svi(
    job: Job,
    lr: float,
    guide_name: str = "normal",
    batches: Minibatches | None = None,
    reducer: Reducer | None = None,
) -> RunSummary:
    """`batches`: each step's rows when the run subsamples a plate or is split over
    processes (`runs.minibatch`), whose parts `reducer` adds up (`runs.distributed`)."""
    x, observations = job.x, job.observations
    program = summed_out(job.program, observations)  # discrete latents summed out exactly
    if isinstance(program, SummedModel) and not has_continuous_latents(program, observations):
        if batches is not None and batches.subsample is not None:
            raise InferenceError(
                f"program {job.name}: every latent is summed out exactly, so SVI has one "
                "exact loss, nothing to subsample"
            )
        return _exact_svi(job, program, lr, guide_name)
    module = GUIDES[guide_name](program, observed_names=set(job.observed))
    if batches is not None:  # parameters whose shape a run tells: from all the rows
        with torch.random.fork_rng(), torch.no_grad():
            module(x)
    guide = cast(_Guide, module)  # every guide has rsample (its class is an nn.Module)
    params = list(program.parameters()) + list(guide.parameters())
    if not latent_names(program, observations) and not any(True for _ in program.parameters()):
        raise InferenceError(  # the guide may hold an empty vector: nothing reaches the loss
            f"program {job.name}: SVI has nothing to fit (no latent site and no parameters: "
            "its density is fixed); `--method prior` scores it"
        )
    optim = Adam(params, lr=lr, foreach=True)  # one fused pass over all tensors
    svi = SVI(program, module, optim, ELBO(num_particles=1), reducer)
    losses: list[float] = []
    start = time.perf_counter()

    def one_step() -> float:
        if batches is None:
            return svi.step(x, observations)
        part = batches()
        with sharing(part.share):
            return svi.step(part.x, part.observations)

    def summary(stopped: bool, attention_too: bool = True) -> RunSummary:
        spread = elbo_sd(svi, batches, reducer) if losses and not stopped else None
        seconds = time.perf_counter() - start
        drawn = WithDiscreteDraws(guide, program, x, observations)  # the summed sites too
        posterior, means = _guide_posterior(job, drawn, program) if losses else (None, {})
        attention = (
            job.attention(program, x, observations, [means], SVI_BASIS)
            if losses and attention_too
            else ()
        )
        return job.summary(  # the loss is -ELBO
            losses,
            seconds,
            stopped,
            posterior=posterior,
            svi=SviFit(
                lr,
                guide_name,
                subsample=None if batches is None else batches.subsample,
                processes=1 if batches is None else batches.processes,
                elbo_sd=spread,
                elbo_evaluations=0 if spread is None else SPREAD_EVALUATIONS,
            ),
            attention=attention,
        )

    for step in range(1, job.steps + 1):
        stop = job.stop_requested()
        if reducer is not None:  # every process stops at the same step, or none does
            stop = reducer.total(float(stop)) > 0
        if stop:
            return summary(True)
        try:
            loss = one_step()
        except NonFiniteLossError as e:
            e.summary = summary(True, attention_too=False).to_json()  # type: ignore[attr-defined]  # the run so far, for the caller
            raise
        except Exception as e:  # torch's own, as a NUTS chain reports it (`ChainError`)
            if not is_torch_error(e):
                raise
            raise InferenceError(
                f"SVI step {step}: the model's log density failed where the guide drew: "
                f"{first_line(e)}"
            ) from e
        losses.append(loss)
        job.report(step, job.steps, loss)
    return summary(False)


#: Evaluations of the loss at the fitted parameters that the summary's spread of the
#: -ELBO estimate is measured over (each with its own rows and guide draws).
SPREAD_EVALUATIONS = 20


def elbo_sd(svi: SVI, batches: Minibatches | None, reducer: Reducer | None) -> float | None:
    """The standard deviation of the -ELBO estimate at the fitted parameters over
    `SPREAD_EVALUATIONS` evaluations: how noisy each step's loss is (minibatches add to
    the guide's noise), for a subsampled run; None otherwise."""
    if batches is None or batches.subsample is None:
        return None
    values = []
    with torch.random.fork_rng():  # the summary's guide draws keep their stream
        for _ in range(SPREAD_EVALUATIONS):
            part = batches()
            with sharing(part.share):
                value = svi.evaluate_loss(part.x, part.observations)
            values.append(reducer.total(value) if reducer is not None else value)
    return float(torch.tensor(values, dtype=torch.float64).std())


def _exact_svi(job: Job, program: SummedModel, lr: float, guide_name: str) -> RunSummary:
    """SVI with nothing continuous to fit: every latent is summed out, so the ELBO's
    optimum, log p(data), is reached exactly in one evaluation (the one loss), and the
    posterior table is of `GUIDE_DRAWS` exact draws of the discrete sites."""
    start = time.perf_counter()
    loss = 0.0 - float(log_evidence(program, job.x, job.observations))  # never -0.0
    if not math.isfinite(loss):
        raise NonFiniteLossError(1, loss)
    job.report(1, 1, loss)
    posterior, _ = _guide_posterior(job, ExactPosterior(program, job.observations), program)
    seconds = time.perf_counter() - start
    return job.summary([loss], seconds, False, posterior=posterior, svi=SviFit(lr, guide_name))


def _guide_posterior(
    job: Job, guide: _Guide, target: ProgramLike
) -> tuple[Summary | None, dict[str, torch.Tensor]]:
    """The summary table of `GUIDE_DRAWS` draws from the fitted guide (independent draws:
    no R-hat or ESS), which also go to the results' posterior group as one chain with
    their log-likelihood under `target` (what SVI fitted), and each continuous latent's
    mean over them."""
    draws: dict[str, list[torch.Tensor]] = {}
    with torch.no_grad():
        for _ in range(GUIDE_DRAWS):
            for name, value in guide.rsample(job.x).items():
                draws.setdefault(name, []).append(value.detach())
    if not draws:
        return None, {}
    stacked = {n: torch.stack(v)[None] for n, v in draws.items()}  # (chain 1, draw, ...)
    skipped = None
    if job.results is not None:
        job.results.add("posterior", stacked)
        skipped = keep_log_likelihood(job, target, job.x, stacked)
        skipped = keep_log_prior(job, target, job.x, stacked) or skipped
        if job.calls.predictive:
            skipped = keep_predictive(job, job.program, job.x, stacked) or skipped
    arrays = {n: v.cpu().to(torch.float64).numpy() for n, v in stacked.items()}
    summary = summarize(arrays, diagnostics=False)
    if skipped is not None:
        summary.warnings.append(skipped)
    return summary, _means(stacked)


def _means(draws: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Each continuous site's mean over its draws `(chain, draw, ...)`; a discrete site
    has no mean and is left to be drawn."""
    return {n: v.mean((0, 1)) for n, v in draws.items() if v.is_floating_point()}


# ------------------------------------------------------------------ NUTS


def lift_parameters(
    program: ProgramModule, x: torch.Tensor | Padded, observations: dict[str, Observed]
) -> tuple[LiftedProgram, torch.Tensor | Padded, dict[str, Observed]]:
    """A seed program's NUTS target: its parameters (Normal(0, 1) prior) and every
    latent site, shaped as one forward run draws them; the input stays as it is."""
    with torch.no_grad():
        drawn = program.run(x, observations).values
    extra = {n: tuple(drawn[n].shape) for n in latent_names(program, observations)}
    lifted, _, lifted_observations = bayesian_lift_parameters(
        program, x, observations, additional_latents=extra
    )
    return lifted, x, lifted_observations


def run_nuts(
    job: Job,
    target: ProgramLike,
    x: Input,
    observations: dict[str, Observed],
    *,
    depth: int,
    chains: int,
    seed: int,
    mass_matrix: str = "auto",
    target_accept: float = 0.8,
    init: str = "pathfinder",
    share: ChainShare | None = None,
    engine: Engine | None = None,
) -> RunSummary:
    """NUTS over every latent of `target` (the job's program, or its lifted form), its
    discrete sites summed out and drawn back given each draw; exact draws of them when
    nothing continuous is left (`inference.discrete`). `mass_matrix` names the metric
    warmup adapts (`inference.fisher.MASS_MATRICES`); the summary names the one it
    adapted (`auto` resolved by the number of coordinates). `init` says where the chains
    start (`inference.starts`). `engine`, when given, has NumPyro's NUTS sample the
    program's NumPyro export instead of qvr's sampler (`runs.numpyro_nuts`), or, `auto`,
    take qvr's chains on after warmup where that pays (`numpyro_nuts.Takeover`)."""
    target = summed_out(target, observations)
    exact = isinstance(target, SummedModel) and not has_continuous_latents(target, observations)
    num_warmup = job.steps // 2  # exact draws need none: as many draws, no warmup
    num_samples = max(job.steps - num_warmup, 1)
    kernel = NUTSKernel(max_tree_depth=depth, target_accept=target_accept, mass_matrix=mass_matrix)
    traces: list[list[float]] = [[] for _ in range(chains)]

    def progress(i: int, total: int, potential: float, chain: int) -> None:
        if not math.isfinite(potential):
            raise NonFiniteLossError(i, potential, what="potential energy")
        traces[chain].append(potential)
        job.report(i, total, potential)

    live = None
    if job.calls.on_update is not None:
        live = LiveDraws(chains, 0 if exact else num_warmup, depth, job.calls.on_update)
    start = time.perf_counter()
    ran = "qvr" if engine is None or engine.auto else "numpyro"
    if engine is not None and not engine.auto:
        run = EngineRun(
            num_warmup, num_samples, chains, seed, depth, target_accept, mass_matrix, init
        )
        result = _on_numpyro(engine, run, job, target, x, observations, progress, live, share)
    elif isinstance(target, SummedModel) and exact:
        result = exact_draws(
            target,
            x,
            observations,
            chains=chains,
            draws=num_samples,
            seed=seed,
            on_progress=progress,
            should_stop=job.calls.should_stop,
        )
    else:
        takeover = None
        here = share is None and torch.get_default_device().type == "cpu"
        continuous = not isinstance(target, SummedModel)  # NumPyro would not sum the rest
        if engine is not None and here and continuous and isinstance(x, dict):
            takeover = Takeover(engine, target, x, observations, num_samples)
        try:
            result = run_chains(
                target,
                x,
                observations,
                kernel,
                num_warmup,
                num_samples,
                chains=chains,
                seed=seed,
                on_progress=progress,
                on_draw=None if live is None else live.add,
                should_stop=job.calls.should_stop,
                share=share,
                init=init,
                hand_over=takeover,
            )
        except HandedOver as handed:
            assert takeover is not None and isinstance(x, dict)
            for trace in traces:  # the draws qvr made before the hand-over are not kept
                del trace[num_warmup:]
            if live is not None:
                live.restart()
            run = EngineRun(0, num_samples, chains, seed, depth, target_accept, mass_matrix, init)
            result = _taken_over(
                takeover, handed, run, job, target, x, observations, progress, live
            )
            ran = "qvr+numpyro"
        result = with_discrete_draws(result, target, x, observations)
        if share is not None:  # the other processes' chains' traces too
            for part in share.gather([(c, traces[c]) for c in share.mine]):
                for c, trace in part:
                    traces[c] = trace
    seconds = time.perf_counter() - start
    if live is not None:
        live.send()  # every draw, before the summary
    site_summary = result.summary()
    draws = int(result.log_densities.shape[1]) if result.log_densities.dim() == 2 else 0
    skipped = None
    if job.results is not None and draws:
        skipped = _keep_nuts(job, result, target, x)
    stats = NutsStats(
        chains=int(result.log_densities.shape[0]) if draws else 0,
        chains_requested=chains,
        processes=result.processes,
        num_warmup=0 if exact else num_warmup,
        num_samples=draws,
        acceptance=finite(float(result.acceptance_rates.mean())) if draws else None,
        divergences=int(result.divergence_counts.sum()) if draws else 0,
        warmup_divergences=int(result.warmup_divergence_counts.sum()),
        step_size=finite(float(result.step_sizes.mean())) if draws else None,
        r_hat={k: finite(v["r_hat_max"]) for k, v in site_summary.items()},
        ess={k: finite(v["ess_min"]) for k, v in site_summary.items()},
        traces=tuple(tuple(t) for t in traces),
        mass_matrix=(
            METRICS[mass_matrix]
            if ran == "numpyro"
            else mass_matrix
            if exact
            else chosen_metric(mass_matrix, result.coordinates)
        ),
        starts=result.starts,
        target_accept=target_accept,
        engine=ran,
    )
    posterior = posterior_summary(result, depth, sampled=not exact) if draws else None
    if posterior is not None and skipped is not None:
        posterior.warnings.append(skipped)
    return job.summary(
        traces[0],  # the first chain's potential energy
        seconds,
        result.stopped,
        steps=sum(len(t) for t in traces),
        posterior=posterior,
        nuts=stats,
        attention=_nuts_attention(job, target, x, observations, result.samples, draws),
    )


def _on_numpyro(
    engine: Engine,
    run: EngineRun,
    job: Job,
    target: ProgramLike,
    x: Input,
    observations: dict[str, Observed],
    progress: Callable[[int, int, float, int], None],
    live: LiveDraws | None,
    share: ChainShare | None,
) -> MCMCResult:
    """The run on NumPyro's NUTS (`runs.numpyro_nuts`), or an InferenceError saying why
    this program or these settings are qvr's sampler's."""
    why = refusal(run, engine.device)
    if why is None and share is not None:
        why = "the numpyro engine runs its chains in one process, not under torchrun"
    if why is None and isinstance(target, SummedModel):
        why = (
            "the numpyro engine samples continuous latents; this program's discrete "
            "ones are summed out by qvr's NUTS (run without --engine)"
        )
    if why is None and not isinstance(x, dict):
        why = "the numpyro engine samples model programs"
    if why is not None:
        raise InferenceError(why)
    assert isinstance(x, dict)
    export = exported(engine.checked, engine.program, engine.path)
    on_engine = _OnEngine(run, job, target, x, observations, progress, live)
    return on_engine.sample(
        export, 0, None, "the numpyro engine", "`qvr run --engine qvr` samples it with qvr's NUTS"
    )


def _taken_over(
    takeover: Takeover,
    handed: HandedOver,
    run: EngineRun,
    job: Job,
    target: ProgramLike,
    x: dict[str, torch.Tensor],
    observations: dict[str, Observed],
    progress: Callable[[int, int, float, int], None],
    live: LiveDraws | None,
) -> MCMCResult:
    """The draws of a run NumPyro took on from qvr's warmup (`numpyro_nuts.Takeover`),
    progress counted on from the end of warmup."""
    assert takeover.export is not None and takeover.resume is not None
    resume = replace(takeover.resume, starts=handed.starts)
    warmed = len(handed.states) * min(s.chain.num_warmup for s in handed.states)
    on_engine = _OnEngine(run, job, target, x, observations, progress, live)
    return on_engine.sample(
        takeover.export,
        warmed,
        resume,
        "NumPyro's NUTS, taking the draws on from qvr's warmup,",
        "`qvr run --engine qvr` keeps them with qvr's sampler",
    )


@dataclass(frozen=True)
class _OnEngine:
    """A run's NUTS on NumPyro (`numpyro_nuts.sample`): its progress reported as qvr's,
    and what NumPyro or JAX raises as one line."""

    run: EngineRun
    job: Job
    target: ProgramLike
    x: dict[str, torch.Tensor]
    observations: dict[str, Observed]
    progress: Callable[[int, int, float, int], None]
    live: LiveDraws | None

    def sample(
        self, export: Export, done: int, resume: Resume | None, who: str, instead: str
    ) -> MCMCResult:
        """The draws, progress counted on from `done` iterations (qvr's warmup, when
        NumPyro takes the draws on from it: `resume`); a failure names `who` failed and
        what to do `instead`."""
        run = self.run
        total = done + run.chains * (run.num_warmup + run.num_samples)
        count = done

        def step(chain: int, potential: float) -> None:
            nonlocal count
            count += 1
            self.progress(count, total, potential, chain)

        try:
            return sample_numpyro(
                export,
                self.target,
                self.x,
                self.observations,
                run,
                on_step=step,
                on_draw=None if self.live is None else self.live.add,
                should_stop=self.job.calls.should_stop,
                resume=resume,
            )
        except InferenceError:
            raise
        except Exception as e:  # NumPyro or JAX refusing the export: one line
            raise InferenceError(
                f"{who} failed on this program ({type(e).__name__}: {first_line(e)}); {instead}"
            ) from e


def _nuts_attention(
    job: Job,
    target: ProgramLike,
    x: Input,
    observations: dict[str, Observed],
    samples: dict[str, torch.Tensor],
    draws: int,
) -> tuple[AttentionWeights, ...]:
    """The attention weights averaged over `NUTS_DRAWS` evenly spaced draws of the first
    chain (`runs.attention_record` says why)."""
    if not draws:
        return ()
    picks = sorted({round(i * (draws - 1) / max(NUTS_DRAWS - 1, 1)) for i in range(NUTS_DRAWS)})
    values = [{k: v[0, d] for k, v in samples.items()} for d in picks]
    return job.attention(target, x, observations, values, nuts_basis(len(picks)))


def _keep_nuts(job: Job, result: MCMCResult, target: ProgramLike, x: Input) -> FitWarning | None:
    """The draws, their statistics, their log-likelihood and, with `predictive`, the
    observed sites drawn again; the warning when the log-likelihood was left out."""
    assert job.results is not None
    job.results.add("posterior", result.samples)
    job.results.add(
        "sample_stats",
        {
            "diverging": result.diverging,
            "tree_depth": result.tree_depths,
            "energy": result.energies,
            "n_steps": result.num_leapfrog_steps,
            "lp": result.log_densities,
        },
    )
    skipped = keep_log_likelihood(job, target, x, result.samples)
    skipped = keep_log_prior(job, target, x, result.samples) or skipped
    if job.calls.predictive:
        skipped = keep_predictive(job, target, x, result.samples) or skipped
    return skipped


def keep_log_likelihood(
    job: Job, target: ProgramLike, x: Input, samples: Mapping[str, torch.Tensor]
) -> FitWarning | None:
    """Each observed site's pointwise log-likelihood under each draw of `samples`
    (`(chain, draw, ...)`) into the results' `log_likelihood` group, `(chain, draw,
    *plates)`. Its first draw says its size: over the memory budget it is left out,
    as it is when it cannot be computed (the draws, already made, are never lost for
    it); the reason goes to the results' `attrs` and, as the warning returned, to the
    summary."""
    assert job.results is not None
    if not job.observed or not samples:
        return None
    try:
        terms = _draw_terms(job, target, x, samples, _pointwise)
    except Exception as e:  # torch's or the runtime's own: the run's draws are kept
        why = f"it could not be computed: {first_line(e)}"
        remedy = "the draws are kept; report it with the .qvr file if it is qvr's error"
    else:
        if isinstance(terms, dict):
            job.results.add("log_likelihood", terms)
            job.results.attrs["log_likelihood"] = "pointwise"
            return None
        why = f"its {terms}"
        remedy = (
            "raise the memory budget (--memory-budget) or run fewer draws to compare this "
            "run with `qvr compare`"
        )
    job.results.attrs["log_likelihood"] = f"skipped: {why.removeprefix('its ')}"
    return FitWarning("log_likelihood", f"the pointwise log-likelihood was not kept: {why}", remedy)


def keep_log_prior(
    job: Job, target: ProgramLike, x: Input, samples: Mapping[str, torch.Tensor]
) -> FitWarning | None:
    """Each latent site's prior log-density under each draw of `samples`, summed over
    its elements, into the results' `log_prior` group, `(chain, draw)`: what `az.psens`
    power-scales (`qvr sensitivity`). Every term of the log joint that is not the
    likelihood's and belongs to a site with draws; a `score` term is left out (it may
    be either). A model program also names its top-level priors (`attrs
    ["log_prior_top_level"]`: those that read no other latent), which `qvr
    sensitivity` scales by default. A model whose discrete sites are summed out has
    no such terms per site (a latent may depend on the values summed over): left out,
    with the reason in the results' `attrs`, as when it cannot be computed (the draws
    are kept)."""
    assert job.results is not None
    if not samples:
        return None
    if isinstance(target, SummedModel):
        job.results.attrs["log_prior"] = "skipped: the model sums out discrete sites"
        return None
    try:
        terms = _draw_terms(job, target, x, samples, _prior_terms)
    except Exception as e:  # torch's or the runtime's own: the run's draws are kept
        why = f"it could not be computed: {first_line(e)}"
    else:
        if isinstance(terms, dict) and terms:
            job.results.add("log_prior", terms)
            job.results.attrs["log_prior"] = "per site"
            if isinstance(target, ModelProgram):  # which are the model's hierarchy
                top = [n for n in target.top_level_priors() if n in terms]
                job.results.attrs["log_prior_top_level"] = " ".join(top)
            return None
        why = "no site has a prior term" if isinstance(terms, dict) else f"its {terms}"
    job.results.attrs["log_prior"] = f"skipped: {why.removeprefix('its ')}"
    return FitWarning(
        "log_prior",
        f"the prior log-density was not kept: {why}",
        "qvr sensitivity needs it; report it with the .qvr file if it is qvr's error",
    )


#: One draw's terms (a draw's site values -> term name -> tensor).
Score = Callable[[ProgramLike, Input, Job, Mapping[str, torch.Tensor]], dict[str, torch.Tensor]]


def _draw_terms(
    job: Job, target: ProgramLike, x: Input, samples: Mapping[str, torch.Tensor], score: Score
) -> dict[str, torch.Tensor] | str:
    """The terms `score` gives each draw, stacked `(chain, draw, ...)`, or why they are
    too big.

    The first draw's terms size them; then all draws are scored in one batched call
    (`torch.func.vmap`, `LIKELIHOOD_CHUNK` draws at a time), which is what makes the
    group cheap enough to keep by default (eight schools, 4,000 draws: 0.4 ms a draw
    one by one, about 50 times less batched). A program that a batch cannot run (one
    that reads a value into Python) is scored one draw after another; a batch that
    disagrees with its first draw's terms is not used."""
    chains, draws = next(iter(samples.values())).shape[:2]
    flat = {k: v.reshape(chains * draws, *v.shape[2:]) for k, v in samples.items()}
    with torch.no_grad():
        first = score(target, x, job, {k: v[0] for k, v in flat.items()})
        points = sum(t.numel() for t in first.values())
        refusal = log_likelihood_refusal(job.sizing, chains * draws, points)
        if refusal is not None:
            return refusal
        terms = _batched_terms(target, x, job, flat, first, score)
        if terms is None:
            rows: dict[str, list[torch.Tensor]] = {}
            for d in range(chains * draws):
                values = {k: v[d] for k, v in flat.items()}
                for name, term in score(target, x, job, values).items():
                    rows.setdefault(name, []).append(term.detach())
            terms = {n: torch.stack(v) for n, v in rows.items()}
    return {n: v.to(torch.float64).reshape(chains, draws, *v.shape[1:]) for n, v in terms.items()}


#: Draws scored in one batched call of the log-likelihood (bounds its memory).
LIKELIHOOD_CHUNK = 256


def _batched_terms(
    target: ProgramLike,
    x: Input,
    job: Job,
    flat: Mapping[str, torch.Tensor],
    first: Mapping[str, torch.Tensor],
    score: Score,
) -> dict[str, torch.Tensor] | None:
    """Every draw's terms from batched calls, or None where batching cannot run them."""
    from torch.func import vmap

    def one(values: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        return score(target, x, job, values)

    try:
        terms: dict[str, torch.Tensor] = vmap(one, chunk_size=LIKELIHOOD_CHUNK)(dict(flat))
    except Exception:  # a value read into Python, or an operation vmap lacks
        return None
    if terms.keys() != first.keys() or not all(
        torch.allclose(terms[n][0], first[n], rtol=1e-9, atol=1e-12, equal_nan=True) for n in first
    ):
        return None
    return terms


def _pointwise(
    target: ProgramLike, x: Input, job: Job, values: Mapping[str, torch.Tensor]
) -> dict[str, torch.Tensor]:
    """The log-likelihood terms of one draw: a model program's from its runtime, a seed
    program's (or its lifted form's) the observed sites' per-example log-densities."""
    if isinstance(target, ModelProgram | SummedModel):
        assert isinstance(x, dict)  # a model program's data by name
        observed = {k: v for k, v in job.observed.items() if isinstance(v, torch.Tensor)}
        return target.log_likelihood(x, observed, values)
    if isinstance(target, LiftedProgram):
        theta = {n: values[n] for n in target.param_names if n in values}
        rest = {n: v for n, v in values.items() if n not in theta}
        inner = cast(ProgramModule, target.inner)  # a lifted program lifts a seed program
        with target.substituted(theta):
            run = inner.run(cast(torch.Tensor | Padded, x), job.observations, rest)
    else:
        run = target.run(x, job.observations, values)
    return {n: run.log_probs[n] for n in job.observed if n in run.log_probs}


def _prior_terms(
    target: ProgramLike, x: Input, job: Job, values: Mapping[str, torch.Tensor]
) -> dict[str, torch.Tensor]:
    """The prior terms of one draw: each latent site's log-density at `values`, summed
    over its elements (and a seed program's examples)."""
    if isinstance(target, ModelProgram):
        observed = {k: v for k, v in job.observed.items() if isinstance(v, torch.Tensor)}
        return target.log_prior(x, observed, values)
    run = target.run(x, job.observations, values)
    latent = [n for n in values if n not in job.observed and n in run.log_probs]
    return {n: run.log_probs[n].sum() for n in latent}


def keep_predictive(
    job: Job, program: ProgramLike, x: Input, samples: dict[str, torch.Tensor]
) -> FitWarning | None:
    """Each observed site drawn under each draw of `samples` (`runs.predictive`) into the
    results' `posterior_predictive` group. A model whose draws cannot be made (it reads an
    observed series before its `observe`, so a draw would go step by step) keeps its fit:
    the reason is the warning returned, as for the log-likelihood."""
    assert job.results is not None
    try:
        drawn = posterior_predictive(program, x, job.data_names, samples, list(job.observed))
    except QvrRuntimeError as e:
        why = first_line(e)
        job.results.attrs["posterior_predictive"] = f"skipped: {why}"
        return FitWarning(
            "posterior_predictive",
            f"no posterior predictive draws: {why}",
            "the fit's draws are kept",
        )
    job.results.add("posterior_predictive", drawn)
    return None


def posterior_summary(result: MCMCResult, max_tree_depth: int, sampled: bool = True) -> Summary:
    """The summary table and warnings of NUTS draws (`summary.summarize`); of exact draws
    (`sampled` false) without the sampler's statistics, there being no sampler."""
    draws = {k: v.detach().to(torch.float64).numpy() for k, v in result.samples.items()}
    if not sampled:
        return summarize(draws)
    stats = SamplerStats(
        diverging=result.diverging.numpy(),
        tree_depth=result.tree_depths.numpy(),
        energy=result.energies.numpy(),
        max_tree_depth=max_tree_depth,
    )
    return summarize(draws, stats)


# ------------------------------------------------------------------ prior


def run_prior(job: Job) -> RunSummary:
    """Forward runs under the current parameters (the seed's 'true' ones without data); a
    model program's run too (its log joint is one number, so mean and sum agree)."""
    program = job.program
    draws: dict[str, list[torch.Tensor]] = {n: [] for n in program.site_names}
    losses: list[float] = []
    redrawn = 0
    start = time.perf_counter()
    stopped = False
    data = job.data_names  # read; the sites are drawn
    with torch.no_grad():
        for step in range(1, job.steps + 1):
            if job.stop_requested():
                stopped = True
                break
            result = program.run(job.x, data)
            redrawn += getattr(result, "redrawn", 0)  # a model run past float64, drawn again
            for n in program.site_names:
                draws[n].append(result.values[n])
            losses.append(-float(result.log_joint.mean()))
            job.report(step, job.steps, losses[-1])
    seconds = time.perf_counter() - start
    sites = {n: _describe(program, n, vs) for n, vs in draws.items() if vs}
    if job.results is not None and losses:
        kept = {n: torch.stack(vs)[None] for n, vs in draws.items() if vs}
        for kind, group in (("sample", "prior"), ("observe", "prior_predictive")):
            job.results.add(group, {n: v for n, v in kept.items() if program.site_kind(n) == kind})
    attention: tuple[AttentionWeights, ...] = ()
    if losses and has_attention(program):
        observed = [n for n in program.site_names if program.site_kind(n) == "observe"]
        latent = {n: torch.stack(draws[n])[None] for n in latent_names(program, observed)}
        attention = job.attention(program, job.x, data, [_means(latent)], PRIOR_BASIS)
    return job.summary(losses, seconds, stopped, sites=sites, attention=attention, redrawn=redrawn)


def _describe(program: ProgramLike, name: str, values: list[torch.Tensor]) -> SiteDraws:
    v = torch.stack(values)
    kind, support = program.site_kind(name), program.site_support(name)
    shape = tuple(int(n) for n in v.shape[1:])
    if v.is_floating_point():
        f = v.to(torch.float64)
        return SiteDraws(
            kind,
            support,
            shape,
            mean=float(f.mean()),
            sd=float(f.std()) if f.numel() > 1 else 0.0,
            min=float(f.min()),
            max=float(f.max()),
        )
    counts = torch.bincount(v.reshape(-1).clamp(min=0))
    top = torch.argsort(counts, descending=True)[:5]
    total = int(v.numel())
    frequent = tuple(Frequency(int(i), int(counts[i]) / total) for i in top if counts[i] > 0)
    return SiteDraws(kind, support, shape, most_frequent=frequent)
