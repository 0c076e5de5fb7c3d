"""QVR types: objects, products, sequences, morphism arrows.

Types are frozen values computed once by the checker; hover, inlay hints,
the graph and the runtime all read them from the checked module.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from qvr_core.builtins.objects import BY_KIND, FINSET, OBJECT_CONSTRUCTORS
from qvr_core.syntax import ast

CONSTRUCTORS: dict[str, str] = {c.name: c.kind for c in OBJECT_CONSTRUCTORS.values()}
KIND_TO_CONSTRUCTOR = {kind: ctor for ctor, kind in CONSTRUCTORS.items()}
SPACE_SYMBOL = {c.kind: c.symbol for c in OBJECT_CONSTRUCTORS.values() if c.kind != "finset"}


def inline_object(ref: object) -> bool:
    """`Real 64`, `FinSet 20`, `Real D`, `Real 4 8` written in a signature: an unnamed
    object of a constructor qvr types, sized by numbers or finite objects (a size that
    is no positive number is reported where the side is typed)."""
    if isinstance(ref, ast.SizedObject):
        return ref.constructor.text in CONSTRUCTORS and (
            ref.size is not None or ref.size_span is not None
        )
    return sized_by_arguments(ref)


def sized_by_arguments(ref: object) -> bool:
    """Whether `ref` is a known constructor applied to sizes, numbers or names, and the
    options it reads (`Real D`, `Real 4 8`, `FinSet N`, `Real 1 {low=0.0}`:
    `check/sized_objects.py` types it)."""
    return (
        isinstance(ref, ast.ObjCtor)
        and ref.constructor.text in CONSTRUCTORS
        and bool(ref.args)
        and all(a.kind in ("int", "name") for a in ref.args)
        and all(
            o.key.text in OBJECT_CONSTRUCTORS[ref.constructor.text].options for o in ref.options
        )
    )


@dataclass(frozen=True)
class ObjectType:
    """A declared base object: a finite set or a continuous space of `size` dimensions."""

    name: str
    kind: str  # "finset" | "real" | "positive" | "unit" | "simplex"
    size: int
    #: the elements' names of a finite set given by them (`object Token : {the, dog}`)
    elements: tuple[str, ...] = ()
    #: how a finite set made by a constructor was written (`FreeResiduated(Atoms, ...)`)
    closure: str = ""
    #: a bounded space's bounds (`Real 1 {low=0.0, high=1.0}`): as in quivers' runtime,
    #: read by what bins or places values (`role=discretize`), not a truncation of draws
    low: float | None = None
    high: float | None = None

    @property
    def discrete(self) -> bool:
        return self.kind == "finset"

    @property
    def width(self) -> int:
        """Columns this factor occupies on a tensor's last axis (FinSet: one index)."""
        return 1 if self.discrete else self.size

    @property
    def constructor(self) -> str:
        return KIND_TO_CONSTRUCTOR[self.kind]

    def describe(self) -> str:
        if self.closure:
            return f"{self.closure}: {self.constructor} {self.size}"
        if self.elements:
            return "{" + ", ".join(self.elements) + "}"
        bounds = [f"{k}={v}" for k, v in (("low", self.low), ("high", self.high)) if v is not None]
        written = f" {{{', '.join(bounds)}}}" if bounds else ""
        return f"{self.constructor} {self.size}{written}"

    @property
    def interval(self) -> tuple[float, float] | None:
        """The bounds every coordinate lies within, where both are known: a bounded Real's
        or the unit interval's."""
        if self.kind == "unit":
            return (0.0, 1.0)
        if self.low is not None and self.high is not None:
            return (self.low, self.high)
        return None


@dataclass(frozen=True)
class Product:
    """A value type: its flattened base factors and the names as the user wrote them.

    `A` alone is a one-factor product. `written` keeps aliases (`State`) so
    messages and hover use the user's words; `factors` is what matching and
    the runtime use.
    """

    factors: tuple[ObjectType, ...]
    written: tuple[str, ...]

    @property
    def label(self) -> str:
        return " * ".join(self.written)

    @property
    def width(self) -> int:
        return sum(f.width for f in self.factors)

    @property
    def dim(self) -> int:
        """Total dimension: sum of continuous sizes plus one per FinSet factor."""
        return sum(f.width for f in self.factors)

    @property
    def discrete(self) -> bool:
        return bool(self.factors) and all(f.discrete for f in self.factors)

    @property
    def size(self) -> int:
        """How many values a product of finite sets has (its factors' sizes multiplied)."""
        return math.prod(f.size for f in self.factors)

    @property
    def continuous(self) -> bool:
        return bool(self.factors) and not any(f.discrete for f in self.factors)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.factors)

    def __str__(self) -> str:
        return self.label


def matrix_carrier(axes: Product, size: int) -> Product:
    """The value of a matrix drawn over `axes` (quivers: `Row * Col` with `over=[Row, Col]`):
    one Real factor of its `size` entries, row by row, still written as the axes."""
    return Product((ObjectType(axes.label, "real", size),), axes.written)


def carries(got: Product, want: Product) -> bool:
    """`got` is the matrix `matrix_carrier` makes over `want`'s axes."""
    return (
        len(got.factors) == 1
        and not want.continuous
        and got.written == want.written
        and got.factors[0] == ObjectType(want.label, "real", got.factors[0].size)
    )


@dataclass(frozen=True)
class Seq:
    """A sequence `[A]` of values of one type (a time axis at run time)."""

    elem: Product

    @property
    def label(self) -> str:
        return f"[{self.elem.label}]"

    def __str__(self) -> str:
        return self.label


