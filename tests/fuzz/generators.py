"""Cases for fuzzing `qvr run`: QVR model programs, data files for them, run arguments.

Everything here is deterministic in a `random.Random` (a case is a function of
the fuzzer's seed and its index, `make_case`), and reads the language from the
registry (`qvr_core.builtins`: the families, their parameters, constraints,
supports, draw shapes and example calls; the builtin functions), never from a
list of its own.

Programs come from four sources:

- `template`: a Bayesian program built step by step from the registry:
  plates (`sample theta : School <- Normal(mu, tau)`), family arguments that
  are numbers (heavy tails and edge values among them), bound names, data
  names, lists and gathers (`mu[z]`, `alpha[group]`), `let` and `score`
  expressions over the builtin functions, `marginalize` scopes (mixtures,
  nested chains, `via=` groups), typed sub-programs, odd object sizes (0, 1,
  huge), deep nesting. It records what data the program reads (`DataKey`:
  each data name and observed site with its intended shape and values), so
  its data file can be right or wrong on purpose;
- `mutated`: a template program after random edits of its text (tokens
  deleted or duplicated, numbers swapped for extreme ones, families and
  names swapped, lines dropped, indentation broken, odd characters);
- `corpus`: a real QVR file (`examples/`, the shared corpus) edited the same way;
- `example`: a model of `examples/models` with its own data, the data damaged.

Data files (`DataPlan`, encoded by `encode_data`) are JSON, CSV, .npz or .pt,
with right shapes or on purpose wrong ones: missing and extra keys (control
characters, unicode, markdown links), extra or missing axes, empty arrays,
NaN and infinities, wrong dtypes, values outside the support, ragged and
deeply nested lists, headers that declare huge shapes over small files, and
truncated or corrupted bytes. Files stay small whatever the program declares.
"""

from __future__ import annotations

import copy
import csv
import io
import json
import math
import random
import re
import struct
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from qvr_core.builtins import FAMILIES, FUNCTIONS, Family, Param

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
SHARED_CORPUS = ROOT.parent / "shared" / "corpus"

#: The most numbers a generated data array holds: a program may declare
#: `FinSet 1000000000`, its data file stays small (and so has the wrong shape).
MAX_CELLS = 4096

DATA_FORMATS = ("json", "csv", "npz", "pt")

# ---------------------------------------------------------------- the registry, read once

#: value kind of a bound name, by the support of the family that drew it
_SUPPORT_KIND = {
    "real": "real",
    "interval": "real",
    "greater_than_eq": "real",
    "greater_than": "real",
    "positive": "positive",
    "nonnegative": "positive",
    "unit_interval": "unit",
    "simplex": "simplex",
    "real_vector": "rvec",
    "one_hot": "onehot",
    "corr_cholesky": "chol",
    "positive_definite": "pd",
    "real_matrix": "rmat",
}
#: value kinds of bound names a parameter of this constraint takes
_ACCEPTS: dict[str, frozenset[str]] = {
    "real": frozenset({"real", "positive", "unit"}),
    "positive": frozenset({"positive"}),
    "nonnegative": frozenset({"positive"}),
    "unit_interval": frozenset({"unit"}),
    "simplex": frozenset({"simplex"}),
    "real_vector": frozenset({"rvec", "simplex"}),
    "positive_vector": frozenset({"simplex"}),
    "lower_cholesky": frozenset({"chol"}),
    "positive_definite": frozenset({"pd"}),
    "real_matrix": frozenset({"rmat"}),
    "corr_cholesky": frozenset({"chol"}),
}
#: how to draw valid data for a parameter of this constraint (given as a data name)
_PARAM_VALUES = {
    "real": "real",
    "positive": "positive",
    "nonnegative": "positive",
    "unit_interval": "unit",
    "nonnegative_integer": "count",
    "positive_integer": "count1",
    "simplex": "simplex",
    "real_vector": "sorted",
    "positive_vector": "positive",
}
#: what the function does to its argument's value kind ("same": keeps it)
_FUNCTION_KIND = {
    "sigmoid": "unit",
    "exp": "positive",
    "softplus": "positive",
    "square": "positive",
    "abs": "positive",
    "sqrt": "positive",
    "relu": "positive",
}


def families() -> list[Family]:
    """Every family of the registry whose arguments are numbers, in its order (the
    operators of the measure algebra take distributions: tests/conformance covers them)."""
    return [f for f in FAMILIES.values() if f.measure is None]


def _max_rank(f: Family) -> int:
    return max((p.rank for s in f.schemas for p in s), default=0)


def unary_functions() -> list[str]:
    """The registry's builtin functions of one value that keep its shape."""
    return [f.name for f in FUNCTIONS.values() if f.accepts(1) and f.shape == "elementwise"]


def reductions() -> list[str]:
    return [f.name for f in FUNCTIONS.values() if f.accepts(1) and f.shape == "reduce"]


def binary_functions() -> list[str]:
    return [f.name for f in FUNCTIONS.values() if f.accepts(2) and not f.accepts(1)] + [
        f.name for f in FUNCTIONS.values() if f.accepts(2) and f.accepts(1)
    ]


# ---------------------------------------------------------------- numbers

#: edge values by constraint: in the constraint's range, yet hard on a sampler
_EDGE = {
    "real": (
        "0.0",
        "-0.0",
        "1e-300",
        "1e300",
        "-1e300",
        "1.7976931348623157e308",
        "3.4e38",
        "99999999999999999999",
        "123456789012345678901234567890.0",
        "-1e39",
        "0",
    ),
    "positive": (
        "1e-300",
        "5e-324",
        "1e-45",
        "1e300",
        "1.7976931348623157e308",
        "3.4e38",
        "99999999999999999999",
        "1e-7",
        "65504.0",
        "1",
    ),
    "unit_interval": ("0.0", "1.0", "1e-300", "0.9999999999999999", "5e-324", "0", "1"),
    "nonnegative_integer": ("0", "1", "2147483648", "9223372036854775807", "1000000"),
}
_EDGE["nonnegative"] = ("0.0", *_EDGE["positive"])
_EDGE["positive_integer"] = _EDGE["nonnegative_integer"][1:]
#: any edge value, in range or not (for the mutations)
_EXTREME = tuple(sorted({v for vs in _EDGE.values() for v in vs} | {"-1", "1e999", "0.5"}))


def _fmt(v: float) -> str:
    """A number as QVR writes it (always with a point or an exponent)."""
    if v == int(v) and abs(v) < 1e15:
        return f"{v:.1f}"
    text = repr(v)
    return text if ("." in text or "e" in text) else text + ".0"


def number(rng: random.Random, kind: str, heavy: float = 0.08, sloppy: bool = False) -> str:
    """A literal for a parameter of constraint `kind`: mostly a reasonable value,
    sometimes an edge one in range (with probability `heavy`), or, `sloppy`, out of it."""
    if rng.random() < heavy:
        if sloppy and rng.random() < 0.3:
            return rng.choice(_EXTREME)
        return rng.choice(_EDGE.get(kind, _EDGE["real"]))
    if kind in ("positive", "nonnegative"):
        v = math.exp(rng.gauss(0.0, 1.2 if rng.random() < 0.9 else 6.0))
        return _fmt(round(v, 3) or 0.001)
    if kind == "unit_interval":
        return _fmt(round(rng.uniform(0.02, 0.98), 3))
    if kind in ("nonnegative_integer", "positive_integer"):
        return str(rng.choice((1, 2, 3, 5, 10, 20)))
    scale = rng.choice((1.0, 1.0, 5.0, 100.0, 1e6))
    return _fmt(round(rng.gauss(0.0, scale), 3))


def _size(rng: random.Random) -> int:
    """The size of a generated FinSet: usually small, sometimes 0, 1 or huge."""
    r = rng.random()
    if r < 0.02:
        return 0
    if r < 0.1:
        return 1
    if r < 0.17:
        return rng.choice((257, 1000, 4096, 65_536))
    if r < 0.22:
        return rng.choice((10**6, 10**9, 2**31, 2**40, 2**62, 2**63 - 1, 10**30))
    return rng.randint(2, 12)


