"""MCMC: run NUTS chains on a program's latent sites and collect draws and diagnostics.

The latent sites are every site without data. Their values are flattened into
one unconstrained vector (`sites.FlatLayout`); the potential is
-(log_joint(x, values) summed over the batch + log |det J|) and its gradient
comes from torch.autograd. `MCMC.run` advances its chains together in this
process (`sample_chains`); `qvr_core.inference.chains` also runs them in parallel
processes. Each chain starts from its own forward run of the program (or
the program's `initial_values`, which the lifted program of
`bayesian_lift_parameters` provides: the current parameters), kept when the
potential and its gradient are finite there; otherwise the chain tries random
starts from its own generator, as Stan does (`nuts.NUTSChain.begin`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from qvr_core.inference.convergence import ess_bulk, rhat
from qvr_core.inference.errors import InferenceError
from qvr_core.inference.lockstep import TaskError, run_together
from qvr_core.inference.many import Batched, ManyPotential
from qvr_core.inference.nuts import NUTSChain, NUTSKernel, Requests, Transition, answer
from qvr_core.inference.sites import (
    FlatLayout,
    ProgramLike,
    latent_names,
    make_sites,
)
from qvr_core.runtime.program import Observed

ProgressFn = Callable[[int, int, float], None]


class ProgramPotential:
    """U(z) = -log p(x, values(z), y) - log |det J(z)| with its autograd gradient."""

    def __init__(
        self,
        model: ProgramLike,
        x: Any,
        observations: Mapping[str, Observed],
        layout: FlatLayout,
    ) -> None:
        self.model, self.x, self.observations, self.layout = model, x, dict(observations), layout
        self.num_evals = 0
        # the model's device (`runs.device.computing_on`); the sampler's state is on the CPU
        device = torch.get_default_device()
        self.device = None if device.type == "cpu" else device

    def log_density(self, z: torch.Tensor) -> torch.Tensor:
        """log p(x, values(z), y) + log |det J(z)| as a scalar tensor."""
        return self._log_density(self.layout.split(z))

    def _log_density(self, parts: list[torch.Tensor]) -> torch.Tensor:
        values, log_det = self.layout.constrain(parts)
        return self.model.log_joint(self.x, {**self.observations, **values}).sum() + log_det

    def __call__(self, z: torch.Tensor) -> tuple[float, torch.Tensor]:
        self.num_evals += 1
        if self.device is not None:
            z = z.to(self.device)
        # One leaf per site: differentiating through slices of a single flat leaf
        # would materialise a full-size zero gradient for every slice.
        parts = [p.detach().requires_grad_(True) for p in self.layout.split(z)]
        with torch.enable_grad():
            lp = self._log_density(parts)
            grads = torch.autograd.grad(lp, parts, allow_unused=True)
        grad = torch.cat(
            [
                (g if g is not None else torch.zeros_like(p)).reshape(-1)
                for g, p in zip(grads, parts, strict=True)
            ]
        )
        return -float(lp.detach()), -(grad if self.device is None else grad.cpu())


@dataclass
class MCMCResult:
    """Draws per site `(chains, draws, *shape)` and per-chain statistics.

    `log_densities` is the program's log joint at each draw (without the
    Jacobian of the unconstrained parameterisation). `r_hat` (rank-normalised
    split R-hat) and `ess` (bulk ESS) are per element of each site;
    `summary()` reduces them to the worst element. `energies` is the
    Hamiltonian of each draw, for E-BFMI.
    """

    samples: dict[str, torch.Tensor]
    log_densities: torch.Tensor
    acceptance_rates: torch.Tensor
    divergence_counts: torch.Tensor
    step_sizes: torch.Tensor
    tree_depths: torch.Tensor
    num_leapfrog_steps: torch.Tensor
    warmup_divergence_counts: torch.Tensor
    energies: torch.Tensor = field(default_factory=lambda: torch.zeros(0, 0))
    diverging: torch.Tensor = field(default_factory=lambda: torch.zeros(0, 0, dtype=torch.bool))
    seeds: list[int] = field(default_factory=list)
    processes: int = 1  # the processes the chains ran in (1: in the caller's)
    #: where the chains started: Pathfinder's draws or their own forward draws
    #: (`run_arguments.INITS`; `prior` also where Pathfinder gave no starts)
    starts: str = "prior"
    r_hat: dict[str, torch.Tensor] = field(default_factory=dict)
    ess: dict[str, torch.Tensor] = field(default_factory=dict)
    stopped: bool = False
    coordinates: int = 0  # the length of the unconstrained vector the chains moved in

    def summary(self) -> dict[str, dict[str, float]]:
        """Per site: posterior mean and sd (averaged over elements), max R-hat, min ESS."""
        out = {}
        for name, s in self.samples.items():
            flat = s.reshape(-1, *s.shape[2:]).to(torch.float64)
            out[name] = {
                "mean": float(flat.mean()) if flat.numel() else math.nan,
                "sd": float(flat.std(dim=0).mean()) if flat.shape[0] > 1 else math.nan,
                "r_hat_max": _nan_reduce(self.r_hat[name], np.nanmax),
                "ess_min": _nan_reduce(self.ess[name], np.nanmin),
            }
        return out


def _nan_reduce(t: torch.Tensor, fn: Callable[[np.ndarray], Any]) -> float:
    a = t.numpy()
    if a.size == 0 or np.all(np.isnan(a)):
        return math.nan
    return float(fn(a))


class MCMC:
    """`MCMC(kernel, num_warmup, num_samples, num_chains).run(model, x, observations)`."""

    def __init__(
        self, kernel: NUTSKernel, num_warmup: int, num_samples: int, num_chains: int = 1
    ) -> None:
        if int(num_warmup) < 0 or int(num_samples) < 1 or int(num_chains) < 1:
            raise InferenceError(
                "MCMC needs num_warmup >= 0, num_samples >= 1 and num_chains >= 1, got "
                f"{num_warmup}, {num_samples}, {num_chains}"
            )
        self.kernel = kernel
        self.num_warmup, self.num_samples, self.num_chains = (
            int(num_warmup),
            int(num_samples),
            int(num_chains),
        )

    def run(
        self,
        model: ProgramLike,
        x: Any,
        observations: Mapping[str, Observed] | None = None,
        *,
        on_progress: ProgressFn | None = None,
        should_stop: Callable[[], bool] | None = None,
    ) -> MCMCResult:
        """Warm up and sample every chain; `on_progress(iteration, total, potential)` after
        each iteration of any chain.

        The chains advance together in this process, their potentials evaluated in one
        batch, compiled where the model allows (`sample_chains`, the path of `qvr run`'s
        chains in one process): a chain run one after another with the eager potential
        spent most of its time dispatching the program's operations. Each chain is seeded
        from torch's stream and starts at its own forward draw.

        When `should_stop()` turns true the run ends early and the result holds
        the draws so far (`kept_chains`) with `stopped=True`. A chain's error is raised
        as itself.
        """
        observations = dict(observations or {})
        total = self.num_chains * (self.num_warmup + self.num_samples)
        done = 0

        def step(potential: float) -> None:
            nonlocal done
            done += 1
            if on_progress is not None:
                on_progress(done, total, potential)

        with torch.random.fork_rng():  # the layout's start draw leaves the stream alone
            layout = chain_layout(model, x, observations)
        # a seed per chain from the caller's stream (`chains.chain_seeds`, which derives
        # them from one int, imports this module)
        drawn = torch.randint(0, 2**62, (self.num_chains,), dtype=torch.int64, device="cpu")
        try:
            records = sample_chains(
                model,
                x,
                observations,
                self.kernel,
                self.num_warmup,
                self.num_samples,
                drawn.tolist(),
                layout,
                on_step=lambda _chain: step,
                should_stop=should_stop,
            )
        except TaskError as e:
            raise e.error from None
        return _result(layout, records)


def initial_values(
    model: ProgramLike, x: Any, observations: dict[str, Observed]
) -> dict[str, torch.Tensor]:
    custom = getattr(model, "initial_values", None)
    with torch.no_grad():
        if callable(custom):
            return dict(custom(x, observations))
        return dict(model.run(x, observations).values)


def seeded_start(
    model: ProgramLike, x: Any, observations: dict[str, Observed], layout: FlatLayout, seed: int
) -> torch.Tensor:
    """A chain's own start: the program's forward draw under torch's stream seeded `seed`
    (which the chain's sampler then carries on from)."""
    torch.manual_seed(seed)
    return layout.pack(initial_values(model, x, observations))


def _latent_names(model: ProgramLike, observations: Mapping[str, Observed]) -> list[str]:
    names = latent_names(model, observations)
    if not names:
        raise InferenceError(
            "nothing to sample: every stochastic site of the program has data "
            "(lift the parameters with bayesian_lift_parameters to sample them)"
        )
    return names


def chain_layout(model: ProgramLike, x: Any, observations: Mapping[str, Observed]) -> FlatLayout:
    """The unconstrained layout every chain of `model` shares (sites, shapes, supports),
    from one start of a chain: known before any chain runs, so draws can be read live."""
    observations = dict(observations)
    names = _latent_names(model, observations)
    return FlatLayout(make_sites(model, initial_values(model, x, observations), names, x))


def coordinate_sites(layout: FlatLayout) -> list[str]:
    """The site of each coordinate of the flat unconstrained vector, for messages."""
    return [
        site.name
        for site, (a, b) in zip(layout.sites, layout.offsets, strict=True)
        for _ in range(a, b)
    ]


def sample_chain(
    model: ProgramLike,
    x: Any,
    observations: Mapping[str, Observed],
    kernel: NUTSKernel,
    num_warmup: int,
    num_samples: int,
    *,
    on_step: Callable[[float], None] | None = None,
    on_draw: Callable[[Transition], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    layout: FlatLayout | None = None,
) -> tuple[_ChainRecord, FlatLayout]:
    """Warm up and sample one chain under the current torch seed, eagerly; `on_step(potential)`
    after every iteration, `on_draw(transition)` after every one past warmup. Stops
    early (an incomplete record) when `should_stop()`."""
    observations = dict(observations)
    init = initial_values(model, x, observations)
    if layout is None:
        layout = FlatLayout(make_sites(model, init, _latent_names(model, observations), x))
    potential = ProgramPotential(model, x, observations, layout)
    chain = kernel.chain(None, layout.pack(init), num_warmup, names=coordinate_sites(layout))
    requests = chain_requests(chain, num_warmup + num_samples, on_step, on_draw, should_stop)
    return answer(requests, potential), layout


def sample_chains(
    model: ProgramLike,
    x: Any,
    observations: Mapping[str, Observed],
    kernel: NUTSKernel,
    num_warmup: int,
    num_samples: int,
    seeds: Sequence[int],
    layout: FlatLayout,
    *,
    on_step: Callable[[int], Callable[[float], None] | None] = lambda c: None,
    on_draw: Callable[[int], Callable[[Transition], None] | None] = lambda c: None,
    should_stop: Callable[[], bool] | None = None,
    compile: bool = True,
    recorded: Batched | None = None,
    starts: Sequence[torch.Tensor] | None = None,
) -> list[_ChainRecord]:
    """Chains `0..len(seeds)-1` advanced together (`lockstep`), each seeded as
    `sample_chain` would be under its seed (its start drawn from torch's stream seeded
    so, its sampler then on its own generator carrying that stream on): the same draws,
    up to floating point, as running them one after another. Their potentials are
    evaluated together, compiled where the model allows (`many.ManyPotential`). A
    failure is a `lockstep.TaskError` naming the chain. `starts`, when given, are the
    chains' first positions in place of the ones they draw (`starts.chain_starts`);
    each chain's stream is the same either way."""
    states = new_chains(model, x, observations, kernel, num_warmup, seeds, layout, starts)
    group = ChainGroup(model, x, observations, layout, states, compile=compile, recorded=recorded)
    group.advance(num_warmup + num_samples, on_step, on_draw, should_stop)
    return [state.record for state in states]


@dataclass
class ChainState:
    """A chain and what it has recorded so far: what a run carries from one stretch of
    iterations to the next, in this process or, pickled, in another (`chains.run_chains`)."""

    chain: NUTSChain
    record: _ChainRecord = field(default_factory=lambda: _ChainRecord())


def new_chains(
    model: ProgramLike,
    x: Any,
    observations: Mapping[str, Observed],
    kernel: NUTSKernel,
    num_warmup: int,
    seeds: Sequence[int],
    layout: FlatLayout,
    starts: Sequence[torch.Tensor] | None = None,
) -> list[ChainState]:
    """A chain per seed, not yet begun, as `sample_chains` describes them."""
    observations = dict(observations)
    states: list[ChainState] = []
    names = coordinate_sites(layout)
    for k, seed in enumerate(seeds):
        start = seeded_start(model, x, observations, layout, seed)
        if starts is not None:
            start = starts[k]
        stream = torch.Generator()
        stream.set_state(torch.get_rng_state())
        states.append(ChainState(kernel.chain(None, start, num_warmup, stream, names=names)))
    return states


class ChainGroup:
    """Chains advanced together in this process: their potentials evaluated in one batch
    (`many.ManyPotential`, recorded at the chains' current positions), through as many
    stretches of iterations as the caller asks (`advance`)."""

    def __init__(
        self,
        model: ProgramLike,
        x: Any,
        observations: Mapping[str, Observed],
        layout: FlatLayout,
        states: Sequence[ChainState],
        *,
        compile: bool = True,
        recorded: Batched | None = None,
    ) -> None:
        self.states = list(states)
        eager = ProgramPotential(model, x, dict(observations), layout)
        firsts = torch.stack([s.chain.z for s in self.states])
        self.potential = ManyPotential(
            eager, eager.log_density, firsts, compile=compile, recorded=recorded
        )

    def advance(
        self,
        until: int,
        on_step: Callable[[int], Callable[[float], None] | None] = lambda c: None,
        on_draw: Callable[[int], Callable[[Transition], None] | None] = lambda c: None,
        should_stop: Callable[[], bool] | None = None,
        *,
        total: int | None = None,
    ) -> None:
        """Every chain on to its iteration `until` (a record is complete when that is its
        last, `total`, by default `until`); callbacks by the chain's index in the group."""
        total = until if total is None else total
        tasks = [
            chain_requests(
                s.chain, until, on_step(c), on_draw(c), should_stop, record=s.record, total=total
            )
            for c, s in enumerate(self.states)
        ]
        for state, record in zip(self.states, run_together(tasks, self.potential), strict=True):
            state.record = record


def chain_requests(
    chain: NUTSChain,
    until: int,
    on_step: Callable[[float], None] | None,
    on_draw: Callable[[Transition], None] | None,
    should_stop: Callable[[], bool] | None,
    *,
    record: _ChainRecord | None = None,
    total: int | None = None,
) -> Requests[_ChainRecord]:
    """A chain's run, as requests for potentials: its start when it has none yet, then
    its iterations up to `until` (warmup and draws), added to `record`, which is complete
    once the chain has done `total` (by default `until`)."""
    if not chain.begun:
        yield from chain.begin()
    record = _ChainRecord() if record is None else record
    while chain.iteration < until:
        if should_stop is not None and should_stop():
            return record
        warming = chain.warming_up
        t = yield from chain.advance()
        if warming:
            record.warmup_divergences += int(t.diverging)
        else:
            record.add(t)
            if on_draw is not None:
                on_draw(t)
        if on_step is not None:
            on_step(t.potential)
    record.complete = chain.iteration == (until if total is None else total)
    return record


@dataclass
class _ChainRecord:
    zs: list[torch.Tensor] = field(default_factory=list)
    potentials: list[float] = field(default_factory=list)
    accept: list[float] = field(default_factory=list)
    diverging: list[bool] = field(default_factory=list)
    depths: list[int] = field(default_factory=list)
    steps: list[int] = field(default_factory=list)
    energies: list[float] = field(default_factory=list)
    step_size: float = math.nan
    warmup_divergences: int = 0
    complete: bool = False

    def add(self, t: Transition) -> None:
        self.zs.append(t.z.detach().clone())
        self.potentials.append(t.potential)
        self.accept.append(t.accept_prob)
        self.diverging.append(t.diverging)
        self.depths.append(t.tree_depth)
        self.steps.append(t.num_steps)
        self.energies.append(t.energy)
        self.step_size = t.step_size


def kept_chains(records: Sequence[_ChainRecord]) -> list[_ChainRecord]:
    """The chains a result is made of: all of them when every one is complete; after a
    stop, those with at least half as many draws as the longest (each is then cut to the
    shortest of them), so that chains stopped together are kept together while a chain
    that had barely started does not cut the others short; none without a draw."""
    if records and all(r.complete for r in records):
        return list(records)
    longest = max((len(r.zs) for r in records), default=0)
    if longest == 0:
        return []
    return [r for r in records if 2 * len(r.zs) >= longest]


def _result(
    layout: FlatLayout, records: Sequence[_ChainRecord], *, stopped: bool | None = None
) -> MCMCResult:
    """The result of the chains' records (`stopped`: unless every record is complete), on
    the CPU whatever device the potential ran on: the chains' trees and draws are there."""
    with torch.device("cpu"):
        return _assembled(layout, records, stopped)


def _assembled(
    layout: FlatLayout, records: Sequence[_ChainRecord], stopped: bool | None
) -> MCMCResult:
    if stopped is None:
        stopped = not all(r.complete for r in records)
    kept = kept_chains(records)
    n = min((len(r.zs) for r in kept), default=0)
    if n == 0:
        kept = []
    samples = {s.name: torch.zeros(len(kept), n, *s.shape) for s in layout.sites}
    log_dens = torch.zeros(len(kept), n, dtype=torch.float64)
    with torch.no_grad():
        for c, r in enumerate(kept):
            if not n:
                break
            values, log_det = layout.unpack_many(torch.stack(list(r.zs[:n])))
            for name, v in values.items():
                if samples[name].dtype != v.dtype:
                    samples[name] = samples[name].to(v.dtype)
                samples[name][c] = v
            potentials = torch.tensor(r.potentials[:n], dtype=torch.float64)
            log_dens[c] = -potentials - log_det.to(torch.float64)

    def per_chain(
        values: Callable[[_ChainRecord], Sequence[float]], dtype: torch.dtype
    ) -> torch.Tensor:
        return torch.tensor([values(r)[:n] for r in kept], dtype=dtype).reshape(len(kept), n)

    result = MCMCResult(
        samples=samples,
        log_densities=log_dens,
        acceptance_rates=per_chain(lambda r: r.accept, torch.float64).mean(dim=1),
        divergence_counts=per_chain(lambda r: r.diverging, torch.int64).sum(dim=1),
        step_sizes=torch.tensor([r.step_size for r in kept], dtype=torch.float64),
        tree_depths=per_chain(lambda r: r.depths, torch.int64),
        num_leapfrog_steps=per_chain(lambda r: r.steps, torch.int64),
        warmup_divergence_counts=torch.tensor(
            [r.warmup_divergences for r in kept], dtype=torch.int64
        ),
        energies=per_chain(lambda r: r.energies, torch.float64),
        diverging=per_chain(lambda r: r.diverging, torch.bool),
        stopped=stopped,
        coordinates=layout.size,
    )
    return diagnosed(result)


def diagnosed(result: MCMCResult) -> MCMCResult:
    """`result` with each site's rank-normalised R-hat and bulk ESS per element (empty
    where there are no draws), whichever sampler drew them."""
    for name, s in result.samples.items():
        drawn = s.dim() >= 2 and s.shape[1] > 0
        result.r_hat[name] = torch.from_numpy(rhat(s)) if drawn else torch.zeros(0)
        result.ess[name] = torch.from_numpy(ess_bulk(s)) if drawn else torch.zeros(0)
    return result
