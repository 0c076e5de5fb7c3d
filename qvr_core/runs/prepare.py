"""A run made ready: the source checked, the program picked, the data read and
validated, the run sized against the memory budget, the program compiled.

`qvr_core.plan.runnable.runnability` decides which runtime runs the program: a
seed program (morphisms, kernels, networks, a batch axis) compiles with
`runtime.compile.Compiler`, a model program (family steps, plates, data
names) with `runtime.model.compile_model`; a program neither runs is refused
with the checker's reason.

Without data a seed program gets the gallery's "Try it" recipe: under `seed`,
every parameter drawn as `randn * 0.3`, inputs from `example_input(batch,
seq_len)` and the observed sites forward-sampled; then the parameters drawn
again under `seed + 1`, to be fitted. With data (`qvr_core.runs.data` reads
the formats) it fits its own initialisation (under `seed`) to the file's `x`
and observed sites. A model program's data is by name (`runs.model_data`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import cast

import torch

from qvr_core.check import check
from qvr_core.check.deduction_calls import sentences
from qvr_core.check.module import CheckedModule, ProgramInfo
from qvr_core.check.types import Seq
from qvr_core.host.datafile import DataFile, printable
from qvr_core.inference.errors import InferenceError
from qvr_core.plan.run_arguments import RunArguments
from qvr_core.plan.runnable import PriorDraw, RuntimeKind, improper_refusal, runnability
from qvr_core.runs.data import (
    Vocabulary,
    conform,
    read_data,
    resolve_data_path,
    select,
    whole_numbers,
)
from qvr_core.runs.methods import Input
from qvr_core.runs.model_data import one_thread, refuse_observed_shapes, split_data, synthetic
from qvr_core.runs.sequence_data import SequenceData, optional_keys
from qvr_core.runs.sizing import Sizing, budget_of, size_model_run, size_run
from qvr_core.runs.summary import Method
from qvr_core.runs.synthesise import reads_input, reinitialise, seed_program_data
from qvr_core.runtime.compile import Compiler
from qvr_core.runtime.errors import format_diagnostics
from qvr_core.runtime.model import ModelProgram, compile_model
from qvr_core.runtime.padding import Padded, unpad
from qvr_core.runtime.program import Observed, ProgramModule
from qvr_core.runtime.tensors import example

#: Where a run's data comes from: a path, the bytes of a file already read
#: (`DataFile`, what the language server hands over), or None for synthetic data.
DataSource = DataFile | str | Path | None


@dataclass(frozen=True)
class PreparedRun:
    """A program ready to run: compiled, with its input and observations."""

    name: str
    kind: RuntimeKind
    method: Method
    program: ProgramModule | ModelProgram
    x: Input  # a seed program's batched input (maybe padded); a model program's data names
    observations: dict[str, Observed]  # a seed program's maybe masked
    data: str  # "synthetic", or the data file's name
    sizing: Sizing | None  # the estimate it was admitted under
    #: a prior run's observed sites from the data file, which it draws instead of reading:
    #: kept as observed data, what its prior predictive check compares with
    unread: dict[str, torch.Tensor] = field(default_factory=dict)
    #: the checked source: what a minibatch's plan is read from (`runs.minibatch`)
    checked: CheckedModule | None = None
    #: the source's name in messages (`qvr run FILE`'s file), where it has one
    path: str | None = None


def checked_program(
    source: str, path: str | None, program: str | None
) -> tuple[CheckedModule, str]:
    """The checked source and the exported program to run, or an InferenceError saying
    why not (errors in the source, nothing exported, a let, a program neither runtime
    runs)."""
    checked = check(source)
    where = path or "the source"
    if not checked.ok:
        raise InferenceError(f"{where} has errors:\n" + format_diagnostics(checked.errors, path))
    name = program if program is not None else checked.default_export
    if name is None:
        raise InferenceError(f"{where} exports nothing: add `export NAME`")
    if name not in checked.exports:
        raise InferenceError(
            f"'{name}' is not exported; exports: {', '.join(checked.exports) or 'none'}"
        )
    return checked, name


def prepare(
    source: str,
    arguments: RunArguments,
    *,
    path: str | None = None,
    data: DataSource = None,
    data_root: str | Path | None = None,
    memory_budget: int | None = None,
) -> PreparedRun:
    """Check, pick, read, size and compile: everything before the first step."""
    checked, name = checked_program(source, path, arguments.program)
    verdict = runnability(checked, name)
    if verdict.kind is None:
        raise InferenceError(verdict.reason or f"program {name} cannot run")
    budget = budget_of(memory_budget)
    if verdict.kind == "model":
        return replace(_model(checked, name, arguments, data, data_root, budget), path=path)
    return _morphism(checked, path, name, arguments, data, data_root, budget)


def method_of(arguments: RunArguments) -> Method:
    """The run's method, one of `Method` (validate_run_arguments refused any other)."""
    return cast(Method, arguments.method)


