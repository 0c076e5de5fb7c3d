"""Several NUTS chains at once, in worker processes, each with its own seed and adaptation.

`run_chains` advances its chains together (`mcmc.ChainGroup`: their potentials
evaluated in one batch, compiled where the model allows), here in this process by
default; only where one evaluation of the model is slow enough to be arithmetic
rather than interpretation (`chosen_processes`) does it split the chains over
child processes, one per usable core, never more than the chains. Where it does
not, the chains' first `PROBE_ITERATIONS` show how long their trees are; when the
trees' own Python, one chain's after another's here, is projected to cost more than
a process's start saves (`worth_splitting`), the chains go on in processes from
where they are (a `mcmc.ChainState` each, pickled). Each child
advances its chains together in the same way and sends every iteration's
potential, every draw after warmup when the caller reads draws as they come
(`on_draw`), and at the end the chains' records back over a queue. A caller may take
the rest of a run elsewhere (`hand_over`): the chains, here or in their processes,
pause after their first `HANDOVER_DRAWS` draws (processes send their states there and
go on), and the caller, given their states, either lets them go on or takes them
(`HandedOver`). Chain `c`
is seeded with the `c`-th child of `numpy.random.SeedSequence(seed)`, so a
chain's draws depend on the run's seed and its index, not on how many
processes ran them.

Children are new Python processes (`python -P -m
qvr_core.inference.chain_process`; a fork of a process that has run torch's
thread pools can deadlock, and multiprocessing's spawn re-runs the caller's
main script), given the pickled program and data on stdin; they share this
process's torch threads between them. Stopping: `should_stop()` is polled
while the chains run; closing a child's stdin tells it to stop after its
current iteration; every chain's draws so far come back with `stopped=True`
(see `mcmc.kept_chains`). A child dies with its parent on Linux
(`PR_SET_PDEATHSIG`), so a killed worker takes its chains with it; children
inherit the parent's address-space limit, so each is held to it.

Signals: a terminal's Ctrl-C reaches the whole process group, chains too.
Children start with SIGINT and SIGTERM blocked (so no signal lands before
they are ready), then ignore SIGINT (the parent decides: it stops them by
closing their input) and take SIGTERM as a request to stop after the current
iteration, as if their input had closed. An error in a child reaches the
parent as the same exception (class, message, attributes; pickled), so a run
with chains in processes fails as the same run in one process does; the
child's traceback rides along as a note, shown only if nobody handles it.
torch's own errors from the model become a `ChainError` (the chain, the
iteration, torch's first line) before they leave `_sample`, which both ways
of running share, so they read the same from a child as from here.
"""

from __future__ import annotations

import builtins
import contextlib
import ctypes
import logging
import os
import pickle
import queue
import signal
import struct
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np
import torch
from threadpoolctl import threadpool_limits

from qvr_core.inference.errors import ChainError, InferenceError, is_torch_error
from qvr_core.inference.lockstep import TaskError
from qvr_core.inference.many import COMPILE_SECONDS, Batched, compiled_potential
from qvr_core.inference.mcmc import (
    ChainGroup,
    ChainState,
    MCMCResult,
    ProgramPotential,
    _ChainRecord,
    _result,
    chain_layout,
    initial_values,
    new_chains,
)
from qvr_core.inference.nuts import NUTSKernel, Transition
from qvr_core.inference.sites import FlatLayout, ProgramLike
from qvr_core.inference.starts import chain_starts, child_seeds
from qvr_core.inference.threads import intra_op_threads, one_blas_thread, sampling_threads
from qvr_core.inference.work import Work, count_work
from qvr_core.runtime.errors import first_line
from qvr_core.runtime.program import Observed

# (model, x, observations, kernel, num_warmup, num_samples, layout, starts, send_draws),
# pickled
_Job = tuple[Any, ...]
_Event = tuple[Any, ...]  # (kind, ...payload) sent by a chain process
_Events = queue.Queue[tuple[int, _Event | None]]

log = logging.getLogger(__name__)

PACKAGE_ROOT = Path(__file__).resolve().parents[2]  # what makes `qvr_core` importable
DEFAULT_CHAINS = 4
POLL_SECONDS = 0.05
BATCH_SECONDS = 0.1  # how long a chain process holds its iterations before sending them
JOIN_SECONDS = 2.0
#: Blocked while a chain process starts; the child installs its own handling, then unblocks.
CHILD_SIGNALS = frozenset({signal.SIGINT, signal.SIGTERM})
ProgressFn = Callable[[int, int, float, int], None]  # (done, total, potential, chain)


