"""A data file of the right shapes for a program, so a model can be tried before its data.

`synthesise(checked, name)` makes one array for every key a run of program
`name` reads (`qvr run --data`), drawn under a seed, from what the checker
knows and nothing re-read from the syntax:

- a model program's data names (`runtime.model.ModelProgram.data_names`: its
  value parameters and the free names its steps read). An index (`county` in
  `alpha[county]`, a `via=` map) holds whole numbers below the size of the plate
  it indexes (`DataVariable.indexes`); a number holds values in the support of
  every family parameter it is an argument of (`sigma` of `Normal(theta,
  sigma)` is positive; a `Nat` parameter is a whole number). Its shape is the
  plates of the first step that reads it (through `let`s too), an observed
  step's first: `x` in `let mu = alpha + beta * x; observe y : Row <- ...` has
  one value per Row; a name no step with known plates reads gets `rows` values,
  a program parameter one number;
- its observed sites: drawn from the model under those data names, so an
  observation agrees with the data it depends on (a `BetaBinomial` count never
  above its `n_trials`), then cast to the checker's type (a discrete site's
  values are integers). A draw that does not look like data (a value past
  1e6 in size, or a positive one under 1e-6: `PLAUSIBLE`), as a wide or
  heavy-tailed prior gives, is drawn again under the next seed, up to `DRAWS`
  seeds: the file is then a prior draw given that it looks like data. Failing
  that, the first finite draw is kept; a draw that is never finite is replaced
  by values in the support;
- a seed program's input `x` and observed sites: the gallery's "Try it" data
  at `batch` and `seq_len`, and random positions for each data name that picks
  them (`h[picks]`).

`write_data` saves it as `.npz` (numpy, no pickles) or `.json`; both are
formats `qvr run --data` reads. `missing_data_hint` is the sentence a run that
lacks its data ends with, naming `qvr data`, which writes such a file.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from qvr_core.builtins import FAMILIES, FUNCTIONS
from qvr_core.builtins.constraints import Constraint
from qvr_core.builtins.families import Param
from qvr_core.builtins.functions import Function
from qvr_core.check.deduction_calls import sentences
from qvr_core.check.deduction_system import Deduction
from qvr_core.check.model import DataVariable, Let, Model, Site, axis_sizes
from qvr_core.check.module import CheckedModule, ProgramInfo
from qvr_core.check.terms import Call, Ref, Term, refs, subterms
from qvr_core.inference.errors import InferenceError
from qvr_core.inference.results import write_replacing
from qvr_core.plan.runnable import improper_refusal, runnability
from qvr_core.runtime.compile import Compiler
from qvr_core.runtime.deduction import OPS, goal_weight
from qvr_core.runtime.errors import QvrError, QvrRuntimeError, first_line
from qvr_core.runtime.model import ModelProgram, compile_model
from qvr_core.runtime.program import ProgramModule

#: How many rows a data name gets when no step with known plates reads it (a
#: covariate of an observed site whose rows only the data fixes).
DEFAULT_ROWS = 20
#: Seeds tried for a prior draw of the observed sites before values in the support.
DRAWS = 8
#: The formats `write_data` writes (a subset of what `qvr run --data` reads).
SUFFIXES = (".npz", ".json")
#: Whole numbers for a count (a `Binomial`'s `total_count`, a `Nat` parameter).
COUNTS = (1, 10)


@dataclass(frozen=True)
class Column:
    """One key of the file: its values and, in words, what the program reads it as."""

    key: str
    value: np.ndarray
    what: str
    #: the words a sentence's ids stand for (a JSON file writes the words), else ()
    words: tuple[str, ...] = ()

    def describe(self) -> str:
        """`y: int64, shape (120,), observed site (Bernoulli), values 0 .. 1`."""
        v = self.value
        if self.words:
            said = " ".join(self.words[i] for i in v.reshape(-1).tolist())
            return f"{self.key}: {v.size} words, {self.what}: {said!r}"
        shape = f"shape {v.shape}" if v.shape else "a number"
        span = f"{v.min():.4g} .. {v.max():.4g}" if v.size else "none"
        return f"{self.key}: {v.dtype}, {shape}, {self.what}, values {span}"


@dataclass(frozen=True)
class SynthesisedData:
    """A data set for program `program`, in the order a run reads it."""

    program: str
    columns: tuple[Column, ...]

    def arrays(self) -> dict[str, np.ndarray]:
        return {c.key: c.value for c in self.columns}


def missing_data_hint(program: str) -> str:
    """What a run lacking its data says last: the command that writes such a file."""
    return (
        f"`qvr data FILE --program {program} -o data.npz` writes a file of the right "
        "shapes to try it with"
    )


def synthesise(
    checked: CheckedModule,
    name: str,
    *,
    seed: int = 0,
    rows: int = DEFAULT_ROWS,
    batch: int = 16,
    seq_len: int = 8,
) -> SynthesisedData:
    """Every key program `name` of `checked` reads, drawn under `seed` (module docstring).

    Raises InferenceError, one line, when the program does not run (the checker's
    reason) or its model cannot be drawn from at the values made for its data."""
    if rows < 1:
        raise InferenceError(f"rows must be at least 1, not {rows}")
    verdict = runnability(checked, name)
    if verdict.kind is None:
        raise InferenceError(verdict.reason or f"program {name} cannot run")
    improper = improper_refusal(checked, name, "file")
    if improper is not None:
        raise InferenceError(improper)
    try:
        if verdict.kind == "model":
            return _model_data(checked, name, seed, rows)
        return _seed_data(checked, name, seed, batch, seq_len)
    except (QvrError, QvrRuntimeError) as e:
        raise InferenceError(f"cannot synthesise data for {name}: {first_line(e)}") from e


def write_data(data: SynthesisedData, path: str | Path) -> Path:
    """Save `data` at `path` (`.npz` or `.json`, by its suffix), atomically as a run's
    `--output` is written (`results.write_replacing`), so a reader never sees half a file."""
    target = Path(path)
    suffix = target.suffix.lower()
    if suffix not in SUFFIXES:
        raise InferenceError(
            f"{target}: write a {' or '.join(SUFFIXES)} file ({target.suffix or 'no suffix'} "
            "is not one)"
        )
    if suffix == ".npz":

        def save(temporary: str) -> None:
            with open(temporary, "wb") as f:
                np.savez(f, **data.arrays())  # type: ignore[arg-type]  # numpy's stub: kwargs of arrays

    else:

        def save(temporary: str) -> None:
            Path(temporary).write_text(_json(data), encoding="utf-8")

    write_replacing(target, save)
    return target


def _json(data: SynthesisedData) -> str:
    """One object of numbers and lists; integers stay whole, so they can index, and a
    sentence is its words, as quivers takes it."""
    return json.dumps({c.key: _json_value(c) for c in data.columns}) + "\n"


def _json_value(column: Column) -> object:
    if column.words:
        return [column.words[i] for i in column.value.reshape(-1).tolist()]
    return column.value.tolist()


# ------------------------------------------------------------------ model programs


def _model_data(checked: CheckedModule, name: str, seed: int, rows: int) -> SynthesisedData:
    program = compile_model(checked, name)
    models = _models(checked, program.model)
    rng = np.random.default_rng(seed)
    columns: list[Column] = []
    for key in program.data_names:
        columns.append(_data_name(key, models, program.sizes, rows, rng))
    x = {c.key: _tensor(c.value) for c in columns}
    drawn = _prior_draw(program, x, seed)
    for key in program.observed_names:
        if key in program.computed_names:  # an observed let: computed from the data names
            continue
        columns.append(_observed(key, program.site(key), drawn, program.sizes, rows, rng))
    return SynthesisedData(name, tuple(columns))


def _models(checked: CheckedModule, top: Model) -> tuple[Model, ...]:
    """The program's model and every model it calls, outermost first: a called program's
    data names are read from the run's data too."""
    out = [top]
    for model in out:
        for site in model.sites:
            callee = checked.models.get(site.callee) if site.callee else None
            if callee is not None and callee not in out:
                out.append(callee)
    return tuple(out)