# ---------------------------------------------------------------- what a program reads


@dataclass(frozen=True)
class DataKey:
    """One entry a program's data file holds: a data name or an observed site.

    `shape` is the shape the generator meant (plates, then the draw's axes);
    `values` how to draw a valid value (`real`, `positive`, `unit`, `binary`,
    `index` below `high`, `count`, `bounded` (a count up to `high`),
    `interval` [`low`, `high`], `at_least` `low`, `simplex`, `one_hot`,
    `sorted`, `fixed` (the value `fixed`), `corr_cholesky`, `spd`).
    """

    name: str
    shape: tuple[int, ...]
    values: str = "real"
    low: float = 0.0
    high: float = 1.0
    observed: bool = False
    fixed: Any = None


@dataclass(frozen=True)
class Obj:
    name: str
    size: int
    constructor: str = "FinSet"


@dataclass
class _Name:
    """A name bound in the program: its value kind, plate and the shape of one draw."""

    name: str
    kind: str
    plate: Obj | None
    event: tuple[int, ...] = ()


@dataclass(frozen=True)
class _Scope:
    """An enclosing `marginalize`: its coordinate, the object it ranges over, its group."""

    coord: str
    over: Obj
    group: Obj | None


@dataclass(frozen=True)
class Program:
    """A generated program: its text and what its data file should hold."""

    text: str
    keys: tuple[DataKey, ...]
    origin: str  # template | mutated | corpus | example
    well_formed: bool  # built by the templates without on-purpose mistakes
    notes: tuple[str, ...] = ()
    data: dict[str, Any] | None = None  # the example's own data, by key


_OBJECT_NAMES = (
    "School",
    "Row",
    "Item",
    "Group",
    "County",
    "Component",
    "Point",
    "State",
    "Symbol",
    "Day",
    "Region",
    "Subject",
    "Topic",
    "Obs",
    "K",
    "Trial",
)


