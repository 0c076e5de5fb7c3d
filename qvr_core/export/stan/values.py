"""What a Stan expression is besides its text: its type (`Value`), and what a QVR name is
bound to in the Stan program (`Binding`).

Stan is typed where QVR broadcasts, so the term printer (`terms.py`) carries each
expression's `Value` along with its text (`Printed`), and the lowering declares every
variable from the `Value` of what it holds. The helpers here answer what Stan's types
allow: the type of an entrywise operation of two values (`combined`), of a gather
(`gathered`), of a value read at the loop variables in force (`at`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

Kind = Literal["int", "real", "vector", "row_vector", "matrix", "ints", "vectors"]
Ctx = Mapping[str, str]


@dataclass(frozen=True)
class Value:
    """The Stan type of a value: its container and its axes, outermost first.

    The last `event` axes are one draw's own (a simplex's entries, `#3` when no
    plate names them); the others are plates. `vectors` is an array of vectors
    (`array[State] simplex[State]`), `ints` an array of integers (one or two axes).
    """

    kind: Kind
    axes: tuple[str, ...] = ()
    event: int = 0

    @property
    def plates(self) -> tuple[str, ...]:
        return self.axes[: len(self.axes) - self.event]

    @property
    def scalar(self) -> bool:
        return self.kind in ("int", "real")

    def first_dropped(self) -> Value:
        """The value of one entry along its first axis (`x[n]`)."""
        rest = self.axes[1:]
        event = min(self.event, len(rest))
        kind: Kind
        match self.kind:
            case "vector" | "row_vector":
                kind = "real"
            case "matrix":
                kind = "row_vector"
            case "ints":
                kind = "ints" if rest else "int"
            case _:  # "vectors": one vector
                kind = "vector"
        return Value(kind, rest, event)


INT = Value("int")
REAL = Value("real")


@dataclass(frozen=True)
class Binding:
    """What a QVR name is in the Stan program.

    `index` names the 1-based copy of an integer data variable that indexes (qvr reads
    indices from 0, Stan counts from 1; the data file stays as it is). `offset` is set
    for a summed-out coordinate, whose Stan loop variable runs over `offset + value`
    (1 for a Categorical's index, 0 for a Bernoulli's 0 and 1). `block` says where it
    is declared: parameter bounds may only read data and earlier parameters.
    """

    stan: str
    value: Value
    index: str | None = None
    offset: int | None = None
    block: str = "data"


@dataclass(frozen=True)
class Printed:
    """A Stan expression, its type, and how tightly its outermost operator binds."""

    text: str
    value: Value
    prec: int = 10


def real_literal(v: float) -> str:
    """A number as a Stan real literal (`5.0`, `0.25`, `1.0e-06`)."""
    text = repr(float(v))
    mantissa, _, exponent = text.partition("e")
    if "." not in mantissa:
        mantissa += ".0"
    return f"{mantissa}e{exponent}" if exponent else mantissa


def at(p: Printed, ctx: Ctx) -> Printed:
    """`p` read at the loop variables of the plates it leads with (`y` -> `y[n]`)."""
    while p.value.plates and p.value.axes[0] in ctx:
        p = Printed(f"{p.text}[{ctx[p.value.axes[0]]}]", p.value.first_dropped())
    return p


def wrap(p: Printed, prec: int) -> str:
    """`p`'s text, in parentheses where it binds more loosely than `prec` asks."""
    return p.text if p.prec >= prec else f"({p.text})"


def truth(p: Printed) -> Printed:
    """An integer that is 1 where `p` is not 0 (Stan's `&&` and `||` take integers)."""
    return p if p.value.kind == "int" else Printed(f"({p.text} != 0)", INT)


def real_of(v: Value) -> Value:
    return REAL if v.kind == "int" else v


def combined(a: Value, b: Value) -> Value | None:
    """The type of an entrywise operation of `a` and `b`; None where Stan has none of the
    same meaning (two containers of different types or axes, an array of vectors)."""
    if a.kind == "vectors" or b.kind == "vectors":
        return None
    if a.scalar and b.scalar:
        return INT if a.kind == b.kind == "int" else REAL
    if a.scalar:
        return b
    if b.scalar:
        return a
    if a.kind == b.kind and a.axes == b.axes:
        return a if a.event <= b.event else b
    return None


def different(a: Value, b: Value) -> str:
    """Why two values do not combine."""
    if a.kind == "vectors" or b.kind == "vectors":
        return "arithmetic on an array of vectors; Stan has none"
    return (
        f"values over {words(a.axes)} and {words(b.axes)} combined; the export writes "
        "arithmetic of values over the same plates (or a number with one)"
    )


def words(axes: tuple[str, ...]) -> str:
    """Axes as a message names them (`School * #3`, read `School * 3`)."""
    return " * ".join(a.lstrip("#") for a in axes) or "nothing"


def gathered(base: Value, kept: list[tuple[int, tuple[str, ...]]]) -> Value | None:
    """The type of a gather of `base` keeping these axis positions (each becoming the
    axes listed: itself, or an index array's rows)."""
    axes = tuple(a for _, new in kept for a in new)
    event_from = len(base.axes) - base.event
    event = sum(1 for pos, _ in kept if pos >= event_from)
    match base.kind:
        case "ints":
            return Value("ints", axes) if axes else INT
        case "vector" | "row_vector":
            if not axes:
                return REAL
            return Value(base.kind, axes, event)
        case "matrix":
            if not axes:
                return REAL
            if len(kept) == 2:
                return Value("matrix", axes, event)
            return Value("vector" if kept[0][0] == 0 else "row_vector", axes, event)
        case "vectors":
            positions = [pos for pos, _ in kept]
            if positions == [0, 1]:
                return Value("vectors", axes, 1)
            if positions == [1]:
                return Value("vector", axes, 1)
            return None if positions else REAL
        case _:
            return None


__all__ = [
    "INT",
    "REAL",
    "Binding",
    "Ctx",
    "Kind",
    "Printed",
    "Value",
    "at",
    "combined",
    "different",
    "gathered",
    "real_literal",
    "real_of",
    "truth",
    "words",
]