@dataclass(frozen=True)
class ChainDraw:
    """One draw after warmup as it arrives: each latent site's value (constrained, float64)
    and the sampler's statistics of that iteration."""

    values: dict[str, np.ndarray]
    diverging: bool
    tree_depth: int
    energy: float


DrawFn = Callable[[int, ChainDraw], None]  # (chain, draw)


def usable_cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not on Linux
        return max(1, os.cpu_count() or 1)


#: The most processes a run's chains may take here (`limit_processes`); None: one per core.
_process_limit: int | None = None


def limit_processes(limit: int | None) -> None:
    """Hold this process's runs to `limit` chain processes (None: one per usable core).
    A process that is itself one of several sharing the cores (a `qvr sbc` job) sets 1,
    so its chains never start processes of their own on cores its siblings use."""
    global _process_limit
    _process_limit = None if limit is None else max(1, int(limit))


def default_processes(chains: int) -> int:
    """One process per chain, at most one per usable core (and `limit_processes`)."""
    cores = usable_cores() if _process_limit is None else min(usable_cores(), _process_limit)
    return max(1, min(chains, cores))


#: One evaluation of the chains' potential estimated slower than this (`work.Work`) is
#: mostly arithmetic, which processes on more cores share out; faster, it is mostly the
#: interpreter, which the chains advanced together in one process
#: (`mcmc.sample_chains`) pay once for all.
SPLIT_SECONDS = 0.005
#: A run whose chains share this process runs their first iterations here, together, and
#: then reads how long their trees are: a posterior whose trees are long (gp_pois_regr:
#: about 170 leapfrog steps an iteration) spends as much time in the trees' own Python
#: as in its potential, and that Python, one chain's after another's in one process, is
#: shared out by processes (`worth_splitting`).
PROBE_ITERATIONS = 50
#: What the tree's Python costs per leapfrog step of one chain, counted rather than timed
#: as `work` counts (measured on gp_pois_regr: 45 to 90 us on a 3 GHz core).
TREE_SECONDS = 50e-6
#: The rest of a run goes to processes when the tree time they take off this one is
#: projected above this: several times a chain process's start (importing torch and
#: recording the potential, about 3 s), so that a run only splits where it gains.
SPLIT_GAIN_SECONDS = 10.0


@dataclass(frozen=True)
class Placement:
    """Where a run's chains go: how many processes, and (in one) the chains' potential
    already recorded while deciding, so the run does not record it again."""

    processes: int
    recorded: Batched | None = None


def _counted(
    model: ProgramLike, x: Any, observations: Mapping[str, Observed], layout: FlatLayout
) -> tuple[ProgramPotential, torch.Tensor, Work]:
    """The model's potential, a start (drawn without touching the caller's random
    stream) and the work of one evaluation there (`inference.work`)."""
    potential = ProgramPotential(model, x, dict(observations), layout)
    with torch.random.fork_rng():
        start = layout.pack(initial_values(model, x, dict(observations)))
    return potential, start, count_work(lambda: potential(start))


def chosen_processes(
    model: ProgramLike,
    x: Any,
    observations: Mapping[str, Observed],
    layout: FlatLayout,
    chains: int,
    counted: tuple[ProgramPotential, torch.Tensor, Work] | None = None,
) -> Placement:
    """Where `run_chains` puts its chains by default: together in this process unless
    one evaluation of the model's potential costs `SPLIT_SECONDS` or more and there are
    cores to share it out. An eager evaluation that slow may still be mostly the
    interpreter (a `marginalize` scope's Python per value: the HMM example's 10 ms are
    0.3 ms recorded), so a model quick enough to record is recorded for all its chains,
    where only its arithmetic is left, for every chain.

    The costs are counted (`inference.work`), not timed: the two placements round
    differently, and a choice by the clock would give a `--seed` run other draws when
    the machine is busy."""
    if default_processes(chains) == 1:
        return Placement(1)
    potential, start, work = (
        counted if counted is not None else _counted(model, x, observations, layout)
    )
    if work.seconds < SPLIT_SECONDS:
        return Placement(1)
    if work.seconds < COMPILE_SECONDS:
        starts = start.expand(chains, -1).clone()
        recorded = compiled_potential(potential, potential.log_density, starts)
        if recorded is not None and chains * work.arithmetic_seconds < SPLIT_SECONDS:
            return Placement(1, recorded)
    return Placement(default_processes(chains))