class _Builder:
    """Builds one model program step by step (`build`)."""

    def __init__(self, rng: random.Random, sloppy: bool) -> None:
        self.rng = rng
        self.sloppy = sloppy  # allow on-purpose mistakes (wrong kinds, plates)
        self.objects: list[Obj] = []
        self.names: list[_Name] = []
        self.keys: dict[str, DataKey] = {}
        self.lines: list[str] = []
        self.subprograms: list[str] = []
        self.calls: list[tuple[str, int]] = []  # (sub-program, arity) callable
        self.counter = 0
        self.notes: list[str] = []
        self.plated = False  # the expression being built reads a plated value

    # ---- names

    def fresh(self, stem: str) -> str:
        self.counter += 1
        return f"{stem}{self.counter}"

    def obj(self) -> Obj:
        return self.rng.choice(self.objects)

    def data(self, key: DataKey) -> str:
        self.keys[key.name] = key
        return key.name

    # ---- the program

    def build(self) -> str:
        rng = self.rng
        names = rng.sample(_OBJECT_NAMES, rng.randint(1, 4))
        self.objects = [Obj(n, _size(rng)) for n in names]
        if rng.random() < 0.06:  # a continuous object among the plates
            self.objects.append(
                Obj("Space", rng.choice((1, 2, 3)), rng.choice(("Real", "Positive", "Unit")))
            )
        plates = [o for o in self.objects if o.constructor == "FinSet"]
        header_obj = rng.choice(plates)
        if rng.random() < 0.15:
            self._subprogram()
        body_indent = "    "
        for _ in range(rng.randint(1, 6)):
            r = rng.random()
            if r < 0.62:
                self.sample_step(body_indent)
            elif r < 0.8:
                self.let_step(body_indent)
            elif r < 0.88:
                self.score_step(body_indent)
            elif self.calls:
                self.call_step(body_indent)
            else:
                self.sample_step(body_indent)
        for _ in range(rng.choice((0, 1, 1, 1, 2, 2, 3))):
            r = rng.random()
            if r < 0.6:
                self.observe_step(body_indent, None)
            elif r < 0.85:
                self.mixture(body_indent)
            else:
                self.chain(body_indent)
        if rng.random() < 0.2:
            self.score_step(body_indent)
        if not self.names:
            self.sample_step(body_indent)
        latents = [n.name for n in self.names]
        ret = rng.choice(latents)
        name = rng.choice(("model", "p", "eight_schools", "fit_me", "m"))
        header = f"program {name} : {header_obj.name} -> {header_obj.name}"
        decls = [f"object {o.name} : {o.constructor} {o.size}" for o in self.objects]
        body = "\n".join(self.lines)
        parts = ["\n".join(decls), *self.subprograms]
        parts.append(f"{header}\n{body}\n    return {ret}")
        parts.append(f"export {name}")
        return "\n\n".join(parts) + "\n"

    def _subprogram(self) -> None:
        rng = self.rng
        name = self.fresh("effects")
        fam = rng.choice([f for f in families() if _scalar_real(f)])
        args = ", ".join(number(rng, p.constraint.kind, 0.0) for p in fam.params)
        if fam.params and fam.params[-1].constraint.kind == "positive":
            args = ", ".join([*args.split(", ")[:-1], "spread"])
        text = (
            f"program {name}(spread : Real, G : FinSet) : G -> G\n"
            f"    sample z : G <- {fam.name}({args})\n"
            f"    let effect = spread * z\n"
            f"    return effect"
        )
        self.subprograms.append(text)
        self.calls.append((name, 2))

    # ---- steps

    def call_step(self, indent: str) -> None:
        rng = self.rng
        sub, _ = rng.choice(self.calls)
        target = self.fresh("v")
        plate = rng.choice([o for o in self.objects if o.constructor == "FinSet"])
        spread = number(rng, "positive")
        self.lines.append(f"{indent}sample {target} <- {sub}({spread}, {plate.name})")
        self.names.append(_Name(target, "real", plate))

    def sample_step(self, indent: str, scope: tuple[_Scope, ...] = ()) -> None:
        rng = self.rng
        fam = self.family(observed=False)
        plate = self.obj() if rng.random() < 0.45 else None
        target = self.fresh(rng.choice(("mu", "tau", "theta", "sigma", "alpha", "w", "beta")))
        call, event, _values = self.call(fam, plate, scope)
        annot = f" : {plate.name}" if plate is not None else ""
        self.lines.append(f"{indent}sample {target}{annot} <- {call}")
        kind = _SUPPORT_KIND.get(fam.support.kind, "int")
        site_plate = plate if plate is not None and plate.constructor == "FinSet" else None
        self.names.append(_Name(target, kind, site_plate, event))

    def observe_step(
        self, indent: str, scope: tuple[_Scope, ...] | None, plate: Obj | None = None
    ) -> None:
        rng = self.rng
        scope = scope or ()
        fam = self.family(observed=True, scalar=bool(scope))
        if plate is None:
            plate = self.obj() if rng.random() < 0.85 else None
        if plate is not None and plate.constructor != "FinSet":
            plate = None
        target = self.fresh(rng.choice(("y", "obs", "k", "r", "o")))
        via = ""
        rows = plate
        if scope and scope[-1].group is not None and plate is not None:
            group = scope[-1].group
            if plate != group or rng.random() < 0.3:
                index = self.data(
                    DataKey(self.fresh("item"), (plate.size,), "index", 0.0, group.size)
                )
                via = f"via={index}"
        call, event, values = self.call(fam, rows, scope, option=via)
        annot = f" : {plate.name}" if plate is not None else ""
        self.lines.append(f"{indent}observe {target}{annot} <- {call}")
        shape = ((plate.size,) if plate is not None else ()) + event
        self.data(replace(values, name=target, shape=shape, observed=True))

    def let_step(self, indent: str, scope: tuple[_Scope, ...] = ()) -> None:
        rng = self.rng
        plate = self.obj() if rng.random() < 0.5 else None
        if plate is not None and plate.constructor != "FinSet":
            plate = None
        r = rng.random()
        self.plated = False
        if r < 0.04:
            text, kind = self.deep_expr(plate)
        else:
            text, kind = self.expr(plate, rng.randint(1, 3))
        target = self.fresh(rng.choice(("eta", "lin", "p", "s", "total")))
        self.lines.append(f"{indent}let {target} = {text}")
        self.names.append(_Name(target, kind, plate if self.plated else None))

    def score_step(self, indent: str) -> None:
        rng = self.rng
        plated = [n for n in self.names if n.kind in ("real", "positive", "unit") and n.plate]
        if plated and rng.random() < 0.6:
            n = rng.choice(plated)
            text = f"{number(rng, 'real', 0.05)} * sum({n.name}) * sum({n.name})"
        else:
            text, _ = self.expr(None, rng.randint(1, 2))
            if rng.random() < 0.5:
                text = f"-0.5 * {text} * {text}" if len(text) < 60 else f"-{text}"
        self.lines.append(f"{indent}score {self.fresh('penalty')} = {text}")

    # ---- expressions

    def atom(self, plate: Obj | None) -> tuple[str, str]:
        """A name, number, data name or gather for an expression over `plate`."""
        rng = self.rng
        fits = [
            n
            for n in self.names
            if n.kind in ("real", "positive", "unit")
            and not n.event
            and (n.plate is None or n.plate == plate or (self.sloppy and rng.random() < 0.05))
        ]
        r = rng.random()
        if fits and r < 0.55:
            n = rng.choice(fits)
            self.plated = self.plated or n.plate is not None
            return n.name, n.kind
        if r < 0.78:
            v = number(rng, "real", 0.06)
            return (v if not v.startswith("-") else f"({v})"), "real"
        if plate is not None:
            others = [
                n
                for n in self.names
                if n.plate is not None and n.plate != plate and n.kind == "real" and not n.event
            ]
            if others and r < 0.9:
                n = rng.choice(others)
                assert n.plate is not None
                index = self.data(
                    DataKey(self.fresh("group"), (plate.size,), "index", 0.0, n.plate.size)
                )
                self.plated = True
                return f"{n.name}[{index}]", n.kind
        shape = (plate.size,) if plate is not None else ()
        self.plated = self.plated or plate is not None
        values = rng.choice(("real", "positive", "unit"))
        return self.data(DataKey(self.fresh("x"), shape, values)), values

    def expr(self, plate: Obj | None, depth: int) -> tuple[str, str]:
        rng = self.rng
        if depth <= 0 or rng.random() < 0.25:
            return self.atom(plate)
        r = rng.random()
        if r < 0.5:
            left, lk = self.expr(plate, depth - 1)
            right, rk = self.expr(plate, depth - 1)
            op = rng.choice(("+", "-", "*", "/", "+", "*"))
            kind = lk if (lk == rk == "positive" and op in "+*") else "real"
            return f"{left} {op} {right}", kind
        if r < 0.8:
            fn = rng.choice(unary_functions())
            inner, _ = self.expr(plate, depth - 1)
            return f"{fn}({inner})", _FUNCTION_KIND.get(fn, "real")
        if r < 0.88:
            fn = rng.choice(binary_functions())
            a, _ = self.expr(plate, depth - 1)
            b, _ = self.expr(plate, depth - 1)
            return f"{fn}({a}, {b})", "real"
        if r < 0.94 and plate is None:
            fn = rng.choice(reductions())
            inner, _ = self.expr(self.obj() if rng.random() < 0.7 else None, depth - 1)
            return f"{fn}({inner})", "real"
        inner, kind = self.expr(plate, depth - 1)
        return f"-({inner})", "real"

    def deep_expr(self, plate: Obj | None) -> tuple[str, str]:
        """An expression near (or past) the parser's limits: 64 levels, 200 terms."""
        rng = self.rng
        atom, kind = self.atom(plate)
        if rng.random() < 0.5:
            depth = rng.choice((30, 62, 63, 64, 65, 200))
            fns = unary_functions()
            text = atom
            for _ in range(depth):
                text = f"{rng.choice(fns)}({text})" if rng.random() < 0.5 else f"({text})"
            self.notes.append(f"let nested {depth} deep")
            return text, "real"
        terms = rng.choice((150, 199, 200, 201, 1000))
        self.notes.append(f"let chain of {terms} terms")
        return " + ".join([atom] * terms), kind

    # ---- family calls

    def family(self, observed: bool, scalar: bool = False) -> Family:
        rng = self.rng
        pool = [f for f in families() if self.sloppy or not f.dirac]
        if observed:  # an improper prior (`Flat`) is a latent's only (QVR104)
            pool = [f for f in pool if self.sloppy or not f.improper]
        if scalar or rng.random() < 0.7:
            pool = [f for f in pool if _max_rank(f) == 0 and not f.event and f.params]
            if not observed:
                # latents are mostly continuous: a discrete one NUTS and SVI cannot fit
                cont = [f for f in pool if not f.discrete]
                pool = cont if rng.random() < 0.9 else pool
        elif rng.random() < 0.6:
            pool = [f for f in pool if _max_rank(f) <= 1]
        return rng.choice(pool)

    def call(
        self,
        fam: Family,
        plate: Obj | None,
        scope: tuple[_Scope, ...],
        *,
        option: str = "",
    ) -> tuple[str, tuple[int, ...], DataKey]:
        """`Family(args) [options]`, the shape of one draw, and how to draw valid data."""
        rng = self.rng
        if fam.improper and not fam.params:  # written bare (`Flat()` parses in no grammar)
            opts = f" [{option}]" if option else ""
            return f"{fam.name}{opts}", (), _support_values(fam, {}, {}, ())
        schema = fam.params
        if len(fam.schemas) > 1 and rng.random() < 0.3:
            schema = rng.choice(fam.schemas)
        options: list[str] = [option] if option else []
        shapes: dict[str, tuple[int, ...]] = {}
        spread_over: Obj | None = None
        example_mode = _max_rank(fam) == 2 or (fam.event and not any(a.sources for a in fam.event))
        if example_mode:
            for p in schema:
                shapes[p.name] = _example_shape(fam, p)
            if fam.event and not any(a.sources for a in fam.event):  # LKJCholesky: over=
                spread_over = self.obj()
        elif any(p.rank == 1 for p in schema):
            if rng.random() < 0.35:
                spread_over = self.obj()
                k = spread_over.size
            else:
                k = rng.choice((1, 2, 2, 3, 3, 4, 5, 8)) if rng.random() > 0.04 else 0
            for p in schema:
                if p.rank == 1:
                    shapes[p.name] = (k,)
        if spread_over is not None:
            axes = max(1, sum(1 for a in fam.event if not a.sources))
            over = ", ".join([spread_over.name] * axes)
            options.append(f"over=[{over}]" if axes > 1 else f"over={over}")
            if rng.random() < 0.2:
                options.append(f"iid_over={self.obj().name}")
        args: list[str] = []
        literal: dict[str, float] = {}
        for p in schema:
            if p.default is not None and rng.random() < 0.2:
                continue
            text, value = self.argument(fam, p, shapes.get(p.name, ()), plate, scope, spread_over)
            if value is not None:
                literal[p.name] = value
            args.append(text)
        _order_bounds(args, schema, literal)
        if rng.random() < 0.25 and len(args) == len(schema):
            args = [f"{p.name}={a}" for p, a in zip(schema, args, strict=True)]
            if rng.random() < 0.5:
                rng.shuffle(args)
        if self.sloppy and rng.random() < 0.1:
            self.notes.append("argument count changed")
            if args and rng.random() < 0.5:
                args.pop()
            else:
                args.append(number(rng, "real"))
        space = spread_over.size if spread_over is not None else None  # every axis of it
        try:
            event = fam.event_shape(shapes, space)
        except ValueError:
            event = ()
        opts = f" [{', '.join(options)}]" if options else ""
        values = _support_values(fam, literal, shapes, event)
        return f"{fam.name}({', '.join(args)}){opts}", event, values

    def argument(
        self,
        fam: Family,
        p: Param,
        shape: tuple[int, ...],
        plate: Obj | None,
        scope: tuple[_Scope, ...],
        spread_over: Obj | None,
    ) -> tuple[str, float | None]:
        """One argument for parameter `p` (and its value when it is a number literal)."""
        rng = self.rng
        kind = p.constraint.kind
        accepts = _ACCEPTS.get(kind, frozenset())
        if self.sloppy and rng.random() < 0.05:
            accepts = frozenset(_SUPPORT_KIND.values()) | {"int"}
        if p.rank == 0:
            choices: list[tuple[float, Callable[[], tuple[str, float | None]]]] = []
            choices.append((4.0, lambda: _literal(rng, kind, self.sloppy)))
            fits = [
                n
                for n in self.names
                if n.kind in accepts and not n.event and (n.plate is None or n.plate == plate)
            ]
            if fits:
                choices.append((3.0, lambda: (rng.choice(fits).name, None)))
            gathers = [
                f"{n.name}[{s.coord}]"
                for s in scope
                for n in self.names
                if n.kind in accepts and n.plate == s.over and not n.event
            ]
            if gathers:
                choices.append((6.0, lambda: (rng.choice(gathers), None)))
            if plate is not None:
                far = [
                    n
                    for n in self.names
                    if n.kind in accepts and n.plate not in (None, plate) and not n.event
                ]
                if far:
                    choices.append((1.5, lambda: self._data_gather(far, plate)))
            shape_here = (plate.size,) if plate is not None else ()
            values = _PARAM_VALUES.get(kind, "real")
            choices.append(
                (1.0, lambda: (self.data(DataKey(self.fresh("d"), shape_here, values)), None))
            )
            return _pick(rng, choices)()
        if p.rank == 1:
            k = shape[0] if shape else 3
            vec: list[tuple[float, Callable[[], tuple[str, float | None]]]] = []
            if spread_over is not None:
                vec.append((5.0, lambda: _literal(rng, _ELEMENT.get(kind, "real"))))
                scalars = [n for n in self.names if n.kind == "positive" and not n.event]
                if scalars and kind == "positive_vector":
                    vec.append((2.0, lambda: (rng.choice(scalars).name, None)))
            else:
                vec.append((3.0, lambda: (_vector(rng, kind, k), None)))
                if k and len(fam.params) == 1 and rng.random() < 0.2:
                    vec.append((1.0, lambda: (_vector(rng, kind, k)[1:-1], None)))  # spread
            fits = [n for n in self.names if n.kind in accepts and n.event == (k,)]
            if fits:
                vec.append((3.0, lambda: (rng.choice(fits).name, None)))
            values = _PARAM_VALUES.get(kind, "real")
            vec.append((1.0, lambda: (self.data(DataKey(self.fresh("v"), (k,), values)), None)))
            return _pick(rng, vec)()
        fits = [n for n in self.names if n.kind in accepts and n.event == shape]
        if fits and rng.random() < 0.3:
            return rng.choice(fits).name, None
        fixed = fam.example.get(p.name)
        if fixed is None:
            fixed = np.eye(shape[-1] if shape else 2).tolist()
        key = DataKey(self.fresh("m"), _shape_of(fixed), "fixed", fixed=fixed)
        return self.data(key), None

    def _data_gather(self, far: list[_Name], plate: Obj) -> tuple[str, float | None]:
        n = self.rng.choice(far)
        assert n.plate is not None
        index = self.data(DataKey(self.fresh("group"), (plate.size,), "index", 0.0, n.plate.size))
        return f"{n.name}[{index}]", None

    # ---- marginalize scopes

    def _weights(self, k: Obj, indent: str) -> str:
        """A name holding a probability vector over `k` (drawn here if there is none)."""
        have = [n for n in self.names if n.kind == "simplex" and n.event == (k.size,)]
        if have and not have[0].plate and self.rng.random() < 0.7:
            return have[0].name
        name = self.fresh("weights")
        conc = number(self.rng, "positive", 0.05)
        self.lines.append(f"{indent}sample {name} <- Dirichlet({conc}) [over={k.name}]")
        self.names.append(_Name(name, "simplex", None, (k.size,)))
        return name

    def _per_class(self, k: Obj, indent: str) -> None:
        """Draw one or two values per element of `k`, to gather by the coordinate."""
        rng = self.rng
        for _ in range(rng.randint(1, 2)):
            fam = rng.choice([f for f in families() if _scalar_real(f)])
            name = self.fresh(rng.choice(("mu", "sigma", "loc")))
            call, _, _ = self.call(fam, k, ())
            self.lines.append(f"{indent}sample {name} : {k.name} <- {call}")
            self.names.append(_Name(name, _SUPPORT_KIND.get(fam.support.kind, "real"), k))

    def mixture(self, indent: str) -> None:
        """`marginalize z : K <- Categorical(w) [over=G]` with observes gathering by z."""
        rng = self.rng
        plates = [o for o in self.objects if o.constructor == "FinSet"]
        k = rng.choice(plates)
        group = rng.choice(plates) if rng.random() < 0.7 else None
        weights = self._weights(k, indent)
        self._per_class(k, indent)
        nested = rng.choice(plates) if rng.random() < 0.15 else None
        w2 = self._weights(nested, indent) if nested is not None else ""
        coord = self.fresh("z")
        opts = []
        if group is not None:
            opts.append(f"over={group.name}")
        if rng.random() < 0.25:
            opts.append(f"reduction={rng.choice(('logsumexp', 'sum', 'mean', 'max'))}")
        options = f" [{', '.join(opts)}]" if opts else ""
        self.lines.append(
            f"{indent}marginalize {coord} : {k.name} <- Categorical({weights}){options}"
        )
        scope = (_Scope(coord, k, group),)
        inner = indent + "    "
        bound = len(self.names)  # names bound in the scope are not seen after it
        for _ in range(rng.randint(1, 2)):
            if rng.random() < 0.15:
                self.sample_step(inner, scope)
            plate = group if group is not None and rng.random() < 0.7 else rng.choice(plates)
            self.observe_step(inner, scope, plate)
        if nested is not None:  # a scope in the scope
            coord2 = self.fresh("z")
            self.lines.append(f"{inner}marginalize {coord2} : {nested.name} <- Categorical({w2})")
            self.observe_step(inner + "    ", (*scope, _Scope(coord2, nested, None)), group)
        del self.names[bound:]

    def chain(self, indent: str) -> None:
        """A hidden Markov chain: nested `marginalize` scopes, one per time step."""
        rng = self.rng
        plates = [o for o in self.objects if o.constructor == "FinSet"]
        state, symbol, seq = rng.choice(plates), rng.choice(plates), rng.choice(plates)
        start, trans, emit = self.fresh("start"), self.fresh("trans"), self.fresh("emit")
        c = number(rng, "positive", 0.05)
        self.lines += [
            f"{indent}sample {start} <- Dirichlet({c}) [over={state.name}]",
            f"{indent}sample {trans} : {state.name} <- Dirichlet({c}) "
            f"[over={state.name}, iid_over={state.name}]",
            f"{indent}sample {emit} : {state.name} <- Dirichlet({c}) "
            f"[over={symbol.name}, iid_over={state.name}]",
        ]
        self.names.append(_Name(start, "simplex", None, (state.size,)))
        steps = rng.choice((1, 2, 3, 4, 4, 6, 9))
        self.notes.append(f"chain of {steps} marginalize scopes")
        pad = indent
        prev = start
        for t in range(steps):
            s = self.fresh("s")
            source = prev if t == 0 else f"{trans}[{prev}]"
            self.lines.append(
                f"{pad}marginalize {s} : {state.name} <- Categorical({source}) [over={seq.name}]"
            )
            pad += "    "
            o = self.fresh("o")
            self.lines.append(f"{pad}observe {o} : {seq.name} <- Categorical({emit}[{s}])")
            self.data(DataKey(o, (seq.size,), "index", 0.0, symbol.size, observed=True))
            prev = s