def data_name(data: DataSource) -> str:
    if data is None:
        return "synthetic"
    return data.name if isinstance(data, DataFile) else str(data)


def _file(data: DataFile | str | Path, root: str | Path | None) -> tuple[DataFile | Path, str]:
    """The data to read and its name in messages (printable: a file name is the user's)."""
    file = data if isinstance(data, DataFile) else resolve_data_path(data, root)
    return file, printable(file.name if isinstance(file, DataFile) else str(file), 320)


# ------------------------------------------------------------ seed programs


def _morphism(
    checked: CheckedModule,
    path: str | None,
    name: str,
    arguments: RunArguments,
    data: DataSource,
    data_root: str | Path | None,
    budget: int,
) -> PreparedRun:
    info = checked.programs[name]
    observed = [s.name for s in info.sites if s.kind == "observe"]
    loaded = None if data is None else _read(data, data_root, observed, info, budget)
    if loaded is not None:
        n, length = _data_shape(unpad(loaded[0])[0], info)
    else:
        n, length = arguments.batch, arguments.seq_len
    sizing = size_run(
        checked,
        name,
        method=arguments.method,
        batch=n,
        seq_len=length,
        steps=arguments.steps,
        chains=arguments.chains,
        budget=budget,
    )
    with sizing.guard():
        program = _compile(checked, path, name, arguments.seed, budget)
        x: torch.Tensor | Padded
        if loaded is None:
            x, observations = _synthetic(program, observed, arguments.seed, n, length)
        else:
            x, observations = loaded
    return PreparedRun(
        name,
        "morphism",
        method_of(arguments),
        program,
        x,
        observations,
        data_name(data),
        sizing,
        checked=checked,
    )


def _compile(
    checked: CheckedModule, path: str | None, name: str, seed: int, budget: int
) -> ProgramModule:
    torch.manual_seed(seed)  # the compiled initialisation is part of the run's seed
    program = Compiler(checked, path, memory_budget=budget).export(name)
    assert isinstance(program, ProgramModule), "runnability said: a program"
    return program


def _data_shape(x: torch.Tensor, info: ProgramInfo) -> tuple[int, int]:
    """The batch and sequence length of validated data."""
    assert info.type is not None  # runnability: the program type-checks
    length = int(x.shape[1]) if isinstance(info.type.dom, Seq) else 1
    return int(x.shape[0]), max(length, 1)


def _synthetic(
    program: ProgramModule, observed: list[str], seed: int, batch: int, seq_len: int
) -> tuple[torch.Tensor, dict[str, Observed]]:
    """The seeds' recipe: true parameters and data under `seed` (`seed_program_data`),
    then fresh parameters under seed+1 for the fit to start from."""
    x, observations = seed_program_data(program, observed, seed, batch, seq_len)
    torch.manual_seed(seed + 1)
    reinitialise(program)
    return x, dict(observations)