def worth_splitting(states: Sequence[ChainState], total: int, processes: int) -> bool:
    """Whether the rest of a run, chains `states` `total` iterations long each, goes to
    `processes` processes: the leapfrog steps of the iterations done so far, projected
    over the rest, times what each costs the tree (`TREE_SECONDS`), the share of it other
    processes take on, against `SPLIT_GAIN_SECONDS`. Counted, not timed: a `--seed` run
    splits, or not, on a loaded machine as on an idle one."""
    done = min((s.chain.iteration for s in states), default=0)
    if processes < 2 or done == 0 or done >= total:
        return False
    leapfrogs = sum(s.chain.leapfrogs for s in states)
    projected = leapfrogs * (total - done) / done
    return projected * TREE_SECONDS * (1 - 1 / processes) > SPLIT_GAIN_SECONDS


#: A run with a `hand_over` pauses its chains after this many draws each: enough to read
#: how long their trees are with the metric and step size warmup ended on.
HANDOVER_DRAWS = 50

#: `run_chains`' `hand_over(states)`: given every chain's state after `HANDOVER_DRAWS`
#: draws, whether the caller takes the rest of the run (True: `HandedOver` is raised).
HandOver = Callable[[Sequence[ChainState]], bool]


class HandedOver(Exception):  # a control-flow signal, not an error
    """`run_chains` stopped where its `hand_over` took the chains on: every chain's state
    (`mcmc.ChainState`, its position, step size and metric), by chain index, and where
    they started (`MCMCResult.starts`)."""

    def __init__(self, states: Sequence[ChainState], starts: str) -> None:
        super().__init__(f"{len(states)} chains handed over")
        self.states, self.starts = list(states), starts


def projected_tree_seconds(states: Sequence[ChainState], num_samples: int) -> float:
    """What the trees' own Python would cost the rest of the draws, `num_samples` a chain:
    the leapfrog steps of the draws so far (past warmup: the metric and step size the
    draws are made with), projected over the rest, times `TREE_SECONDS`. Counted, not
    timed, as `worth_splitting` is, so a `--seed` run decides the same on any machine."""
    drawn = min((len(s.record.steps) for s in states), default=0)
    if drawn == 0 or drawn >= num_samples:
        return 0.0
    steps = sum(sum(s.record.steps[:drawn]) for s in states)
    return steps * (num_samples - drawn) / drawn * TREE_SECONDS


def chain_seeds(seed: int, chains: int) -> list[int]:
    """Independent seeds for each chain, derived from the run's seed."""
    return child_seeds(seed, 0, chains)