def _data_name(
    key: str,
    models: tuple[Model, ...],
    sizes: Mapping[str, int],
    rows: int,
    rng: np.random.Generator,
) -> Column:
    """A data name's values: an index, a count or a number in the supports it feeds."""
    variable, model = _variable(key, models)
    deduction = sentences(model).get(key) if model is not None else None
    if deduction is not None:
        ids = _sentence(deduction, rng)
        return Column(key, ids, "data name, a sentence it parses", deduction.words)
    parameter = next((p for m in models for p in m.params if p.name == key), None)
    readers = _readers(model, key) if model is not None else ()
    plate = _indexed(variable, sizes)
    if parameter is not None and variable is None:  # a value parameter: one number
        shape: tuple[int, ...] = ()
        what = f"data name (a {parameter.kind or 'value'} parameter)"
    elif model is not None and key in numbers_read(model):  # a recurrence's start
        shape = ()
        what = "data name (one number)"
    elif model is not None and key in times_read(model):  # a solver's output times
        count = _shape(readers, sizes, rows)[0]  # the rows of the value it solves for
        times = np.arange(1.0, count + 1.0)
        return Column(key, times, "data name, the times 1, 2, ... an ODE is solved at")
    elif _fixed(variable):  # a value a computation takes whole: its declared shape
        assert variable is not None and variable.type is not None
        element = variable.type.element
        if element.discrete or element.kind == "integer":
            kind = element.kind if element.discrete else "nonnegative_integer"
            values = _values(kind, element.event, rng)
            return Column(key, values, f"data name, one whole number, {_words(kind)}")
        return Column(
            key,
            rng.uniform(0.5, 1.5, element.event),
            "data name, the list of Reals a computation takes",
        )
    else:
        shape = _shape(readers, sizes, rows)
        what = "data name"
    if plate is not None:
        values = rng.integers(0, sizes.get(plate, 1), shape)
        return Column(key, values, f"{what}, an index into {plate}")
    if parameter is None:  # an index gathers values: its columns are theirs, not its own
        shape += _columns(model, key, readers, sizes)
    bound = _bound(key, readers)
    constraints = [param.constraint for _, param in bound]
    if parameter is not None and parameter.kind in ("Nat", "Int"):
        constraints.append(Constraint("nonnegative_integer"))
    if variable is not None and variable.type is not None and variable.type.discrete:
        constraints.append(Constraint(variable.type.element.kind))
    if model is not None and _in_positive_domain(model, key):
        constraints.append(Constraint("positive"))
    kind = _strictest(constraints)
    vector = next(((site, p.rank) for site, p in bound if p.rank), None)
    if vector is not None and (shape or parameter is None):  # a vector or matrix per entry
        shape = (*shape, *_event(*vector))
    return Column(key, _values(kind, shape, rng), f"{what}, {_words(kind)}")