def _read(
    data: DataFile | str | Path,
    root: str | Path | None,
    observed: list[str],
    info: ProgramInfo,
    budget: int,
) -> tuple[torch.Tensor | Padded, dict[str, Observed]]:
    """The data, read once within the memory budget and validated against the program's
    types: the input `x` (`Padded` with lengths), the observed sites (`Masked` with a
    mask: `runs.sequence_data`), the data names that pick positions, and those a
    morphism reads (`net(x)`: one value of their type per example).

    A program that never reads its input takes none from the file; its data name may
    then be called `x` (quivers' examples do), and its input is a placeholder."""
    file, shown = _file(data, root)
    names = [*observed, *info.data]
    x, given = select(read_data(file, budget), names, shown, optional_keys(observed, names))
    sequences = SequenceData.take(given, observed, shown)
    assert info.type is not None  # runnability: the program type-checks
    types = {
        s.name: s.value_type
        for s in info.sites
        if s.kind == "observe" and s.value_type is not None  # all of them: it type-checks
    }
    typed = {k: info.values[k] for k in info.data if k in info.values}  # read by a morphism
    positions = {
        k: whole_numbers(v, k, shown) for k, v in given.items() if k not in types and k not in typed
    }
    observations = sequences.blank({k: v for k, v in given.items() if k in types}, types, shown)
    observations.update({k: v for k, v in given.items() if k in typed})
    picked = {int(v.shape[1]) for v in positions.values()}
    if "x" in info.data and not reads_input(info):  # the key is the data name's
        x = example(info.type.dom, int(x.shape[0]), 1, torch.Generator().manual_seed(0))
    x, observations = conform(x, observations, info.type.dom, {**types, **typed}, shown, picked)
    inp, observed_values = sequences.apply(x, observations, shown)
    return inp, {**observed_values, **positions}


# ------------------------------------------------------------ model programs


def _model(
    checked: CheckedModule,
    name: str,
    arguments: RunArguments,
    data: DataSource,
    data_root: str | Path | None,
    budget: int,
) -> PreparedRun:
    """A model program's data by name (`runs.model_data`); no parameters to initialise.

    The data is read first, within the memory budget (`read_data` sizes it before
    decoding), so the run can be sized with the data's sizes before it is compiled. A run
    that would draw from an improper prior (the prior predictive, synthetic data) is
    refused before that."""
    if arguments.method == "prior" or data is None:
        draw: PriorDraw = "prior" if arguments.method == "prior" else "synthetic"
        why = improper_refusal(checked, name, draw)
        if why is not None:
            raise InferenceError(why)
    arrays: dict[str, torch.Tensor] | None = None
    shown = "synthetic data"
    if data is not None:
        file, shown = _file(data, data_root)
        shapes = partial(refuse_observed_shapes, checked, name, source=shown)
        model = checked.models.get(name)
        parsed = sentences(model) if model is not None else {}
        words = {k: Vocabulary(d.name, d.words) for k, d in parsed.items()}
        arrays = read_data(file, budget, shapes, words)  # a shape that cannot fit: refused unread
    sizing = size_model_run(
        checked,
        name,
        method=arguments.method,
        steps=arguments.steps,
        chains=arguments.chains,
        budget=budget,
        data=arrays,
        subsample=arguments.subsample,
    )
    with sizing.guard():
        torch.manual_seed(arguments.seed)
        program = compile_model(checked, name)
        if arrays is None:
            arrays = synthetic(program, arguments.seed)
        x, observations = split_data(program, arrays, shown)
        del arrays
        method = method_of(arguments)
        unread: dict[str, torch.Tensor] = {}
        if method == "prior":
            if data is not None:  # real data: what the prior's draws are checked against
                unread = dict(observations)
            observations = {}
        with one_thread(), torch.no_grad():
            program.run(x, observations)  # validates the data against the sites' shapes, supports
    given: dict[str, Observed] = dict(observations)
    return PreparedRun(
        name, "model", method, program, x, given, data_name(data), sizing, unread, checked
    )