_ELEMENT = {"positive_vector": "positive", "real_vector": "real", "simplex": "positive"}


def _scalar_real(f: Family) -> bool:
    """A family of one real number a plate of draws can gather (`Normal`, `HalfNormal`)."""
    return (
        _max_rank(f) == 0
        and not f.event
        and bool(f.params)
        and not f.discrete
        and all(p.constraint.kind in ("real", "positive") for p in f.params)
    )


def _pick(
    rng: random.Random, choices: Sequence[tuple[float, Callable[[], tuple[str, float | None]]]]
) -> Callable[[], tuple[str, float | None]]:
    total = sum(w for w, _ in choices)
    r = rng.random() * total
    for w, c in choices:
        r -= w
        if r <= 0:
            return c
    return choices[-1][1]


def _literal(rng: random.Random, kind: str, sloppy: bool = False) -> tuple[str, float | None]:
    text = number(rng, kind, sloppy=sloppy)
    try:
        return text, float(text)
    except ValueError:  # pragma: no cover - every literal is a float
        return text, None


def _vector(rng: random.Random, kind: str, k: int) -> str:
    if kind == "simplex":
        raw = [rng.randint(1, 9) for _ in range(k)]
        vals = [r / sum(raw) for r in raw]
    elif kind == "positive_vector":
        vals = [round(math.exp(rng.gauss(0, 1)), 3) for _ in range(k)]
    else:
        vals = sorted(round(rng.gauss(0, 2), 3) for _ in range(k))
    return "[" + ", ".join(_fmt(v) for v in vals) + "]"