def _sentence(deduction: Deduction, rng: np.random.Generator, tries: int = 200) -> np.ndarray:
    """Word ids of a sentence the deduction parses (its goal weight is not the semiring's
    zero): random sentences of 1 to 6 words, the first that parses, else the last tried."""
    words = deduction.words
    zero = OPS[deduction.semiring.name].zero
    ids = np.zeros(1, dtype=np.int64)
    for _ in range(tries):
        ids = rng.integers(0, max(len(words), 1), int(rng.integers(1, 7)))
        if float(goal_weight(deduction, torch.as_tensor(ids))) != zero:
            return ids
    return ids


def _variable(key: str, models: tuple[Model, ...]) -> tuple[DataVariable | None, Model | None]:
    """The checker's data variable of `key` and the model that reads it (the first)."""
    for m in models:
        d = m.data_variable(key)
        if d is not None:
            return d, m
    for m in models:
        if any(p.name == key for p in m.params):
            return None, m
    return None, None


def _readers(model: Model, key: str) -> tuple[Site, ...]:
    """The sample and observe steps that read `key`, directly or through `let`s, the
    observed ones first (their plates are the data's rows)."""
    carried: dict[str, set[str]] = {}
    found: list[Site] = []
    for step in model.steps:
        names: set[str] = set()
        for n in step.reads():
            names.add(n)
            names |= carried.get(n, set())
        if isinstance(step, Site) and step.name in model.observed_lets:
            names |= carried.get(step.name, set())  # it observes what its let computes
        if isinstance(step, Let):
            carried[step.name] = names
        elif key in names and step.kind != "marginalize":
            found.append(step)
    return tuple(sorted(found, key=lambda s: s.kind != "observe"))


#: Functions defined for positive numbers only: a data name a let passes to one
#: (`let log_earn = log(earn)`) gets positive values.
_POSITIVE_DOMAIN = frozenset({"log", "log2", "log10", "sqrt", "rsqrt"})


def _in_positive_domain(model: Model, key: str) -> bool:
    """Whether a let of the model passes `key` itself to a function of positive numbers."""
    for step in model.steps:
        if not isinstance(step, Let):
            continue
        for t in subterms(step.term):
            if isinstance(t, Call) and t.fn in _POSITIVE_DOMAIN and key in _names(t.args):
                return True
    return False


def _names(terms: tuple[Term, ...]) -> set[str]:
    """The names among `terms` read as they are (`earn` of `log(earn)`)."""
    return {t.name for t in terms if isinstance(t, Ref)}