def run_chains(
    model: ProgramLike,
    x: Any,
    observations: Mapping[str, Observed],
    kernel: NUTSKernel,
    num_warmup: int,
    num_samples: int,
    *,
    chains: int = DEFAULT_CHAINS,
    seed: int = 0,
    processes: int | None = None,
    on_progress: ProgressFn | None = None,
    on_draw: DrawFn | None = None,
    should_stop: Callable[[], bool] | None = None,
    share: ChainShare | None = None,
    init: str = "pathfinder",
    hand_over: HandOver | None = None,
) -> MCMCResult:
    """Run `chains` chains and collect them; `on_progress(done, total, potential, chain)`
    as iterations finish in any chain (`total` counts all chains' iterations);
    `on_draw(chain, draw)` for every draw after warmup, in the order they arrive.

    `share`, for a run spread over machines (`qvr_core.runs.distributed`): the chains
    this process runs (here, together), and how every process's records are brought
    together; each chain is seeded by its index, so the chains are the ones one
    process would run, and `processes` in the result counts the machines' processes.

    `init` (`run_arguments.INITS`) says where the chains start: at multi-path Pathfinder's
    draws (`pathfinder`, the default) or at the program's forward draws (`prior`).

    `hand_over`, for a run of more than twice `HANDOVER_DRAWS` draws in this machine's
    processes: the chains pause after `HANDOVER_DRAWS` draws each, and where every one
    got there and `hand_over(states)` says so, `HandedOver` is raised with their states
    (the caller goes on from them); otherwise they go on where they are."""
    if chains < 1:
        raise InferenceError(f"chains must be at least 1, got {chains}")
    seeds = chain_seeds(seed, chains)
    total = chains * (num_warmup + num_samples)
    progress = _Progress(total, on_progress)
    with torch.random.fork_rng():  # the layout's start draws leave the caller's stream alone
        shared = chain_layout(model, x, observations)
    counted: tuple[ProgramPotential, torch.Tensor, Work] | None = None
    with contextlib.suppress(Exception):  # the chains' starts below say what is wrong
        counted = _counted(model, x, observations, shared)
    # a small model's chains on one thread (`inference.threads`), their processes' too;
    # NumPy's small dense arithmetic (Pathfinder, the metrics) always on one
    threads = torch.get_num_threads() if counted is None else sampling_threads(counted[2])
    with intra_op_threads(threads), one_blas_thread():
        recorded = None
        probe = 0  # iterations run here before the rest may go to processes
        if share is not None:  # this process's chains advance together here
            processes = 1
        elif processes is None:
            placement = chosen_processes(model, x, observations, shared, chains, counted)
            processes, recorded = placement.processes, placement.recorded
            on_cpu = torch.get_default_device().type == "cpu"  # one GPU: its chains stay together
            if processes == 1 and default_processes(chains) > 1 and on_cpu:
                probe = min(PROBE_ITERATIONS, num_warmup)
        processes = max(1, min(processes, chains))
        starts = chain_starts(
            model, x, observations, shared, seeds, seed, init=init, recorded=recorded
        )
        recorded = starts.recorded
        draws = None if on_draw is None else _DrawReader(shared, on_draw)
        job = (
            model,
            x,
            dict(observations),
            kernel,
            num_warmup,
            num_samples,
            shared,
            starts.positions,
            draws is not None,
        )
        if processes > 1:
            try:
                payload = pickle.dumps(job)
            except (pickle.PicklingError, TypeError, AttributeError) as e:
                log.warning(
                    "the chains run one after another here: the program cannot travel (%s)", e
                )
                processes = 1
        resumed: dict[int, ChainState] = {}
        if processes == 1 and probe > 0:
            here = [(c, seeds[c], None) for c in range(chains)]
            probed, recorded = _sample(
                job, here, progress, _readers(draws), should_stop, recorded, until=probe
            )
            resumed = dict(probed)
            split = default_processes(chains)
            probed_all = all(s.chain.iteration == probe for s in resumed.values())  # none stopped
            if probed_all and worth_splitting(
                list(resumed.values()), num_warmup + num_samples, split
            ):
                try:
                    payload = pickle.dumps(job)
                    processes = split
                    log.debug("the chains go on in %d processes after %d iterations", split, probe)
                except (pickle.PicklingError, TypeError, AttributeError) as e:
                    log.debug("the chains go on here: the program cannot travel (%s)", e)
        started = "prior" if starts.positions is None else "pathfinder"  # `MCMCResult.starts`
        pause = None
        if hand_over is not None and share is None and num_samples > 2 * HANDOVER_DRAWS:
            pause = _Pause(num_warmup + HANDOVER_DRAWS, hand_over, started)
        if processes == 1:
            mine = range(chains) if share is None else share.mine
            compile = not resumed or recorded is not None  # a probe that could not record, once
            if pause is not None:
                paused_parts: list[_Part] = [(c, seeds[c], resumed.get(c)) for c in mine]
                paused, recorded = _sample(
                    job, paused_parts, progress, _readers(draws), should_stop, recorded,
                    until=pause.at, compile=compile,
                )  # fmt: skip
                pause.decide([s for _, s in paused])
                resumed, compile = dict(paused), recorded is not None
            records = _here(
                job, seeds, mine, progress, draws, should_stop, recorded, resumed, compile
            )
        else:
            records = _in_processes(
                payload, seeds, processes, progress, draws, should_stop, resumed, pause
            )
        if draws is not None:
            draws.flush()
        if share is not None:  # every process's chains, by index
            parts = share.gather([(c, records[c]) for c in share.mine])
            for part in parts:
                for c, record in part:
                    records[c] = record
            processes = len(parts)
        got = [r for r in records if r is not None]
        stopped = len(got) < len(records) or not all(r.complete for r in got)
        result = _result(shared, got, stopped=stopped)
        result.seeds, result.processes = seeds, processes
        result.starts = started
        return result


@dataclass(frozen=True)
class _Pause:
    """Where a run's chains pause for its `hand_over`, and the hand-over itself."""

    at: int
    hand_over: HandOver
    starts: str

    def decide(self, states: Sequence[ChainState]) -> None:
        """Raise `HandedOver` where every chain reached the pause and the caller takes
        them; return where they go on."""
        if all(s.chain.iteration == self.at for s in states) and self.hand_over(states):
            raise HandedOver(states, self.starts)