def _example_shape(fam: Family, p: Param) -> tuple[int, ...]:
    value = fam.example.get(p.name)
    if value is None:
        for other in fam.params:  # an alternative parameterisation: the canonical one's shape
            if other.rank == p.rank and other.name in fam.example:
                return _shape_of(fam.example[other.name])
        return ()
    return _shape_of(value)


def _shape_of(value: Any) -> tuple[int, ...]:
    return tuple(np.asarray(value).shape)


def _order_bounds(args: list[str], schema: Sequence[Param], literal: dict[str, float]) -> None:
    """Keep `low < high` when both are numbers (a generated program is meant to be right)."""
    names = [p.name for p in schema]
    if "low" in literal and "high" in literal and "low" in names and "high" in names:
        lo, hi = literal["low"], literal["high"]
        if not lo < hi and math.isfinite(lo):
            new_hi = lo + 1.0 + abs(lo) * 0.5
            if math.isfinite(new_hi) and new_hi > lo:
                i = names.index("high")
                if i < len(args):
                    args[i] = _fmt(new_hi)
                    literal["high"] = new_hi


def _support_values(
    fam: Family,
    literal: dict[str, float],
    shapes: dict[str, tuple[int, ...]],
    event: tuple[int, ...],
) -> DataKey:
    """How to draw data that lies in the family's support (its bounds from literals)."""
    s = fam.support
    kind = s.kind

    def bound(b: object, default: float) -> float:
        if isinstance(b, str):
            return literal.get(b, default)
        return float(b) if isinstance(b, int | float) else default

    if kind in ("index", "ordinal"):
        k = 0
        for shape in shapes.values():
            if shape:
                k = shape[-1]
                break
        k = k or 3
        return DataKey("", (), "index", 0.0, k + 1 if kind == "ordinal" else k)
    if kind == "integer_interval":
        return DataKey("", (), "bounded", 0.0, bound(s.high, 10.0))
    if kind == "interval":
        return DataKey("", (), "interval", bound(s.low, -1.0), bound(s.high, 1.0))
    if kind in ("greater_than_eq", "greater_than"):
        return DataKey("", (), "at_least", bound(s.low, 0.0) + (kind == "greater_than"))
    simple = {
        "real": "real",
        "real_vector": "real",
        "real_matrix": "real",
        "positive": "positive",
        "nonnegative": "positive",
        "unit_interval": "unit",
        "boolean": "binary",
        "nonnegative_integer": "count",
        "simplex": "simplex",
        "one_hot": "one_hot",
        "corr_cholesky": "corr_cholesky",
        "positive_definite": "spd",
    }
    return DataKey("", (), simple.get(kind, "real"))


def generate_program(rng: random.Random, sloppy: bool = False) -> Program:
    """A model program from the templates, with what its data file should hold."""
    b = _Builder(rng, sloppy)
    text = b.build()
    return Program(text, tuple(b.keys.values()), "template", not sloppy, tuple(b.notes))


# ---------------------------------------------------------------- mutations of text

_TOKEN = re.compile(
    r"[A-Za-z_][A-Za-z0-9_]*|\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?"
    r"|<-|->|>>|==|!=|<=|>=|&&|\|\||[^\sA-Za-z0-9_]"
)
_NUMBER = re.compile(r"^(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?$")
_ODD = (
    "\t",
    "\r",
    "\x00",
    "\x0b",
    "\u200b",
    "\ufeff",
    "é",
    "💥",
    "\\",
    "#",
    "[",
    "]",
    "(",
    ")",
    "<-",
    "~",
    ":",
    ",",
    "=",
    "'",
    '"',
    "\u2028",
    "[over=",
    "[via=",
)
_STEP_WORDS = ("sample", "observe", "marginalize", "let", "score", "return", "object", "export")


def mutate(rng: random.Random, text: str, count: int) -> tuple[str, list[str]]:
    """`text` after `count` random edits, and what each was."""
    notes: list[str] = []
    for _ in range(count):
        text, note = _one_mutation(rng, text)
        notes.append(note)
    return text, notes


def _one_mutation(rng: random.Random, text: str) -> tuple[str, str]:
    tokens = list(_TOKEN.finditer(text))
    lines = text.split("\n")
    which = rng.randrange(16)
    if not tokens or which == 0:
        pos = rng.randrange(len(text) + 1)
        odd = rng.choice(_ODD)
        return text[:pos] + odd + text[pos:], f"inserted {odd!r} at {pos}"
    tok = rng.choice(tokens)
    a, b = tok.span()
    if which == 1:
        return text[:a] + text[b:], f"deleted token {tok.group()!r}"
    if which == 2:
        return text[:a] + tok.group() + " " + text[a:], f"duplicated token {tok.group()!r}"
    if which in (3, 4):
        nums = [t for t in tokens if _NUMBER.match(t.group())]
        if nums:
            t = rng.choice(nums)
            new = rng.choice((*_EXTREME, "0", "0.0", str(rng.randint(0, 10**6))))
            return text[: t.start()] + new + text[t.end() :], f"number {t.group()} -> {new}"
    if which == 5:
        fams = [t for t in tokens if t.group() in FAMILIES]
        if fams:
            t = rng.choice(fams)
            new = rng.choice(list(FAMILIES))
            return text[: t.start()] + new + text[t.end() :], f"family {t.group()} -> {new}"
    if which == 6:
        idents = [t for t in tokens if re.match(r"[A-Za-z_]", t.group())]
        if len(idents) > 1:
            t, other = rng.choice(idents), rng.choice(idents)
            new = other.group()
            return text[: t.start()] + new + text[t.end() :], f"name {t.group()} -> {new}"
    if which == 7:
        m = list(re.finditer(r"(FinSet|Real|Positive|Unit|Simplex) (\d+)", text))
        if m:
            t = rng.choice(m)
            new = str(_size(rng) if rng.random() < 0.7 else rng.choice((0, 1, 2**63, 10**40)))
            return (
                text[: t.start(2)] + new + text[t.end(2) :],
                f"{t.group(1)} {t.group(2)} -> {new}",
            )
    if which == 8 and len(lines) > 1:
        i = rng.randrange(len(lines))
        return "\n".join(lines[:i] + lines[i + 1 :]), f"deleted line {i + 1}"
    if which == 9:
        i = rng.randrange(len(lines))
        return "\n".join([*lines[: i + 1], lines[i], *lines[i + 1 :]]), f"duplicated line {i + 1}"
    if which == 10 and len(lines) > 2:
        i = rng.randrange(len(lines) - 1)
        lines[i], lines[i + 1] = lines[i + 1], lines[i]
        return "\n".join(lines), f"swapped lines {i + 1} and {i + 2}"
    if which == 11:
        i = rng.randrange(len(lines))
        pad = rng.choice(("    ", "  ", "\t", " "))
        if lines[i].startswith("    ") and rng.random() < 0.5:
            lines[i] = lines[i][rng.choice((1, 2, 4)) :]
            return "\n".join(lines), f"dedented line {i + 1}"
        lines[i] = pad + lines[i]
        return "\n".join(lines), f"indented line {i + 1} by {pad!r}"
    if which == 12:
        words = [t for t in tokens if t.group() in _STEP_WORDS]
        if words:
            t = rng.choice(words)
            new = rng.choice(_STEP_WORDS)
            return text[: t.start()] + new + text[t.end() :], f"keyword {t.group()} -> {new}"
    if which == 13:
        cut = rng.randrange(len(text) + 1)
        return text[:cut], f"truncated at {cut}"
    if which == 14:
        idents = [t for t in tokens if t.group() in FAMILIES]
        if idents:
            t = rng.choice(idents)
            opt = rng.choice(("over", "iid_over", "via", "reduction", "scale", "ovr"))
            val = rng.choice(("K", "School", "idx", "logsumexp", "1.0", "[School, Row]"))
            end = text.find("\n", t.end())
            end = len(text) if end < 0 else end
            return text[:end] + f" [{opt}={val}]" + text[end:], f"added option [{opt}={val}]"
    if which == 15:
        variant = rng.randrange(3)
        if variant == 0:
            return text.replace("\n", "\r\n"), "CRLF line ends"
        if variant == 1:
            return "\ufeff" + text, "byte-order mark"
        return text.replace("    ", "\t"), "tabs for indentation"
    return text[:a] + text[b:], f"deleted token {tok.group()!r}"