def _plates(site: Site, sizes: Mapping[str, int]) -> tuple[int, ...] | None:
    """The tensor axes of a site's plates, when the checker sizes them all."""
    t = site.type
    if t is None or t.data_plates or any(p.name not in sizes for p in t.plates):
        return None
    return axis_sizes((p.name for p in t.plates), sizes)


def _shape(readers: tuple[Site, ...], sizes: Mapping[str, int], rows: int) -> tuple[int, ...]:
    """The plates of the first reader the checker sizes, else `rows` values."""
    for site in readers:
        plates = _plates(site, sizes)
        if plates is not None:
            return plates
    return (rows,)


def numbers_read(model: Model) -> frozenset[str]:
    """The names a series function reads where it takes one number (`sigma1` in
    `linear_recurrence(sigma1 * sigma1, beta1, drive)`), or a solver reads as one of its
    numbers of data (`ode_rk45`'s t0: 0 before the times `times_read` makes): a data name
    there is one number, not a value per row of the series."""
    return _read_as(model, lambda f: tuple(p for p in f.data if p not in f.times) + f.numbers)


def times_read(model: Model) -> frozenset[str]:
    """The names a solver reads as its output times (`ode_rk45`'s ts): increasing, one per
    row of the value it solves for."""
    return _read_as(model, lambda f: f.times)


def _read_as(model: Model, params: Callable[[Function], tuple[str, ...]]) -> frozenset[str]:
    """The names the model's lets pass to a builtin as one of `params(builtin)`."""
    out: set[str] = set()
    for step in model.steps:
        if not isinstance(step, Let):
            continue
        for t in subterms(step.term):
            f = FUNCTIONS.get(t.fn) if isinstance(t, Call) else None
            if f is None or not isinstance(t, Call) or not params(f):
                continue
            written = [p for p in f.params if p not in f.defines]  # a solver's f: its body
            for param, arg in zip(written, t.args, strict=False):
                if param in params(f):
                    out.update(refs(arg))
    return frozenset(out)


def _columns(
    model: Model | None, key: str, readers: tuple[Site, ...], sizes: Mapping[str, int]
) -> tuple[int, ...]:
    """The axes a data name has beside its rows: a design matrix `X` in `let terms = X *
    beta` (beta over `Coef`) holds a row of `Coef` values per data row, which the checker
    types as `Coef * rows` (its plates, rows left to the data). The first `let` that
    reads `key` as it is, or a let of rows alone computed from it (`let Xc = X -
    X.mean(0)`), and is typed so gives them, less the plates of the rows themselves
    (`z * rate`, z over the observed site's `Resp`, is `Resp * rows`: one axis)."""
    rows = next((s.plates for s in readers if _plates(s, sizes) is not None), ())
    derived = {key}
    for step in model.steps if model is not None else ():
        if not isinstance(step, Let) or not derived & _names(tuple(subterms(step.term))):
            continue
        t = step.type
        if t is None or not t.data_plates:
            continue
        if not t.plates:
            derived.add(step.name)
            continue
        extra = [p.name for p in t.plates if p.name not in rows]
        return axis_sizes(extra, sizes) if all(p in sizes for p in extra) else ()
    return ()


def _fixed(variable: DataVariable | None) -> bool:
    """A data name whose shape its type fixes (`Tensor[Real]([7])` of a computation's
    parameter), not its rows."""
    t = variable.type if variable is not None else None
    if t is None or t.data_plates or t.plates:
        return False
    return bool(t.element.event) or t.element.discrete or t.element.kind == "integer"


def _indexed(variable: DataVariable | None, sizes: Mapping[str, int]) -> str | None:
    """The plate an index data name indexes: the checker's, else the `of` of its type."""
    if variable is None:
        return None
    if variable.indexes is not None:
        return variable.indexes
    t = variable.type
    if t is not None and t.element.kind in ("index", "ordinal") and t.element.of in sizes:
        return t.element.of
    return None


def _bound(key: str, readers: tuple[Site, ...]) -> list[tuple[Site, Param]]:
    """The family parameters `key` is passed to as it is (not gathered), with their site."""
    out: list[tuple[Site, Param]] = []
    for site in readers:
        family = FAMILIES.get(site.family) if site.family else None
        for a in site.args if family is not None else ():
            param = family.param(a.param) if family is not None else None
            if param is not None and a.name == key and not a.index:
                out.append((site, param))
    return out