@dataclass(frozen=True)
class ChainShare:
    """This process's chains of a run spread over processes, and how each process's
    records come together (in every process, by chain index)."""

    mine: list[int]
    #: every process's `(chain, value)` pairs, one list per process (records, traces)
    gather: Callable[[list[tuple[int, Any]]], list[Any]]


class _DrawReader:
    """Turns chains' unconstrained positions into `ChainDraw`s for `on_draw`, `BATCH` at a
    time (`FlatLayout.unpack_many`: one torch call per site for the batch, where one per
    draw cost a run of 4,000 draws half a second). `flush` hands over the rest at the
    end; a live view lags by at most a batch."""

    BATCH = 64

    def __init__(self, layout: FlatLayout, on_draw: DrawFn) -> None:
        self.layout, self.on_draw = layout, on_draw
        self.pending: list[tuple[int, torch.Tensor, bool, int, float]] = []

    def __call__(
        self, chain: int, z: torch.Tensor, diverging: bool, depth: int, energy: float
    ) -> None:
        self.pending.append((chain, z.detach().clone(), bool(diverging), int(depth), float(energy)))
        if len(self.pending) >= self.BATCH:
            self.flush()

    def flush(self) -> None:
        pending, self.pending = self.pending, []
        if not pending:
            return
        with torch.no_grad():
            values, _ = self.layout.unpack_many(torch.stack([p[1] for p in pending]))
        arrays = {k: v.detach().to(torch.float64).numpy() for k, v in values.items()}
        for i, (chain, _, diverging, depth, energy) in enumerate(pending):
            draw = ChainDraw({k: a[i, ...] for k, a in arrays.items()}, diverging, depth, energy)
            self.on_draw(chain, draw)

    def transition(self, chain: int) -> Callable[[Transition], None]:
        """`sample_chain`'s `on_draw` for chain `chain` run in this process."""
        return lambda t: self(chain, t.z, t.diverging, t.tree_depth, t.energy)


class _Counted:
    """A chain's `on_step` that counts the iterations done, for `ChainError`."""

    def __init__(self, report: Callable[[float], None], done: int = 0) -> None:
        self.report, self.done = report, done

    def __call__(self, potential: float) -> None:
        self.done += 1
        self.report(potential)


class _Progress:
    def __init__(self, total: int, report: ProgressFn | None) -> None:
        self.total, self.report, self.done = total, report, 0

    def __call__(self, potential: float, chain: int) -> None:
        self.done += 1
        if self.report is not None:
            self.report(self.done, self.total, potential, chain)


def _here(
    job: _Job,
    seeds: list[int],
    mine: Iterable[int],
    progress: _Progress,
    draws: _DrawReader | None,
    should_stop: Callable[[], bool] | None,
    recorded: Batched | None = None,
    resumed: Mapping[int, ChainState] | None = None,
    compile: bool = True,
) -> list[_ChainRecord | None]:
    """The chains `mine` run together here (`recorded`: their potential, if recorded
    already; `resumed`: chains that ran their first iterations already; `compile`: whether
    to try recording it); the records of every chain by index (None for the chains
    another process runs)."""
    records: list[_ChainRecord | None] = [None] * len(seeds)
    resumed = resumed or {}
    chains = [(c, seeds[c], resumed.get(c)) for c in mine]
    if chains:
        done, _ = _sample(
            job, chains, progress, _readers(draws), should_stop, recorded, compile=compile
        )
        for c, state in done:
            records[c] = state.record
    return records


def _readers(draws: _DrawReader | None) -> Callable[[int], Callable[[Transition], None] | None]:
    """Each chain's reader of its draws, here (none when nobody reads them as they come)."""
    return lambda c: None if draws is None else draws.transition(c)


#: (chain, seed, the chain as far as it has run, or None for a chain yet to start)
_Part = tuple[int, int, ChainState | None]


