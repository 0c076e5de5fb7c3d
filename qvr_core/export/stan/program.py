"""The target tree: a Stan program as data, between the lowering and the printer.

The lowering (`lower.py`) decides everything a Stan program of a plan says, and what it
cannot say, and builds this tree; the printer (`printer.py`) writes it out and decides
nothing but layout. So the tree holds what a reader of the Stan program sees, already
decided: its blocks in Stan's order, declarations with their types as Stan spells them
(sizes, bounds, array sizes, a constrained type), statements, and loops with their
bodies. Expressions are the text the term printer (`terms.py`) gave them, with their
types already checked: nothing here is looked at again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class Bounds:
    """A declaration's `<lower=..., upper=...>`; neither: no bounds at all."""

    lower: str | None = None
    upper: str | None = None


NO_BOUNDS = Bounds()


@dataclass(frozen=True)
class Type:
    """A Stan type as a declaration spells it: `array[arrays] base<bounds>[sizes]`.

    `base` is Stan's type word (`int`, `real`, `vector`, `matrix`, or a constrained one:
    `simplex`, `cholesky_factor_corr`); `sizes` are its own (a vector's length, a
    matrix's rows and columns), `arrays` the sizes of the array holding it.
    """

    base: str
    sizes: tuple[str, ...] = ()
    bounds: Bounds = NO_BOUNDS
    arrays: tuple[str, ...] = ()


@dataclass(frozen=True)
class Declare:
    """`type name = value;  // note`: a variable, with its value where it is given one
    where declared (a transformed parameter, a local), and a note for the reader (which
    plates a data variable runs over)."""

    type: Type
    name: str
    value: str | None = None
    note: str | None = None


@dataclass(frozen=True)
class Assign:
    """`target = value;`, or `target += value;` (`target` itself: the log density)."""

    target: str
    value: str
    op: Literal["=", "+="] = "="


@dataclass(frozen=True)
class Draw:
    """`value ~ family(args) T[low, high];` (`truncation` None: no `T[...]`)."""

    value: str
    family: str
    args: str
    truncation: tuple[str, str] | None = None


@dataclass(frozen=True)
class Comment:
    """`// text`: why the program says what it says where a reader would ask."""

    text: str


@dataclass(frozen=True)
class For:
    """`for (var in low:high) { body }`: its body is a local scope (what it declares
    lives one round of the loop)."""

    var: str
    low: str
    high: str
    body: tuple[Statement, ...]


Statement = Declare | Assign | Draw | Comment | For


@dataclass(frozen=True)
class Program:
    """A Stan program: the comment lines that open the file, then its blocks in Stan's
    order (those it needs: a program without a parameter has no `parameters` block, but
    every program has a `model`)."""

    header: str
    data: tuple[Statement, ...] = ()
    transformed_data: tuple[Statement, ...] = ()
    parameters: tuple[Statement, ...] = ()
    transformed_parameters: tuple[Statement, ...] = ()
    model: tuple[Statement, ...] = ()


__all__ = [
    "NO_BOUNDS",
    "Assign",
    "Bounds",
    "Comment",
    "Declare",
    "Draw",
    "For",
    "Program",
    "Statement",
    "Type",
]
