"""Constraints on values: a family's support and the values each parameter may take.

They are torch-free descriptions. The checker reads them to test literal
arguments (`HalfCauchy(-1.0)`) and to decide which objects a family's values
fit; the runtime maps each one to the `torch.distributions.constraints`
object of the same meaning (`qvr_core.runtime.distributions.torch_constraint`).

A bound is a number or the name of another parameter of the same family
(`Uniform`'s support is the interval from its `low` to its `high`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

Bound = float | str | None

#: kind -> (words for messages, discrete?, rank of one value: 0 scalar, 1 vector, 2 matrix)
_KINDS: dict[str, tuple[str, bool, int]] = {
    "real": ("a real number", False, 0),
    "positive": ("a positive number", False, 0),
    "nonnegative": ("a number >= 0", False, 0),
    "unit_interval": ("a number in [0, 1]", False, 0),
    "interval": ("a number in [low, high]", False, 0),
    "greater_than": ("a number above the bound", False, 0),
    "greater_than_eq": ("a number at or above the bound", False, 0),
    "less_than_eq": ("a number at or below the bound", False, 0),
    "simplex": ("a probability vector: positive, summing to 1", False, 1),
    "real_vector": ("a vector of real numbers", False, 1),
    "positive_vector": ("a vector of positive numbers", False, 1),
    "ordered": ("a strictly increasing vector of real numbers", False, 1),
    "positive_ordered": ("a strictly increasing vector of positive numbers", False, 1),
    "real_matrix": ("a matrix of real numbers", False, 2),
    "stochastic_matrix": ("a square matrix whose rows are probability vectors", False, 2),
    "lower_cholesky": ("a lower-triangular matrix with a positive diagonal", False, 2),
    "corr_cholesky": ("the Cholesky factor of a correlation matrix", False, 2),
    "positive_definite": ("a symmetric positive-definite matrix", False, 2),
    "nonnegative_integer": ("a whole number >= 0", True, 0),
    "positive_integer": ("a whole number >= 1", True, 0),
    "integer_interval": ("a whole number in [low, high]", True, 0),
    "index": ("an index 0 .. K-1 into the probabilities", True, 0),
    "ordinal": ("a category 0 .. K, between K cutpoints", True, 0),
    "boolean": ("0 or 1", True, 0),
    "one_hot": ("a one-hot vector", True, 1),
    # what the measure algebra's parameters take: no value of a site has these kinds
    "measure": ("a distribution, such as Normal(0.0, 1.0)", False, 0),
    "measures": ("a list of distributions, [Normal(0.0, 1.0), PointMass(0.0)]", False, 0),
    "bijector": ("the name of a bijection: Identity, Exp, Log, Sigmoid, Logit, Softplus", False, 0),
    "plate_count": ("a whole number written out: how many of the step's plates", True, 0),
}
#: The kinds of a measure operator's parameters that are no numbers (`MEASURE_KINDS`).
MEASURE_KINDS = frozenset({"measure", "measures", "bijector", "plate_count"})
KINDS = tuple(_KINDS)

#: Which object kinds (`FinSet` is `finset`, `Real` is `real`, ...) contain every value of a
#: support kind: a family fits an object when each value it draws is a value of the object.
_FITS: dict[str, frozenset[str]] = {
    "real": frozenset({"real"}),
    "positive": frozenset({"positive", "real"}),
    "nonnegative": frozenset({"positive", "real"}),  # 0 has probability zero
    "unit_interval": frozenset({"unit", "positive", "real"}),
    "simplex": frozenset({"simplex", "unit", "positive", "real"}),
    "index": frozenset({"finset"}),
    "ordinal": frozenset({"finset"}),
    "boolean": frozenset({"finset"}),
}


#: discrete kinds with finitely many values but no bound named by a parameter
_FINITE_KINDS = frozenset({"boolean", "one_hot"})
#: the constraint of each entry of a vector or matrix kind whose entries are free
_ENTRY_KINDS = {"positive_vector": "positive", "real_vector": "real", "real_matrix": "real"}
#: the kind of object narrower than the reals that the values of a support kind fill
_NARROWER = {
    "positive": "positive",
    "nonnegative": "positive",  # 0 has probability zero
    "positive_vector": "positive",
    "unit_interval": "unit",
    "simplex": "simplex",
}
#: support kinds whose values are any reals, entry by entry
_REAL_KINDS = frozenset({"real", "real_vector", "real_matrix"})

#: The constraints a `sample` step may put on its value (`[constraint=ordered]`: Stan's
#: `ordered[K]` and `positive_ordered[K]`), each with the support kinds of the number
#: families it applies to: those whose support holds every value of it, so the family's
#: density is defined all over the set (a HalfNormal's `nonnegative` holds the positive ones).
STEP_CONSTRAINTS: dict[str, frozenset[str]] = {
    "ordered": frozenset({"real"}),
    "positive_ordered": frozenset({"real", "positive", "nonnegative"}),
}


@dataclass(frozen=True)
class Constraint:
    """The set a value lies in: a kind and, for intervals, its bounds."""

    kind: str
    low: Bound = None
    high: Bound = None

    def __post_init__(self) -> None:
        if self.kind not in _KINDS:
            raise ValueError(f"unknown constraint kind {self.kind!r}")

    @property
    def discrete(self) -> bool:
        return _KINDS[self.kind][1]

    @property
    def rank(self) -> int:
        """0 for numbers, 1 for vectors, 2 for matrices."""
        return _KINDS[self.kind][2]

    @property
    def finite(self) -> bool:
        """Finitely many values: discrete and bounded above (a Categorical's K, a
        Binomial's total_count) or finite by kind (0 or 1, a one-hot vector), so a
        latent with this support can be summed out exactly."""
        return self.discrete and (self.high is not None or self.kind in _FINITE_KINDS)

    @property
    def entry(self) -> Constraint:
        """What each entry of a value must satisfy: a vector or matrix of positive (real)
        numbers has positive (real) entries; other kinds constrain the value whole."""
        kind = _ENTRY_KINDS.get(self.kind)
        return Constraint(kind) if kind is not None else self

    @property
    def narrower_object(self) -> str | None:
        """The kind of object narrower than the reals that every value fills (`positive`,
        `unit`, `simplex`), which inference maps a latent into; None for the reals, a
        discrete kind, or a set no object names (an interval, a Cholesky factor)."""
        return _NARROWER.get(self.kind)

    @property
    def label(self) -> str:
        """The short name a run's summary gives a site's support: the kind of object its
        values fill (`real`, `positive`, `unit`, `simplex`, and `finset` for every
        discrete kind), else the kind itself (`interval`, `lower_cholesky`)."""
        if self.discrete:
            return "finset"
        if self.kind in _REAL_KINDS:
            return "real"
        return self.narrower_object or self.kind

    def describe(self) -> str:
        """Words for messages and hover: `a positive number`, `a number in [low, high]`."""
        words = _KINDS[self.kind][0]
        if self.kind in ("interval", "integer_interval"):
            words = words.replace("[low, high]", f"[{_fmt(self.low)}, {_fmt(self.high)}]")
        elif self.kind in ("greater_than", "greater_than_eq"):
            op = ">" if self.kind == "greater_than" else ">="
            return f"a number {op} {_fmt(self.low)}"
        elif self.kind == "less_than_eq":
            return f"a number <= {_fmt(self.high)}"
        return words

    def fits(self, object_kind: str, size: int | None = None) -> bool:
        """Whether every value in this set is a value of an object of that kind and size.

        `boolean` values are exactly the two values of a `FinSet 2`; intervals with
        numeric bounds fit the tightest object that holds them.
        """
        if self.kind == "boolean":
            return object_kind == "finset" and size in (None, 2)
        if self.kind == "less_than_eq":
            return object_kind == "real"
        if self.kind in ("interval", "greater_than", "greater_than_eq"):
            low = self.low if isinstance(self.low, int | float) else None
            high = self.high if isinstance(self.high, int | float) else None
            if object_kind == "real":
                return True
            if low is None or low < 0:
                return False
            if object_kind == "positive":
                return True
            return object_kind == "unit" and high is not None and high <= 1
        return object_kind in _FITS.get(self.kind, frozenset())

    def admits(self, value: float, bounds: Mapping[str, float] | None = None) -> bool | None:
        """Whether the number `value` satisfies this constraint; None when that is not
        decidable from one number (vectors, matrices, a bound that is not known)."""
        if self.rank > 0:
            return None
        if math.isnan(value):
            return False
        low = _resolve(self.low, bounds)
        high = _resolve(self.high, bounds)
        if (self.low is not None and low is None) or (self.high is not None and high is None):
            return None
        whole = float(value).is_integer()
        match self.kind:
            case "real":
                return math.isfinite(value)
            case "positive":
                return value > 0 and math.isfinite(value)
            case "nonnegative":
                return value >= 0 and math.isfinite(value)
            case "unit_interval":
                return 0 <= value <= 1
            case "interval":
                return low <= value <= high  # type: ignore[operator]  # bounds resolved above
            case "greater_than":
                return value > low  # type: ignore[operator]  # bounds resolved above
            case "greater_than_eq":
                return value >= low  # type: ignore[operator]  # bounds resolved above
            case "less_than_eq":
                return value <= high  # type: ignore[operator]  # bounds resolved above
            case "nonnegative_integer":
                return whole and value >= 0
            case "positive_integer":
                return whole and value >= 1
            case "integer_interval":
                return whole and low <= value <= high  # type: ignore[operator]  # bounds resolved above
            case "boolean":
                return value in (0, 1)
            case _:
                return None  # index, ordinal: their bound is a vector's length


def _resolve(bound: Bound, bounds: Mapping[str, float] | None) -> float | None:
    if bound is None or isinstance(bound, int | float):
        return bound
    return (bounds or {}).get(bound)


def _fmt(bound: Bound) -> str:
    if isinstance(bound, float) and bound.is_integer():
        return str(int(bound))
    return str(bound)


REAL = Constraint("real")
POSITIVE = Constraint("positive")
NONNEGATIVE = Constraint("nonnegative")
UNIT = Constraint("unit_interval")
SIMPLEX = Constraint("simplex")
REAL_VECTOR = Constraint("real_vector")
POSITIVE_VECTOR = Constraint("positive_vector")
REAL_MATRIX = Constraint("real_matrix")
STOCHASTIC_MATRIX = Constraint("stochastic_matrix")
LOWER_CHOLESKY = Constraint("lower_cholesky")
CORR_CHOLESKY = Constraint("corr_cholesky")
POSITIVE_DEFINITE = Constraint("positive_definite")
NONNEGATIVE_INTEGER = Constraint("nonnegative_integer")
BOOLEAN = Constraint("boolean")