def _sample(
    job: _Job,
    chains: Sequence[_Part],
    report: Callable[[float, int], None],
    on_draw: Callable[[int], Callable[[Transition], None] | None],
    should_stop: Callable[[], bool] | None,
    recorded: Batched | None = None,
    *,
    until: int | None = None,
    compile: bool = True,
) -> tuple[list[tuple[int, ChainState]], Batched | None]:
    """Run the chains together, here (`mcmc.ChainGroup`), each to iteration `until` (by
    default its last); each chain's state at the end, and the potential recorded for
    them (None if it was not). `report(potential, c)` after chain c's iterations;
    `on_draw(c)` is chain c's reader of its draws.

    torch's own errors from the model (a RuntimeError of a Cholesky factor at a point
    the sampler reached) become a `ChainError` naming the chain and the iteration, here
    as in a chain process, so both runs fail with the same line; errors already in the
    user's words (ours, the runtime's) go on as they are."""
    model, x, observations, kernel, num_warmup, num_samples, layout, starts, _ = job
    total = num_warmup + num_samples
    fresh = [(c, seed) for c, seed, state in chains if state is None]
    made = iter(
        new_chains(
            model,
            x,
            observations,
            kernel,
            num_warmup,
            [seed for _, seed in fresh],
            layout,
            None if starts is None else [starts[c] for c, _ in fresh],
        )
    )
    states = [next(made) if state is None else state for _, _, state in chains]
    indices = [c for c, _, _ in chains]
    steps = {
        c: _Counted(_bound(report, c), s.chain.iteration)
        for c, s in zip(indices, states, strict=True)
    }
    try:
        group = ChainGroup(
            model, x, observations, layout, states, compile=compile, recorded=recorded
        )
        group.advance(
            total if until is None else until,
            lambda k: steps[indices[k]],
            lambda k: on_draw(indices[k]),
            should_stop,
            total=total,
        )
    except TaskError as failed:
        c, e = indices[failed.index], failed.error
        if not is_torch_error(e):
            raise e from None
        raise ChainError(c, steps[c].done + 1, num_warmup, first_line(e)) from e
    return list(zip(indices, states, strict=True)), group.potential.function