# ---------------------------------------------------------------- real files


def corpus_files() -> list[Path]:
    """Real QVR files: the project's examples and the shared corpus (when present)."""
    files = sorted(EXAMPLES.rglob("*.qvr"))
    if SHARED_CORPUS.is_dir():
        files += sorted(SHARED_CORPUS.rglob("*.qvr"))
    return files


def example_models() -> list[tuple[Path, Path]]:
    """The model examples with their JSON data (`examples/models/NAME.qvr` and its data)."""
    pairs = []
    for qvr in sorted((EXAMPLES / "models").glob("*.qvr")):
        for js in sorted((EXAMPLES / "models").glob("*.json")):
            if qvr.stem.startswith(js.stem):
                pairs.append((qvr, js))
                break
    return pairs


def _guess_keys(text: str) -> tuple[DataKey, ...]:
    """What a real file's data would hold: its observed sites, sized by their plates."""
    sizes = {
        m.group(1): int(m.group(2)) for m in re.finditer(r"object\s+(\w+)\s*:\s*\w+\s+(\d+)", text)
    }
    keys = []
    for m in re.finditer(r"observe\s+(\w+)(?:\s*:\s*(\w+))?", text):
        n = sizes.get(m.group(2) or "", 4)
        keys.append(DataKey(m.group(1), (min(n, MAX_CELLS),), "real", observed=True))
    return tuple(keys)


def corpus_program(rng: random.Random, files: Sequence[Path]) -> Program:
    path = rng.choice(list(files))
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        text = path.read_bytes().decode("utf-8", "replace")
    count = rng.choice((0, 1, 1, 2, 3))
    text, notes = mutate(rng, text, count)
    try:
        name = path.relative_to(ROOT.parent).as_posix()
    except ValueError:
        name = path.name
    return Program(text, _guess_keys(text), "corpus", False, (f"from {name}", *notes))


def example_program(rng: random.Random) -> Program:
    pairs = example_models()
    qvr, js = rng.choice(pairs)
    text = qvr.read_text(encoding="utf-8")
    notes = [f"from examples/models/{qvr.name} with {js.name}"]
    if rng.random() < 0.3:
        text, more = mutate(rng, text, rng.randint(1, 2))
        notes += more
    data = json.loads(js.read_text(encoding="utf-8"))
    keys = tuple(DataKey(k, _shape_of(v), "fixed", fixed=v, observed=True) for k, v in data.items())
    return Program(text, keys, "example", len(notes) == 1, tuple(notes), data)


# ---------------------------------------------------------------- data


@dataclass
class DataPlan:
    """A data file to write: arrays by key (numpy arrays, or any JSON-able value for the
    oddities), its format, the name's suffix and damage to its bytes after encoding."""

    arrays: dict[str, Any]
    fmt: str
    suffix: str
    damage: tuple[str, int] | None = None  # (kind, seed)
    notes: list[str] = field(default_factory=list)
    right: bool = True  # meant to be accepted (right keys, shapes and values)


def valid_value(rng: np.random.Generator, key: DataKey) -> np.ndarray[Any, Any]:
    """A value that lies in `key`'s support with its shape (shrunk when over MAX_CELLS)."""
    return np.asarray(_valid_value(rng, key))


def _valid_value(rng: np.random.Generator, key: DataKey) -> Any:
    if key.values == "fixed":
        fixed = np.asarray(key.fixed)
        return fixed.astype(np.int64) if fixed.dtype.kind in "iub" else fixed.astype(np.float64)
    shape = key.shape
    if math.prod(shape) > MAX_CELLS or any(n > MAX_CELLS for n in shape):
        shape = tuple(min(n, 3) for n in shape)
    v = key.values
    if v == "positive":
        return np.exp(rng.normal(0.0, 1.0, shape))
    if v == "unit":
        return rng.uniform(0.01, 0.99, shape)
    if v == "binary":
        return rng.integers(0, 2, shape)
    if v == "index":
        return rng.integers(0, min(max(int(key.high), 1), 2**62), shape)
    if v == "count":
        return rng.poisson(3.0, shape)
    if v == "count1":
        return rng.poisson(3.0, shape) + 1
    if v == "bounded":
        high = key.high if math.isfinite(key.high) and 0 <= key.high < 2**31 else 10
        return rng.integers(0, int(high) + 1, shape)
    if v == "interval":
        lo, hi = key.low, key.high
        if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
            lo, hi = -1.0, 1.0
        return rng.uniform(lo, hi, shape)
    if v == "at_least":
        lo = key.low if math.isfinite(key.low) else 0.0
        return lo + np.exp(rng.normal(0.0, 1.0, shape))
    if v == "simplex":
        if not shape or shape[-1] == 0:
            return np.ones(shape)
        return rng.dirichlet(np.ones(shape[-1]), shape[:-1])
    if v == "one_hot":
        if not shape or shape[-1] == 0:
            return np.zeros(shape, dtype=np.int64)
        return np.eye(shape[-1], dtype=np.int64)[rng.integers(0, shape[-1], shape[:-1])]
    if v == "sorted":
        return np.sort(rng.normal(0.0, 2.0, shape), axis=-1) if shape else rng.normal()
    if v in ("corr_cholesky", "spd"):
        if len(shape) < 2:
            return np.eye(2)
        eye = np.broadcast_to(np.eye(shape[-1]), shape).copy()
        return eye * (1.0 if v == "corr_cholesky" else rng.uniform(1.0, 2.0))
    return rng.normal(0.0, 3.0, shape)


_ODD_KEYS = (
    "",
    " ",
    "y ",
    "x\x00y",
    "\x1b[31mred",
    "line\nbreak",
    "tab\there",
    "[click](http://example.com)",
    "![img](x.png)",
    "<script>",
    "ünïcødé",
    "名前",
    "💥",
    "\u202eevil",
    "a" * 300,
    "__proto__",
    "x",
    "0",
    "y[0]",
    "..",
    "a/b",
    "data.npy",
)