def _event(site: Site, rank: int) -> tuple[int, ...]:
    """The trailing axes of a vector (or matrix) argument: the size of one draw."""
    event = site.type.element.event if site.type is not None else ()
    n = event[-1] if event and event[-1] > 0 else 1
    return (n,) * rank


#: From the loosest to the strictest: the kind whose values fit every parameter.
_ORDER = (
    "real",
    "real_vector",
    "real_matrix",
    "nonnegative",
    "positive",
    "positive_vector",
    "greater_than",
    "greater_than_eq",
    "unit_interval",
    "interval",
    "simplex",
    "nonnegative_integer",
    "positive_integer",
    "boolean",
    "lower_cholesky",
    "corr_cholesky",
    "positive_definite",
)


def _strictest(constraints: list[Constraint]) -> str:
    kinds = [c.kind for c in constraints if c.kind in _ORDER]
    return max(kinds, key=_ORDER.index, default="real")


def _values(kind: str, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """Values of a support kind at `shape` (a vector or matrix kind's own axes last)."""
    size = shape[-1] if shape else 1
    match kind:
        case "positive" | "nonnegative" | "positive_vector" | "greater_than" | "greater_than_eq":
            return rng.uniform(0.5, 2.0, shape)
        case "unit_interval" | "interval":
            return rng.uniform(0.2, 0.8, shape)
        case "simplex":
            return rng.dirichlet(np.ones(size), shape[:-1]) if shape else np.ones(())
        case "nonnegative_integer" | "positive_integer":
            return rng.integers(COUNTS[0], COUNTS[1] + 1, shape)
        case "boolean":
            return rng.integers(0, 2, shape)
        case "lower_cholesky" | "corr_cholesky" | "positive_definite":
            return np.broadcast_to(np.eye(size), shape).copy()
        case _:
            return rng.normal(0.0, 1.0, shape)


_WORDS = {
    "real": "real numbers",
    "real_vector": "real numbers",
    "real_matrix": "real numbers",
    "positive": "positive numbers",
    "positive_vector": "positive numbers",
    "nonnegative": "positive numbers",
    "greater_than": "numbers above 0",
    "greater_than_eq": "numbers above 0",
    "unit_interval": "numbers in (0, 1)",
    "interval": "numbers in (0, 1)",
    "simplex": "probability vectors",
    "nonnegative_integer": f"counts {COUNTS[0]} .. {COUNTS[1]}",
    "positive_integer": f"counts {COUNTS[0]} .. {COUNTS[1]}",
    "boolean": "0 or 1",
    "lower_cholesky": "identity matrices",
    "corr_cholesky": "identity matrices",
    "positive_definite": "identity matrices",
}


def _words(kind: str) -> str:
    return _WORDS.get(kind, "real numbers")


def _tensor(value: np.ndarray) -> torch.Tensor:
    """As `qvr run` reads it: whole numbers as int64, the others in torch's dtype."""
    t = torch.from_numpy(value.copy())  # a copy keeps a number's shape, ()
    return t.long() if not t.is_floating_point() else t.to(torch.get_default_dtype())


def _prior_draw(
    program: ModelProgram, x: dict[str, torch.Tensor], seed: int
) -> dict[str, torch.Tensor]:
    """The observed sites of a draw from the model under `seed`, else `seed + 1`, ...: the
    first draw that looks like data (`_plausible`), else the first whose observed values
    are finite and have a finite log-density (a `Beta` draw rounded to exactly 1 has
    none), else the last (its non-finite values are then replaced by values in their
    support). A draw the runtime refuses (an argument pushed out of its support in
    floating point) is tried again under the next seed; the last refusal is raised when
    no draw was had. torch's global generator is left as it was."""
    observed: dict[str, torch.Tensor] = {}
    finite: dict[str, torch.Tensor] | None = None
    with torch.random.fork_rng(devices=[]), torch.no_grad():
        for k in range(DRAWS):
            torch.manual_seed(seed + k)
            try:
                values = program.run(x).values
                observed = {n: values[n].detach() for n in program.observed_names if n in values}
                if not _finite(*observed.values()) or not _finite(
                    program.run(x, observed, values).log_joint
                ):
                    continue
            except QvrRuntimeError:
                if k == DRAWS - 1 and finite is None:
                    raise
                continue
            if _plausible(program, observed):
                return observed
            finite = observed if finite is None else finite
    return finite if finite is not None else observed


#: The magnitudes a synthesised observation keeps to: a prior draw past them (a survival
#: time of 1e-48 under `exp` of a wide linear predictor, a return of 1e9 under a
#: heavy-tailed volatility) is a real draw of a wide prior, but no data set a model is
#: tried on looks like it, and a fit to it tests float64 more than the model.
PLAUSIBLE = (1e-6, 1e6)


def _plausible(program: ModelProgram, observed: Mapping[str, torch.Tensor]) -> bool:
    """Every observed value is at most `PLAUSIBLE[1]` in size, and a value of a site with
    positive support at least `PLAUSIBLE[0]`."""
    low, high = PLAUSIBLE
    for name, value in observed.items():
        v = value.double().abs()
        if bool((v > high).any()):
            return False
        if program.site_support(name) == "positive" and bool((v < low).any()):
            return False
    return True


def _finite(*values: torch.Tensor) -> bool:
    return all(bool(torch.isfinite(v.double()).all()) for v in values)


def _observed(
    key: str,
    site: Site,
    drawn: Mapping[str, torch.Tensor],
    sizes: Mapping[str, int],
    rows: int,
    rng: np.random.Generator,
) -> Column:
    """An observed site's values: the model's draw, cast to the checker's type."""
    t = site.type
    kind = t.element.kind if t is not None else "real"
    family = f" ({site.family})" if site.family else ""
    value = drawn.get(key)
    out = value.double().numpy() if value is not None else None
    if out is None or not np.isfinite(out).all():  # no finite draw: values in the support
        shape = out.shape if out is not None else _plates(site, sizes) or (rows,)
        out = _site_values(site, shape, sizes, rng)
    if t is not None and t.discrete:
        return Column(key, np.rint(out).astype(np.int64), f"observed site{family}")
    return Column(key, out.astype(np.float64), f"observed site{family}, {_words(kind)}")


def _site_values(
    site: Site, shape: tuple[int, ...], sizes: Mapping[str, int], rng: np.random.Generator
) -> np.ndarray:
    """Values in a site's support at `shape` (an index below the size of its object)."""
    element = site.type.element if site.type is not None else None
    if element is not None and element.kind in ("index", "ordinal"):
        return rng.integers(0, sizes.get(element.of or "", 2), shape)
    return _values(element.kind if element is not None else "real", shape, rng)


# ------------------------------------------------------------------ seed programs


def reinitialise(program: ProgramModule) -> None:
    """Every parameter drawn as `randn * 0.3` (the seeds' recipe), from torch's generator."""
    with torch.no_grad():
        for p in program.parameters():
            p.copy_(torch.randn_like(p) * 0.3)


def seed_program_data(
    program: ProgramModule, observed: list[str], seed: int, batch: int, seq_len: int
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """The gallery's "Try it" data under `seed`: parameters drawn afresh, an example input,
    random positions for each data name that picks them (`example_data`), and the
    observed sites drawn from the program; the program keeps the drawn parameters."""
    torch.manual_seed(seed)
    reinitialise(program)
    x = program.example_input(batch, seq_len)
    data = program.example_data(batch, seq_len)
    with torch.no_grad():
        values = program.run(x, data).values
    return x, {**{n: values[n].detach() for n in observed if n in values}, **data}


def _seed_data(
    checked: CheckedModule, name: str, seed: int, batch: int, seq_len: int
) -> SynthesisedData:
    """`seed_program_data` as named columns, torch's generator left as it was."""
    info = checked.programs[name]
    observed = [s.name for s in info.sites if s.kind == "observe"]
    with torch.random.fork_rng(devices=[]):
        program = Compiler(checked).export(name)
        assert isinstance(program, ProgramModule), "runnability said: a program"
        x, given = seed_program_data(program, observed, seed, batch, seq_len)
    columns = []
    if "x" not in given or reads_input(info):  # else the key is the data name's
        columns.append(Column("x", x.numpy(), f"the input, {info.type.dom if info.type else '?'}"))
    types = {s.name: s.value_type for s in info.sites}
    for key, v in given.items():
        if key in types:
            out = v.long().numpy() if not v.is_floating_point() else v.double().numpy()
            columns.append(Column(key, out, f"observed site, {types[key]}"))
        elif key in info.values:
            columns.append(Column(key, v.numpy(), f"data, {info.values[key]}, one per example"))
        else:
            columns.append(Column(key, v.numpy(), "data: positions to pick, one row per example"))
    return SynthesisedData(name, tuple(columns))


def reads_input(info: ProgramInfo) -> bool:
    """Whether a step of a seed program reads its input (a site applied to it, or named
    inputs); one that does not takes none from a data file, so its data name may be `x`."""
    return bool(info.params) or any(s.args is None for s in info.sites)