def _in_processes(
    payload: bytes,
    seeds: list[int],
    processes: int,
    progress: _Progress,
    draws: _DrawReader | None,
    should_stop: Callable[[], bool] | None,
    resumed: Mapping[int, ChainState] | None = None,
    pause: _Pause | None = None,
) -> list[_ChainRecord | None]:
    """The chains shared out over `processes` chain processes (`resumed`: those that ran
    their first iterations here already, which go on where they are); every chain's
    record by index. With a `pause`, each process sends its chains' states at `pause.at`
    and goes on without waiting (a process whose chains got there first would otherwise
    idle until the slowest did); taken over (`HandedOver`, from those states), the
    processes are stopped and what they drew since is not kept."""
    resumed = resumed or {}
    paused: dict[int, ChainState] = {}
    threads = max(1, torch.get_num_threads() // processes)
    events: _Events = queue.Queue()
    children: list[subprocess.Popen[bytes]] = []
    records: list[_ChainRecord | None] = [None] * len(seeds)
    stopping = False
    try:
        for p in range(processes):
            mine = [(c, seeds[c], resumed.get(c)) for c in range(p, len(seeds), processes)]
            child = _start_child(p, events)
            children.append(child)
            assert child.stdin is not None
            with contextlib.suppress(BrokenPipeError):  # it died at once: its end says why
                until = None if pause is None else pause.at
                frame = (payload, mine, threads, os.getpid(), until)
                _write_frame(child.stdin, pickle.dumps(frame))
                child.stdin.flush()
        finished = ended = 0
        while finished < len(seeds) and ended < len(children):
            if not stopping and should_stop is not None and should_stop():
                stopping = True
                _stop_all(children)
            try:
                p, event = events.get(timeout=POLL_SECONDS)
            except queue.Empty:
                continue
            if event is None:  # a child closed its output
                ended += 1
                code = children[p].wait()
                if code != 0 and not stopping:  # while stopping, a chain cut short is expected
                    raise _crash(code)
                continue
            kind = event[0]
            if kind == "batch":
                _, steps, drawn = event
                for c, potential in steps:
                    progress(potential, c)
                if draws is not None:
                    for c, z, diverging, depth, energy in drawn:
                        draws(c, torch.from_numpy(z), diverging, depth, energy)
            elif kind == "chain":
                _, c, record = event
                records[c] = record
                finished += 1
            elif kind == "paused" and pause is not None:
                _, c, state = event
                paused[c] = state
                if len(paused) == len(seeds):
                    pause.decide([paused[c] for c in sorted(paused)])
            elif kind == "error":
                raise _child_error(event)
        return records
    finally:
        _stop_all(children)
        for child in children:
            try:
                child.wait(JOIN_SECONDS)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()


def _start_child(index: int, events: _Events) -> subprocess.Popen[bytes]:
    """`python -P -m qvr_core.inference.chain_process`, its output read by a thread.

    A process of its own rather than multiprocessing's spawn, which re-runs the
    main script of the caller (a script without `if __name__ == "__main__"`
    would start its run again in every child). It starts with `CHILD_SIGNALS`
    blocked (a signal mask survives fork and exec): a Ctrl-C while it imports
    torch waits for `child_main`, which ignores it, instead of printing a
    traceback. Only this thread's mask changes, for the moment of the start;
    a signal for this process meanwhile goes to another thread or waits.
    """
    env = dict(os.environ)
    paths = [str(PACKAGE_ROOT), *env.get("PYTHONPATH", "").split(os.pathsep)]
    env["PYTHONPATH"] = os.pathsep.join(p for p in dict.fromkeys(paths) if os.path.isabs(p))
    with _blocked(CHILD_SIGNALS):
        child = subprocess.Popen(
            [sys.executable, "-P", "-m", "qvr_core.inference.chain_process"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            cwd=PACKAGE_ROOT,
        )
    assert child.stdout is not None
    reader = threading.Thread(target=_read_events, args=(index, child.stdout, events), daemon=True)
    reader.start()
    return child


def _read_events(index: int, stream: IO[bytes], events: _Events) -> None:
    try:
        while (frame := _read_frame(stream)) is not None:
            events.put((index, pickle.loads(frame)))
    finally:
        events.put((index, None))


@contextlib.contextmanager
def _blocked(signals: frozenset[signal.Signals]) -> Iterator[None]:
    """`signals` blocked in this thread for the block (where the platform has masks)."""
    if not hasattr(signal, "pthread_sigmask"):  # pragma: no cover - not on POSIX
        yield
        return
    before = signal.pthread_sigmask(signal.SIG_BLOCK, signals)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


def _stop_all(children: list[subprocess.Popen[bytes]]) -> None:
    """Closing a child's input asks it to stop after its current iteration."""
    for child in children:
        if child.stdin is not None and not child.stdin.closed:
            with contextlib.suppress(OSError):
                child.stdin.close()


def _crash(code: int) -> InferenceError:
    how = f"was killed by signal {-code}" if code < 0 else f"exited with status {code}"
    return InferenceError(
        f"a chain process {how} before its chains were done"
        + ("; it may have run out of memory" if code == -signal.SIGKILL else "")
    )


def _child_error(event: _Event) -> BaseException:
    """The exception a chain process sent: the same class, message and attributes as it
    raised there (the same run in one process raises that), its traceback as a note."""
    _, kind, message, *rest = event
    pickled, where = [*rest, None, None][:2]
    exc: BaseException | None = None
    if pickled is not None:
        try:
            exc = pickle.loads(pickled)
        except Exception:  # any failure to rebuild it falls back to the name
            exc = None
    if not isinstance(exc, BaseException):
        exc = _by_name(kind, message)
    if where and hasattr(exc, "add_note"):
        exc.add_note(f"in a chain process:\n{where.rstrip()}")
    return exc


def _by_name(kind: str, message: str) -> BaseException:
    """An exception of the class named `kind` where it is one of ours or a builtin."""
    from qvr_core.inference import errors
    from qvr_core.runtime import errors as runtime_errors

    for module in (errors, runtime_errors):
        cls = getattr(module, kind, None)
        if isinstance(cls, type) and issubclass(cls, Exception):
            try:
                return cls(message)
            except TypeError:
                break
    builtin = getattr(builtins, kind, None)
    if isinstance(builtin, type) and issubclass(builtin, Exception):
        with contextlib.suppress(TypeError):
            return builtin(message)
    return InferenceError(f"a chain failed: {kind}: {message}")


def _write_frame(stream: IO[bytes], data: bytes) -> None:
    stream.write(struct.pack("<Q", len(data)) + data)


def _read_frame(stream: Any) -> bytes | None:
    head = _read_exactly(stream, 8)
    if head is None:
        return None
    (size,) = struct.unpack("<Q", head)
    return _read_exactly(stream, size)


def _read_exactly(stream: Any, size: int) -> bytes | None:
    """`size` bytes (a raw stream may return fewer per read), or None at the end."""
    parts, got = [], 0
    while got < size:
        chunk = stream.read(size - got)
        if not chunk:
            return None
        parts.append(chunk)
        got += len(chunk)
    return b"".join(parts)


# ------------------------------------------------------------------ in the child


def child_main() -> int:
    """A chain process: read the job from stdin, run its chains, write events to stdout.

    The rest of stdin is watched: its end (the parent closed it, or died)
    asks the chains to stop after the current iteration, and so does SIGTERM;
    SIGINT is ignored (the parent stops the chains; see the module docstring).
    """
    stop = threading.Event()
    _take_signals(stop)
    out = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # stray prints cannot corrupt events
    source: IO[bytes] = sys.stdin.buffer.raw  # type: ignore[union-attr]  # a BufferedReader's raw file; unbuffered: the watcher below holds no lock at exit
    frame = _read_frame(source)
    if frame is None:
        return 2
    payload, mine, threads, parent, until = pickle.loads(frame)
    _die_with_parent(parent)

    def watch() -> None:
        with contextlib.suppress(OSError):
            while os.read(0, 4096):
                pass
        stop.set()

    threading.Thread(target=watch, daemon=True).start()
    lock = threading.Lock()

    def emit(event: _Event) -> None:
        with lock:
            _write_frame(out, pickle.dumps(event))
            out.flush()

    outbox = _Outbox(emit)

    torch.set_num_threads(threads)
    torch.set_flush_denormal(True)  # as the run that started us does (see job.py)
    threadpool_limits(limits=1, user_api="blas")  # as `run_chains` does (`inference.threads`)
    try:
        job = pickle.loads(payload)
        send = job[-1]  # the parent reads the draws as they come

        def draw(c: int) -> Callable[[Transition], None] | None:
            if not send:
                return None
            return lambda t: outbox.draw(
                (c, t.z.detach().numpy().copy(), t.diverging, t.tree_depth, t.energy)
            )

        recorded, compile = None, True
        if until is not None:  # the parent's `hand_over` reads the states there
            done, recorded = _sample(job, mine, outbox.step, draw, stop.is_set, until=until)
            outbox.flush()
            for c, state in done:  # pickled now: the chains' states at the pause
                emit(("paused", c, state))
            states = dict(done)
            mine = [(c, seed, states[c]) for c, seed, _ in mine]
            compile = recorded is not None  # recorded once: the rest replays it
        done, _ = _sample(job, mine, outbox.step, draw, stop.is_set, recorded, compile=compile)
        outbox.flush()
        for c, state in done:
            emit(("chain", c, state.record))
    except BaseException as exc:  # everything reaches the parent, which raises it again
        outbox.flush()
        emit(_error_event(exc))
        return 1
    finally:
        out.flush()
    return 0


class _Outbox:
    """A chain process's iterations and draws, sent together every `BATCH_SECONDS`: one
    write and one wake-up of the parent per batch, not per iteration (the parent shares
    the cores with the chains)."""

    def __init__(self, emit: Callable[[_Event], None]) -> None:
        self.emit = emit
        self.steps: list[tuple[int, float]] = []
        self.draws: list[tuple[Any, ...]] = []
        self.sent = time.monotonic()

    def step(self, potential: float, chain: int) -> None:
        self.steps.append((chain, potential))
        if time.monotonic() - self.sent >= BATCH_SECONDS:
            self.flush()

    def draw(self, draw: tuple[Any, ...]) -> None:
        self.draws.append(draw)

    def flush(self) -> None:
        if self.steps or self.draws:
            self.emit(("batch", self.steps, self.draws))
            self.steps, self.draws = [], []
        self.sent = time.monotonic()


def _take_signals(stop: threading.Event) -> None:
    """Ignore SIGINT, stop on SIGTERM, then let the signals blocked at the start in."""
    if threading.current_thread() is not threading.main_thread():  # pragma: no cover
        return
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a pending Ctrl-C is dropped with it
    signal.signal(signal.SIGTERM, lambda signum, frame: stop.set())
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, CHILD_SIGNALS)


def _error_event(exc: BaseException) -> _Event:
    """("error", class name, message, the pickled exception or None, its traceback)."""
    message = str(exc) or type(exc).__name__
    pickled: bytes | None = None
    try:
        data = pickle.dumps(exc)
        pickle.loads(data)  # it must come back whole in the parent
        pickled = data
    except Exception:  # anything unpicklable goes by name
        pass
    where = "".join(traceback.format_exception(exc))
    return ("error", type(exc).__name__, message, pickled, where)


def _die_with_parent(parent: int) -> None:
    """Be killed with the process that started the chains, however it ends (Linux)."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(3)


def _bound(report: Callable[[float, int], None], chain: int) -> Callable[[float], None]:
    """`report` with the chain's index filled in (one closure per chain, not per loop)."""
    return lambda potential: report(potential, chain)
