"""One run from QVR source to its summary: `run_program` (typed) and `run_inference`
(its JSON form), what `qvr run`, the language server's worker and `fit` call, so a run
behaves the same from the terminal, an editor and Python.

`prepare` (`runs.prepare`) checks, picks the program, reads the data, sizes the
run and compiles; `execute` runs the method (`runs.methods`) with denormal
floats flushed to zero (see `flush_denormals`) and, for a model program, on
one torch thread. Every problem a user can cause surfaces as `InferenceError`
with a readable message; a NaN or infinite loss raises `NonFiniteLossError`
naming the step, with the summary so far (its JSON form) in its `summary`
attribute. `should_stop()` returning true ends the run cleanly with
`stopped` set.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch

from qvr_core.inference.errors import InferenceError
from qvr_core.inference.results import RunResults
from qvr_core.inference.sites import ProgramLike
from qvr_core.plan.run_arguments import RunArgumentError, RunArguments, validate_run_arguments
from qvr_core.runs.agreement import differences, terms
from qvr_core.runs.device import computing_on, resolve_device, to_device, work_of
from qvr_core.runs.distributed import (
    AllReduce,
    World,
    chain_share,
    joined,
    launched,
    local_rank,
    meeting,
)
from qvr_core.runs.methods import (
    Calls,
    Job,
    ProgressFn,
    StopFn,
    UpdateFn,
    lift_parameters,
    run_nuts,
    run_prior,
    run_svi,
)
from qvr_core.runs.minibatch import Minibatches, plate_plan
from qvr_core.runs.model_data import one_thread
from qvr_core.runs.numpyro_nuts import Engine
from qvr_core.runs.numpyro_nuts import missing as numpyro_missing
from qvr_core.runs.prepare import DataSource, PreparedRun, prepare
from qvr_core.runs.sizing import device_budget
from qvr_core.runs.summary import RunSummary, run_attributes
from qvr_core.runtime.errors import QvrError, QvrRuntimeError
from qvr_core.runtime.model.program import draws_stay_in_support
from qvr_core.runtime.program import ProgramModule
from qvr_core.text.units import format_bytes


def run_program(
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
    data: DataSource = None,
    data_root: str | Path | None = None,
    max_tree_depth: int = 10,
    target_accept: float = 0.8,
    chains: int = 4,
    mass_matrix: str = "auto",
    init: str = "pathfinder",
    engine: str = "auto",
    guide: str = "normal",
    memory_budget: int | None = None,
    subsample: tuple[str, int] | str | None = None,
    device: str = "cpu",
    on_progress: ProgressFn | None = None,
    should_stop: StopFn | None = None,
    results: RunResults | None = None,
    predictive: bool = False,
    on_update: UpdateFn | None = None,
) -> RunSummary:
    """Check `source`, read and validate the data, size the run, compile, run `method`.

    `path` only names the source in messages. `data` is a path or the bytes of
    a file already read (`DataFile`, what the language server hands over).
    `data_root`, when given, is the workspace: relative data paths are
    resolved against it and paths outside it are refused. A run whose
    estimated memory (`qvr_core.sizing.resources`) is over `memory_budget` bytes
    (default: half the available memory) is refused before anything is
    allocated.

    `results`, when given, receives the draws (`qvr_core.inference.results`;
    `predictive` adds posterior predictive draws of the observed sites), for NUTS
    and SVI their pointwise log-likelihood when it fits in the budget
    (`methods.keep_log_likelihood`) and, in its `attrs`, whether they are complete
    or a stopped run's draws so far (`summary.run_attributes`).
    `on_update`, when given, receives NUTS draws as they arrive: every chain's
    traces and the summary table so far (`qvr_core.inference.live`).
    """
    arguments = run_arguments(
        {
            "program": program,
            "method": method,
            "steps": steps,
            "lr": lr,
            "seed": seed,
            "batch": batch,
            "seq_len": seq_len,
            "max_tree_depth": max_tree_depth,
            "target_accept": target_accept,
            "chains": chains,
            "mass_matrix": mass_matrix,
            "init": init,
            "engine": engine,
            "guide": guide,
            "subsample": subsample,
            "device": device,
        },
        memory_budget,
    )
    calls = Calls(on_progress, should_stop, on_update, results, predictive)
    # under torchrun the processes meet before each prepares its run (a rank that cannot
    # tells the others why) and agree on what they run before the first collective
    with user_errors(), meeting(should_stop) as group:
        prepared = prepare(
            source,
            arguments,
            path=path,
            data=data,
            data_root=data_root,
            memory_budget=memory_budget,
        )
        where = _device(prepared, arguments)
        mine = None if group is None else terms(source, prepared, arguments, where.type)
        if where.type != "cpu":  # the program, its data and everything it makes there
            prepared = replace(
                prepared,
                program=to_device(prepared.program, where),
                x=to_device(prepared.x, where),
                observations=to_device(prepared.observations, where),
            )
        if group is not None and mine is not None:  # just before the group is made
            group.agree(mine, differences)
        with joined(group, where) as world, computing_on(where):
            summary = replace(execute(prepared, arguments, calls, world), device=str(where))
    if results is not None:  # a stopped run's draws are marked partial
        results.attrs.update(run_attributes(summary, arguments.steps))
        results.dims.update(site_dims(prepared.program))
    return summary


def site_dims(program: ProgramLike) -> dict[str, tuple[str, ...]]:
    """Each site's axes named by its plates, where the program names them all (a model
    program's sites; `RunResults.dims`)."""
    dims_of = getattr(program, "site_dims", None)
    if dims_of is None:
        return {}
    return {n: d for n in program.site_names if (d := dims_of(n))}