def _damage_arrays(
    rng: random.Random, npr: np.random.Generator, plan: DataPlan, keys: Sequence[DataKey]
) -> None:
    """One on-purpose mistake in the arrays (in place)."""
    arrays = plan.arrays
    names = list(arrays)
    which = rng.randrange(12)
    plan.right = False
    if not names or which == 0:
        k = rng.choice(_ODD_KEYS)
        arrays[k] = npr.normal(size=rng.choice(((), (3,), (2, 2))))
        plan.notes.append(f"extra key {k!r}")
        return
    name = rng.choice(names)
    a = arrays[name]
    arr = np.asarray(a) if isinstance(a, np.ndarray) else None
    if which == 1:
        del arrays[name]
        plan.notes.append(f"missing key {name!r}")
    elif which == 2:
        k = rng.choice(_ODD_KEYS)
        arrays[k] = arrays.pop(name)
        plan.notes.append(f"key {name!r} renamed {k!r}")
    elif which == 3 and arr is not None:
        variant = rng.randrange(7)
        if variant == 0:
            new = arr[None]
        elif variant == 1:
            new = arr[..., None]
        elif variant == 2 and arr.ndim:
            new = arr.reshape(-1)[:-1] if arr.size else arr.reshape(-1)
        elif variant == 3:
            new = np.concatenate([arr.reshape(-1), arr.reshape(-1)[:1]]) if arr.size else arr
        elif variant == 4:
            new = arr.reshape(-1)[:0]
        elif variant == 5:
            new = arr.T if arr.ndim > 1 else np.zeros((0, 3))
        else:
            new = np.asarray(arr.reshape(-1)[0] if arr.size else 0.0)
        arrays[name] = new
        plan.notes.append(f"{name!r} shape {arr.shape} -> {new.shape}")
    elif which == 4 and arr is not None and arr.size:
        bad = rng.choice((np.nan, np.inf, -np.inf))
        new = np.real(arr).astype(np.float64).copy()
        new.reshape(-1)[rng.randrange(new.size)] = bad
        arrays[name] = new
        plan.notes.append(f"{name!r} holds {bad}")
    elif which == 5 and arr is not None:
        dtype = rng.choice(
            ("float16", "float32", "int8", "uint8", "uint16", "uint64", "bool", "complex64")
        )
        with np.errstate(all="ignore"):
            if dtype == "complex64":
                arrays[name] = arr.astype(np.complex64) + 1j
            else:
                arrays[name] = arr.astype(dtype)
        plan.notes.append(f"{name!r} as {dtype}")
    elif which == 6 and arr is not None and arr.size:
        new = np.real(arr).astype(np.float64).copy()
        bad = rng.choice((-1.0, -1e-300, 2.0, 1.5, 1e300, 1e-320, 2.0**62, -(2.0**63), 7.0, 0.5))
        new.reshape(-1)[rng.randrange(new.size)] = bad
        if arr.dtype.kind in "iub" and float(bad).is_integer() and abs(bad) < 2**62:
            new = new.astype(np.int64)
        arrays[name] = new
        plan.notes.append(f"{name!r} holds {bad} (outside its support?)")
    elif which == 7:
        odd: Any = rng.choice(
            (
                "text",
                None,
                True,
                {"nested": [1, 2]},
                [1, [2, 3]],
                [[1, 2], [3]],
                [],
                [[]],
                [[[[[]]]]],
                10**400,
                -(10**30),
                [1e308, 1e308],
                [True, False],
                "1.0",
                Deep(rng.choice((100, 1000, 100_000))),
            )
        )
        arrays[name] = odd
        plan.notes.append(f"{name!r} = {_short(odd)}")
    elif which == 8 and arr is not None and arr.size:
        arrays[name] = arr.tolist() if rng.random() < 0.5 else arr.astype(np.float64).tolist()
        plan.notes.append(f"{name!r} as a plain list")
    elif which == 9 and arr is not None:
        big = np.broadcast_to(arr.reshape(-1)[:1] if arr.size else np.zeros(1), (MAX_CELLS, 1))
        arrays[name] = np.ascontiguousarray(big)
        plan.notes.append(f"{name!r} is {MAX_CELLS} rows")
    elif which == 10:
        for k in names:
            arrays[k] = arrays[k].reshape(-1)[:0] if isinstance(arrays[k], np.ndarray) else []
        plan.notes.append("every array empty")
    else:
        arrays.clear()
        plan.notes.append("no arrays at all")


def _fits_csv(arrays: dict[str, Any]) -> bool:
    """Whether the arrays make one table: every one with the same number of rows."""
    rows = {np.asarray(a).shape[0] if np.asarray(a).ndim else -1 for a in arrays.values()}
    return len(rows) <= 1 and -1 not in rows


@dataclass(frozen=True)
class Deep:
    """A number inside `depth` nested lists (written out as text: too deep for `json`)."""

    depth: int

    def json(self) -> str:
        return "[" * self.depth + "1.0" + "]" * self.depth

    def __repr__(self) -> str:
        return f"Deep({self.depth})"


def _short(v: Any) -> str:
    text = repr(v)
    return text if len(text) < 60 else text[:57] + "..."


def make_data(rng: random.Random, program: Program, right: float = 0.45) -> DataPlan:
    """A data file for `program`: with probability `right` exactly what it reads."""
    npr = np.random.default_rng(rng.getrandbits(63))
    fmt = rng.choice(DATA_FORMATS)
    if program.data is not None:
        arrays: dict[str, Any] = {k: np.asarray(v) for k, v in program.data.items()}
    else:
        arrays = {k.name: valid_value(npr, k) for k in program.keys}
    misfit = fmt == "csv" and not _fits_csv(arrays)
    if misfit and rng.random() < 0.8:
        fmt, misfit = rng.choice(("json", "npz", "pt")), False  # one table cannot hold them
    plan = DataPlan(arrays, fmt, "." + fmt)
    if misfit:
        plan.right = False
        plan.notes.append("CSV of arrays with different numbers of rows")
    if fmt == "json" and any(a.size == 0 and a.ndim > 1 for a in map(np.asarray, arrays.values())):
        plan.right = False  # `[]` has one axis: JSON cannot say (0, 3)
        plan.notes.append("JSON of an empty array with several axes")
    if rng.random() >= right:
        for _ in range(rng.choice((1, 1, 1, 2, 3))):
            _damage_arrays(rng, npr, plan, program.keys)
    r = rng.random()
    if r < 0.1:
        plan.damage = (rng.choice(_BYTE_DAMAGE), rng.getrandbits(32))
        plan.right = False
        plan.notes.append(f"bytes: {plan.damage[0]}")
    elif r < 0.13:
        plan.suffix = rng.choice((".JSON", ".txt", ".npy", "", ".pt.json", ".csv"))
        plan.right = plan.right and plan.suffix == "." + fmt
        plan.notes.append(f"named *{plan.suffix or '(no suffix)'}")
    return plan


# ---- encoding


_BYTE_DAMAGE = (
    "truncate",
    "flip",
    "append",
    "empty",
    "bom",
    "invalid-utf8",
    "huge-shape",
    "other-format",
    "zero-fill",
)


def encode_data(plan: DataPlan) -> bytes:
    """The bytes of the data file `plan` describes."""
    writer = {"json": _json, "csv": _csv, "npz": _npz, "pt": _pt}[plan.fmt]
    data = writer(plan.arrays)
    if plan.damage is not None:
        kind, seed = plan.damage
        data = _damage_bytes(random.Random(seed), data, kind, plan)
    return data


def _plain(v: Any) -> Any:
    if isinstance(v, np.ndarray):
        if v.dtype.kind == "c":
            return [str(x) for x in v.reshape(-1)]
        return v.tolist()
    if isinstance(v, np.generic):
        return v.item()
    return v


def _json(arrays: dict[str, Any]) -> bytes:
    parts = []
    for k, v in arrays.items():
        if isinstance(v, Deep):
            text = v.json()
        else:
            try:
                text = json.dumps(_plain(v), allow_nan=True)
            except (ValueError, TypeError, RecursionError):
                text = json.dumps(repr(v))
        parts.append(f"{json.dumps(k)}: {text}")
    return ("{" + ", ".join(parts) + "}").encode("utf-8", "surrogatepass")


def _csv(arrays: dict[str, Any]) -> bytes:
    columns: list[tuple[str, list[str]]] = []
    for key, v in arrays.items():
        try:
            a = np.asarray(v)
        except (ValueError, TypeError, OverflowError, RecursionError):
            columns.append((key, [str(v)[:50]]))
            continue
        if a.dtype == object or a.ndim > 3:
            columns.append((key, [str(x)[:50] for x in a.reshape(-1)[:8]]))
        elif a.ndim == 0:
            columns.append((key, [_cell(a.item())]))
        elif a.ndim == 1:
            columns.append((key, [_cell(x) for x in a.tolist()]))
        else:
            flat = a.reshape(a.shape[0], math.prod(a.shape[1:]))
            for j, index in enumerate(np.ndindex(*a.shape[1:])):
                name = f"{key}[{','.join(str(i) for i in index)}]"
                columns.append((name, [_cell(x) for x in flat[:, j].tolist()]))
    rows = max((len(c) for _, c in columns), default=0)
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow([name for name, _ in columns])
    for r in range(rows):
        w.writerow([c[r] if r < len(c) else "" for _, c in columns])
    return out.getvalue().encode("utf-8")