@dataclass(frozen=True)
class Scalar:
    """A plain number in program arithmetic; broadcasts against any value."""

    @property
    def label(self) -> str:
        return "scalar"

    def __str__(self) -> str:
        return "scalar"


ValueType = Product | Seq | Scalar


@dataclass(frozen=True)
class Arrow:
    """The type of a morphism expression: dom -> cod."""

    dom: ValueType
    cod: ValueType

    @property
    def label(self) -> str:
        return f"{self.dom.label} -> {self.cod.label}"

    def __str__(self) -> str:
        return self.label


@dataclass(frozen=True)
class Group:
    """A `replicate=k` morphism used by its bare name: k copies of `member`."""

    member: Arrow
    count: int

    @property
    def label(self) -> str:
        return f"{self.count} x ({self.member.label})"

    def __str__(self) -> str:
        return self.label


def element(t: ValueType) -> Product | Scalar:
    """The element type of a sequence, or the type itself."""
    return t.elem if isinstance(t, Seq) else t


def dims_text(t: ValueType | ObjectType) -> str:
    """Dimensions the way messages and hover show them.

    `R^64`, `R^(64+64)`, `FinSet 256`, `FinSet 256 x R^64`, `[R^64]`.
    """
    if isinstance(t, ObjectType):
        return _factor_dims((t,))
    if isinstance(t, Seq):
        return f"[{dims_text(t.elem)}]"
    if isinstance(t, Scalar):
        return "scalar"
    return _factor_dims(t.factors)


def _factor_dims(factors: tuple[ObjectType, ...]) -> str:
    parts: list[str] = []
    run: list[ObjectType] = []

    def flush() -> None:
        if not run:
            return
        sym = SPACE_SYMBOL[run[0].kind] if len({f.kind for f in run}) == 1 else "R"
        sizes = [str(f.size) for f in run]
        parts.append(f"{sym}^{sizes[0]}" if len(sizes) == 1 else f"{sym}^({'+'.join(sizes)})")
        run.clear()

    for f in factors:
        if f.discrete:
            flush()
            parts.append(f"FinSet {f.size}")
        else:
            run.append(f)
    flush()
    return " x ".join(parts) if parts else "()"


def sum_text(t: Product) -> str:
    """`64 + 64 = 128` for a product of several continuous factors, `64` for one."""
    sizes = [f.width for f in t.factors]
    if len(sizes) == 1:
        return str(sizes[0])
    return f"{' + '.join(map(str, sizes))} = {sum(sizes)}"


# ------------------------------------------------------------------ model values

#: How hover and messages write one entry of a model value, by support kind.
_ELEMENT_WORDS = {
    "real": "R",
    "positive": "R+",
    "nonnegative": "R>=0",
    "unit_interval": "[0, 1]",
    "interval": "R",
    "greater_than": "R",
    "greater_than_eq": "R",
    "simplex": BY_KIND["simplex"].name,
    "real_vector": "R",
    "positive_vector": "R+",
    "real_matrix": "R",
    "lower_cholesky": "Cholesky",
    "corr_cholesky": "CorrCholesky",
    "positive_definite": "SPD",
    "nonnegative_integer": "N",
    "positive_integer": "N+",
    "integer_interval": "N",
    "index": FINSET,
    "ordinal": FINSET,
    "boolean": f"{FINSET} 2",
    "one_hot": "OneHot",
}


@dataclass(frozen=True)
class Element:
    """One entry of a model value: the set it lies in (a support kind of
    `qvr_core.builtins.constraints`) and the shape of one draw (`()` for a number).

    `of` names the finite object a discrete index ranges over (`Component` for a
    `Categorical` whose probabilities are a Component-simplex), when known.
    An axis of unknown size is -1 (it comes from data at fit time).
    """

    kind: str
    event: tuple[int, ...] = ()
    of: str | None = None

    @property
    def discrete(self) -> bool:
        return self.kind in (
            "nonnegative_integer",
            "positive_integer",
            "integer_interval",
            "index",
            "ordinal",
            "boolean",
            "one_hot",
        )

    @property
    def label(self) -> str:
        word = _ELEMENT_WORDS.get(self.kind, self.kind)
        if self.kind in ("index", "ordinal"):
            return self.of or FINSET
        if not self.event:
            return word
        sizes = "x".join("?" if n < 0 else str(n) for n in self.event)
        if self.kind == "simplex":
            return f"Simplex {sizes}"
        return f"{word}^{sizes}" if len(self.event) == 1 else f"{word}^({sizes})"


REAL_NUMBER = Element("real")


@dataclass(frozen=True)
class Plated:
    """A value of a Bayesian model: one `element` for each index of its plates.

    `sample theta : School <- Normal(mu, tau)` is `School -> R`: a vector over the
    finite set School. Plates are finite objects, outermost first. `data_plates`
    says the value also runs over axes that only the data fixes (a gather along a
    data index, `alpha[group]`): their sizes are known at fit time.
    """

    plates: tuple[ObjectType, ...]
    element: Element = REAL_NUMBER
    data_plates: bool = False

    @property
    def label(self) -> str:
        names = [p.name for p in self.plates]
        if self.data_plates:
            names.append("rows")
        if not names:
            return self.element.label
        return f"{' * '.join(names)} -> {self.element.label}"

    @property
    def shape(self) -> tuple[int, ...]:
        """Plate sizes then the event shape (-1 for an axis the data sizes)."""
        return tuple(p.size for p in self.plates) + self.element.event

    @property
    def discrete(self) -> bool:
        return self.element.discrete

    def __str__(self) -> str:
        return self.label
