"""The data of a model program's run: its data names and observed sites, by name.

A model program's data is a dict by name: its observed sites and its data names
(the free names its steps read, `sigma`, `group`, `x`). A site whose step writes
its plates (`observe y : School`) takes a value of exactly their shape, and a
data name read as a number argument of it must broadcast to them: an extra axis
is refused naming the key and the shape expected, never fitted as more
observations. Without a data file, a model that needs no data names is fitted
to a synthetic data set: the observed sites drawn from the prior under `seed`,
as the gallery's "Try it" does. The methods are every program's
(`qvr_core.runs.methods`), all on one torch thread (`one_thread`).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

import torch

from qvr_core.builtins import FAMILIES
from qvr_core.check.model import Site, axis_plates
from qvr_core.check.module import CheckedModule
from qvr_core.host.datafile import quoted, quoted_list
from qvr_core.inference.errors import InferenceError
from qvr_core.runs.synthesise import missing_data_hint
from qvr_core.runtime.model import ModelProgram
from qvr_core.runtime.model.program import DTYPE


def split_data(
    program: ModelProgram, data: Mapping[str, torch.Tensor] | None, source: str
) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    """(data names, observed sites) from a data set, refusing missing keys, values the
    program computes, and values whose shapes do not fit the plates their steps write.

    Other keys are ignored, as CmdStan ignores data variables a program does not declare:
    one file serves nested models (`qvr compare`) and posteriordb's `data.json` (which
    holds the sizes, `N`, `J`, that QVR's objects carry) runs as it is. They are named
    only when a key is missing, where one of them may be its misspelling.

    `source` names the data in messages, already printable."""
    computed = set(program.computed_names)
    observed = [n for n in program.observed_names if n not in computed]
    needed = [*program.data_names, *observed]
    given = dict(data or {})
    missing = [k for k in needed if k not in given]
    kept_out = [k for k in program.computed_names if k in given]
    unknown = sorted(set(given) - set(needed))
    if missing or kept_out:
        parts = []
        if missing:
            where = _lines(program)
            parts.append(
                "missing "
                + ", ".join(
                    f"{quoted(k)} (line {where[k]})" if k in where else quoted(k) for k in missing
                )
            )
        shown = unknown if missing else kept_out
        if shown:
            parts.append(f"unexpected {quoted_list(shown)}")
        raise InferenceError(
            f"{source}: {'; '.join(parts)}. Program {program.name} reads "
            + (f"the data names {', '.join(program.data_names)} and " if program.data_names else "")
            + f"the observed sites {', '.join(observed) or '(none)'}"
            + (
                f"; it computes {quoted_list(kept_out)} from the data names (an observed let)"
                if kept_out
                else ""
            )
        )
    empty = [k for k in needed if _numel(given[k]) == 0]
    if empty:
        raise InferenceError(
            f"{source}: {quoted_list(empty)} {'has' if len(empty) == 1 else 'have'} no values "
            "(an empty array): a data name or an observed site needs at least one"
        )
    given = check_shapes(program, given, source)
    x = {k: _tensor(given[k]) for k in program.data_names}
    observations = {k: _tensor(given[k]) for k in observed}
    if computed:
        made = _computed(program, x, source)
        observations = {
            n: observations[n] if n in observations else made[n] for n in program.observed_names
        }
    return x, observations


def _computed(
    program: ModelProgram, x: Mapping[str, torch.Tensor], source: str
) -> dict[str, torch.Tensor]:
    """The observed lets' values, computed from the data names (`let log_earn =
    log(earn)`), refused where one does not fit its site's plates or is not finite."""
    made = program.computed_observations(x)
    for name, value in made.items():
        site = program.site(name)
        shape = declared_shape(site, program.sizes)
        let = program.observed_let(name)
        line = f" (line {let.line})" if let is not None else ""
        where = f"'{name}', computed from the data names by its let{line},"
        if shape is not None and tuple(value.shape) == written_shape(site, program.sizes):
            value = made[name] = value.reshape(shape)
        if shape is not None and tuple(value.shape) != shape:
            raise InferenceError(
                f"{source}: {where} has shape {_shape(value.shape)} but {_step(site)} "
                f"(line {site.line}) needs {_shape(shape)}: give its data names that shape"
            )
        finite = torch.isfinite(value)
        if not bool(finite.all()):
            bad = float(value[~finite].reshape(-1)[0])
            raise InferenceError(
                f"{source}: {where} holds {bad:g} (the log of 0, or of a negative number?): "
                "an observation is a finite number"
            )
    return made


def check_shapes(
    program: ModelProgram, given: Mapping[str, torch.Tensor], source: str
) -> dict[str, torch.Tensor]:
    """`given`, refusing a value that would reshape a plate its step writes: an observed
    site's value must have exactly the plates' shape (then one draw's axes), and a data
    name read as a number argument of such a step must broadcast to the plates. A value
    written with an axis for a one-entry plate (`[28.0]` for `FinSet 1`; a data name's
    `[15.0]` too) is that shape exactly, as written: it comes back without the axis the
    runtime does not make."""
    given = dict(given)
    for name in program.site_names:
        if "$" in name:  # a template's site: its plates are the caller's
            continue
        site = program.site(name)
        shape = declared_shape(site, program.sizes)
        if shape is None or site.scope:
            continue
        step = _step(site)
        value = given.get(name) if site.kind == "observe" else None
        full = written_shape(site, program.sizes)
        if value is not None and tuple(value.shape) == full:
            value = given[name] = value.reshape(shape)
        if value is not None and tuple(value.shape) != shape:
            raise _shape_refusal(site, tuple(value.shape), shape, full, source)
        assert site.type is not None  # declared_shape: the checker typed it
        plates = shape[: len(shape) - len(site.type.element.event)]
        names = tuple(p.name for p in site.type.plates)
        written = tuple(program.sizes[n] for n in names)  # one-entry ones too
        for a in site.args:
            if a.name is None or a.index or a.name not in program.data_names:
                continue
            data = given.get(a.name)
            param = FAMILIES[site.family].param(a.param) if site.family else None
            if data is None or param is None or param.rank:
                continue
            if not _broadcasts(tuple(data.shape), plates) and _broadcasts(
                tuple(data.shape), written
            ):
                data = given[a.name] = _without_one_entry_axes(data, names, program.sizes)
            if not _broadcasts(tuple(data.shape), plates):
                raise InferenceError(
                    f"{source}: data {quoted(a.name)} has shape {_shape(data.shape)} but "
                    f"{step} (line {site.line}) needs its {a.param} to broadcast to its "
                    f"plates {_shape(written)}"
                )
    return given


def refuse_observed_shapes(
    checked: CheckedModule, name: str, shapes: Mapping[str, tuple[int, ...]], source: str
) -> None:
    """`check_shapes`' refusal of an observed site's value that does not have the shape of
    the plates its step writes, from the shapes alone: `read_data` gives an `.npz`'s from
    its headers, so an array that could never fit is refused before any of its values is
    decoded (a gigabyte for an eight-entry plate took seconds to read, then was refused).
    An empty one is left for `split_data`, which says it is empty."""
    model = checked.models[name]
    sizes = {n: o.size for n, o in checked.objects.items() if o.size > 0}  # ModelProgram's
    for site in model.sites:
        if site.kind != "observe" or site.callee is not None or site.scope:
            continue
        value = shapes.get(site.name)
        shape = declared_shape(site, sizes)
        if value is None or shape is None or site.name in model.observed_lets:
            continue
        full = written_shape(site, sizes)
        if math.prod(value) and tuple(value) not in (shape, full):
            raise _shape_refusal(site, tuple(value), shape, full, source)


def _shape_refusal(
    site: Site, value: tuple[int, ...], shape: tuple[int, ...], full: tuple[int, ...], source: str
) -> InferenceError:
    either = f"{_shape(full)} or {_shape(shape)}" if full != shape else _shape(shape)
    return InferenceError(
        f"{source}: data {quoted(site.name)} has shape {_shape(value)} but {_step(site)} "
        f"(line {site.line}) needs {either}"
    )


def declared_shape(site: Site, sizes: Mapping[str, int]) -> tuple[int, ...] | None:
    """The shape of a site's value when its step writes its plates (`observe y : School`)
    and the checker sizes every axis: the plates' sizes (a one-entry object adds no
    axis), then one draw's axes (`Site.value_shape`). None otherwise: the data or the
    arguments size it."""
    return site.value_shape(sizes) if site.annotated else None


def _numel(value: object) -> int:
    """How many numbers a data value holds (a number holds one)."""
    return int(value.numel()) if isinstance(value, torch.Tensor) else 1


def written_shape(site: Site, sizes: Mapping[str, int]) -> tuple[int, ...]:
    """A site's shape with an axis for every plate its step writes, one-entry ones too."""
    assert site.type is not None
    return (*(sizes[p.name] for p in site.type.plates), *site.type.element.event)


def _without_one_entry_axes(
    value: torch.Tensor, plates: tuple[str, ...], sizes: Mapping[str, int]
) -> torch.Tensor:
    """A value that broadcasts to `plates` with an axis for each, one-entry ones too
    (`[1.0]` for `FinSet 1`), without the axes of the plates that lay out none
    (`axis_plates`), which the runtime does not make: it then broadcasts to the plates as
    the runtime holds them."""
    kept = set(axis_plates(plates, sizes))
    last = plates[len(plates) - value.dim() :]  # the plates the value's axes line up with
    return value.reshape(tuple(n for p, n in zip(last, value.shape, strict=True) if p in kept))


def _broadcasts(shape: tuple[int, ...], target: tuple[int, ...]) -> bool:
    """Whether `shape` broadcasts to `target` without widening it."""
    if len(shape) > len(target):
        return False
    return all(n in (1, m) for n, m in zip(reversed(shape), reversed(target), strict=False))


def _step(site: Site) -> str:
    """`observe y : School`: the step as written, for messages."""
    t = site.type
    plates = " * ".join(p.name for p in t.plates) if t is not None else ""
    return f"{site.kind} {site.name} : {plates or (t.label if t is not None else '?')}"


def _shape(shape: tuple[int, ...] | torch.Size) -> str:
    dims = tuple(int(n) for n in shape)
    return str(dims)


def _lines(program: ModelProgram) -> dict[str, int]:
    """The 1-based line of each data name (where first read) and each site (its step)."""
    model = program.model
    where = {d.name: d.span.start_line + 1 for d in model.data}
    where.update({s.name: s.step.span.start_line + 1 for s in model.sites})
    return where


def _tensor(t: torch.Tensor) -> torch.Tensor:
    """Whole numbers as int64, the others in the dtype model programs compute in (float64:
    a survival time of 1e-48 read as float32 would be 0, outside its support)."""
    if t.dtype == torch.bool:
        return t.long()
    return t.to(DTYPE) if t.is_floating_point() else t.long()


def synthetic(program: ModelProgram, seed: int) -> dict[str, torch.Tensor]:
    """Observed sites drawn from the prior under `seed` (a model without data names)."""
    if program.data_names:
        raise InferenceError(
            f"program {program.name} reads the data names {', '.join(program.data_names)}: "
            "give a data file (--data) that holds them; " + missing_data_hint(program.name)
        )
    torch.manual_seed(seed)
    with torch.no_grad():
        values = program.run({}).values
    torch.manual_seed(seed + 1)
    computed = set(program.computed_names)  # computed from the data, as `split_data` does
    return {n: values[n].detach() for n in program.observed_names if n not in computed}


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