def _cell(x: Any) -> str:
    return repr(x) if isinstance(x, float) else str(x)


def _npz(arrays: dict[str, Any]) -> bytes:
    out = io.BytesIO()
    safe: dict[str, Any] = {}
    for k, v in arrays.items():
        try:
            safe[k] = np.asarray(v)
        except (ValueError, TypeError, OverflowError, RecursionError):
            safe[k] = np.array([repr(v)[:50]], dtype=object)
    try:
        np.savez(out, **safe)
    except (ValueError, TypeError, OSError):  # an odd key numpy will not write
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w") as z:
            for i, (k, v) in enumerate(safe.items()):
                buf = io.BytesIO()
                np.save(buf, v, allow_pickle=True)
                z.writestr(f"{re.sub(r'[^A-Za-z0-9_]', '_', k) or 'k'}{i}.npy", buf.getvalue())
    return out.getvalue()


def _pt(arrays: dict[str, Any]) -> bytes:
    import torch

    obj: dict[str, Any] = {}
    for k, v in arrays.items():
        if isinstance(v, np.generic):
            v = np.asarray(v)
        if isinstance(v, np.ndarray) and v.dtype.kind in "biufc":
            obj[k] = torch.from_numpy(np.array(v, order="C"))  # 0-d stays 0-d
        else:
            obj[k] = v
    out = io.BytesIO()
    try:
        torch.save(obj, out)
    except (TypeError, ValueError, RuntimeError, RecursionError):
        out = io.BytesIO()
        torch.save({k: repr(v)[:50] for k, v in obj.items()}, out)
    return out.getvalue()


def _damage_bytes(rng: random.Random, data: bytes, kind: str, plan: DataPlan) -> bytes:
    if kind == "truncate":
        return data[: rng.randrange(len(data) + 1)]
    if kind == "flip" and data:
        b = bytearray(data)
        for _ in range(rng.randint(1, 8)):
            b[rng.randrange(len(b))] = rng.randrange(256)
        return bytes(b)
    if kind == "append":
        return data + bytes(rng.randrange(256) for _ in range(rng.randint(1, 64)))
    if kind == "empty":
        return b""
    if kind == "bom":
        return b"\xef\xbb\xbf" + data
    if kind == "invalid-utf8":
        pos = rng.randrange(len(data) + 1)
        return data[:pos] + b"\xff\xfe\xc3" + data[pos:]
    if kind == "zero-fill":
        return bytes(len(data))
    if kind == "other-format":
        other = rng.choice([f for f in DATA_FORMATS if f != plan.fmt])
        return {"json": _json, "csv": _csv, "npz": _npz, "pt": _pt}[other](plan.arrays)
    if kind == "huge-shape":
        return _huge_shape(rng, data, plan)
    return data


def _huge_shape(rng: random.Random, data: bytes, plan: DataPlan) -> bytes:
    """A header that declares far more numbers than the file holds."""
    key = next(iter(plan.arrays), "y")
    huge = rng.choice((2**31, 10**12, 2**62, 2**63 - 1))
    if plan.fmt == "npz":
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w") as z:
            header = io.BytesIO()
            shape = rng.choice(((huge,), (huge, huge), (3, huge), (0, huge)))
            np.lib.format.write_array_header_1_0(
                header, {"descr": "<f8", "fortran_order": False, "shape": shape}
            )
            z.writestr(f"{key}.npy", header.getvalue() + bytes(64))
        return out.getvalue()
    if plan.fmt == "pt":
        import torch

        src = io.BytesIO()
        torch.save({key: torch.arange(7.0)}, src)
        old = zipfile.ZipFile(io.BytesIO(src.getvalue()))
        out = io.BytesIO()
        size = huge if huge < 2**63 else 2**63 - 1
        with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as z:
            for info in old.infolist():
                body = old.read(info.filename)
                if info.filename.endswith("data.pkl"):
                    long = b"\x8a\x08" + struct.pack("<q", size)
                    if rng.random() < 0.5:
                        body = body.replace(b"K\x07\x85", long + b"\x85", 1)  # the size
                    else:
                        body = body.replace(b"K\x07t", long + b"t", 1)  # the storage
                z.writestr(info.filename, body)
        return out.getvalue()
    if plan.fmt == "csv":
        return f"{key}[{huge}]\n1.0\n".encode()
    return _json({key: Deep(2000)})


# ---------------------------------------------------------------- whole cases


@dataclass(frozen=True)
class Case:
    """One run of `qvr run`: the program file, its data file and the arguments after them."""

    index: int
    seed: int
    origin: str
    program: str
    data: DataPlan | None
    args: tuple[str, ...]
    well_formed: bool
    notes: tuple[str, ...]

    @property
    def data_file(self) -> str | None:
        return None if self.data is None else "data" + self.data.suffix

    def with_program(self, text: str) -> Case:
        return replace(self, program=text)

    def with_data(self, plan: DataPlan | None) -> Case:
        return replace(self, data=plan)


def run_arguments(rng: random.Random) -> tuple[str, ...]:
    """`--method ...`: few steps, a small memory budget, now and then odd values."""
    method = rng.choices(("prior", "svi", "nuts"), (0.38, 0.34, 0.28))[0]
    args = ["--method", method, "--seed", str(rng.randrange(2**16))]
    if method == "prior":
        args += ["--steps", str(rng.choice((1, 3, 5)))]
    elif method == "svi":
        args += ["--steps", str(rng.choice((1, 2, 3)))]
        if rng.random() < 0.4:
            args += ["--guide", rng.choice(("normal", "delta", "mvn", "lowrank-mvn"))]
        if rng.random() < 0.1:
            args += ["--lr", rng.choice(("1e-30", "1e30", "10", "0.5"))]
    else:
        args += ["--steps", str(rng.choice((2, 4, 6)))]
        args += ["--chains", "2" if rng.random() < 0.04 else "1"]
        args += ["--max-tree-depth", str(rng.choice((1, 2, 3, 4)))]
    args += ["--memory-budget", rng.choice(("512MB", "512MB", "64MB", "1GB"))]
    if rng.random() < 0.2:
        args.append("--json")
    if rng.random() < 0.08:
        args += ["--output", rng.choice(("draws.npz", "draws.nc"))]
        if rng.random() < 0.5:
            args.append("--predictive")
    return tuple(args)


_CORPUS: list[Path] | None = None


def make_case(seed: int, index: int) -> Case:
    """Case `index` of the fuzzer seeded `seed`: the same case every time."""
    global _CORPUS
    rng = random.Random(f"qvr-fuzz:{seed}:{index}")
    r = rng.random()
    if r < 0.5:
        program = generate_program(rng)
    elif r < 0.7:
        base = generate_program(rng, sloppy=rng.random() < 0.5)
        text, notes = mutate(rng, base.text, rng.randint(1, 3))
        program = replace(
            base, text=text, origin="mutated", well_formed=False, notes=(*base.notes, *notes)
        )
    elif r < 0.85:
        if _CORPUS is None:
            _CORPUS = corpus_files()
        program = corpus_program(rng, _CORPUS)
    else:
        program = example_program(rng)
    data = None if rng.random() < 0.12 else make_data(rng, program)
    args = run_arguments(rng)
    notes = list(program.notes)
    if data is not None:
        notes += data.notes
    else:
        notes.append("no data file")
    return Case(
        index,
        seed,
        program.origin,
        program.text,
        data,
        args,
        program.well_formed,
        tuple(notes),
    )


def copy_plan(plan: DataPlan) -> DataPlan:
    return copy.deepcopy(plan)