def run_inference(source: str, **arguments: Any) -> dict[str, Any]:
    """`run_program(source, **arguments)` in its JSON form (`RunSummary.to_json`)."""
    return run_program(source, **arguments).to_json()


def _device(prepared: PreparedRun, arguments: RunArguments) -> torch.device:
    """Where the run computes (`runs.device`): `auto` weighs the run's size estimate; a
    GPU's free memory caps the budget the run was admitted under."""
    sizing = prepared.sizing
    device = resolve_device(arguments.device, work=None if sizing is None else work_of(sizing.need))
    if device.type == "cuda" and launched():  # one GPU per process of a node
        device = torch.device("cuda", local_rank())
    if device.type == "cuda" and sizing is not None:
        budget = device_budget(sizing.budget, device)
        if sizing.need.total > budget:
            raise InferenceError(
                f"the run needs about {format_bytes(sizing.need.total)} and the GPU has "
                f"{format_bytes(budget)} free: run it on the CPU (--device cpu) or make it "
                "smaller"
            )
    return device


def _minibatches(
    prepared: PreparedRun, arguments: RunArguments, world: World | None
) -> Minibatches | None:
    """Each SVI step's rows, when the run subsamples a plate or is split over processes."""
    plate, rows = arguments.subsample if arguments.subsample is not None else (None, None)
    if plate is None and world is None:
        return None
    plan = None
    if prepared.kind == "model":
        assert prepared.checked is not None
        plan = plate_plan(prepared.checked, prepared.name, plate)
    elif plate is not None:
        raise InferenceError(
            f"--subsample names a plate of a model program; {prepared.name} is a program of "
            "morphisms, whose steps score the examples of --batch (or of the data file)"
        )
    return Minibatches(
        prepared.x,
        prepared.observations,
        plan=plan,
        rows=rows,
        seed=arguments.seed,
        world=world,
        batch=Job.batch_of(prepared.x),
    )


def execute(
    prepared: PreparedRun, arguments: RunArguments, calls: Calls, world: World | None = None
) -> RunSummary:
    """Run the prepared program by its method (`world`: the processes sharing it)."""
    program = prepared.program
    job = Job(
        prepared.method,
        prepared.name,
        prepared.data,
        program,
        prepared.x,
        prepared.observations,
        arguments.steps,
        calls,
        prepared.sizing,
    )
    job.keep_data()
    if calls.results is not None and prepared.unread:
        calls.results.add("observed_data", prepared.unread)
    with ExitStack() as stack:
        if prepared.sizing is not None:
            stack.enter_context(prepared.sizing.guard())
        stack.enter_context(flush_denormals())
        if prepared.kind == "model":
            stack.enter_context(one_thread())
        if job.method == "svi":
            batches = _minibatches(prepared, arguments, world)
            reducer = AllReduce(torch.get_default_device()) if world is not None else None
            return run_svi(job, arguments.lr, arguments.guide, batches, reducer)
        if arguments.subsample is not None:
            raise InferenceError(
                f"--subsample is for SVI: {job.method} scores every row (NUTS needs the "
                "whole likelihood at every step)"
            )
        if job.method == "nuts":
            target: ProgramLike = program
            x, observations = job.x, job.observations
            if isinstance(program, ProgramModule):  # its weights become latents
                assert not isinstance(job.x, dict)  # a seed program's input
                target, x, observations = lift_parameters(program, job.x, job.observations)
            return run_nuts(
                job,
                target,
                x,
                observations,
                depth=arguments.max_tree_depth,
                target_accept=arguments.target_accept,
                mass_matrix=arguments.mass_matrix,
                init=arguments.init,
                chains=arguments.chains,
                seed=arguments.seed,
                share=None if world is None else chain_share(world, arguments.chains),
                engine=_engine(prepared, arguments),
            )
        with draws_stay_in_support():  # a draw outside its support is reported, by site
            return run_prior(job)
    raise AssertionError("unreachable")  # pragma: no cover


def _engine(prepared: PreparedRun, arguments: RunArguments) -> Engine | None:
    """NumPyro's sampler for the run when it asks for it (`--engine numpyro`), or, `auto`,
    where NumPyro may take the draws on from qvr's warmup (a model program, NumPyro
    installed: `numpyro_nuts.Takeover`), or None: qvr's."""
    if arguments.engine == "qvr":
        return None
    if arguments.engine == "auto":
        if prepared.kind != "model" or prepared.checked is None or numpyro_missing():
            return None
        return Engine(prepared.checked, prepared.name, arguments.device, prepared.path, auto=True)
    if prepared.kind != "model" or prepared.checked is None:
        raise InferenceError(
            "the numpyro engine samples model programs; a seed program's weights are "
            "lifted and sampled by qvr's NUTS (run without --engine)"
        )
    return Engine(prepared.checked, prepared.name, arguments.device, prepared.path)


def run_arguments(given: dict[str, Any], memory_budget: object) -> RunArguments:
    """The run's arguments validated as the command line and the server validate them."""
    try:
        arguments = validate_run_arguments(given)
    except RunArgumentError as e:
        raise InferenceError(str(e)) from None
    if memory_budget is not None and (
        isinstance(memory_budget, bool) or not isinstance(memory_budget, int) or memory_budget < 1
    ):
        raise InferenceError(f"memory_budget must be a number of bytes, not {memory_budget!r}")
    return arguments


@contextmanager
def flush_denormals() -> Iterator[None]:
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
def user_errors() -> Iterator[None]:
    """Turn the errors a user can cause (bad source, bad shapes) into InferenceError."""
    try:
        yield
    except InferenceError:
        raise
    except (QvrError, QvrRuntimeError, OSError) as e:
        raise InferenceError(str(e)) from e
