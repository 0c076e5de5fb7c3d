"""The QIEC prelude's probabilistic effects: what a `define` computation may perform.

quivers' prelude declares the `Random` and `Score` interfaces (no `effect`
declaration needed): a module writes `instance random : Random` and `instance
score : Score`, and a computation whose row lists them performs
`random.sample[Real](site("noise"), Normal(x, 0.1))`, a draw at the sample site
labelled "noise", and `score.add(weight(w))`, a term `w` added to the log weight.
Called from a program (`let c <- noisy(b)`), the draw is a site of the program
under its label and the weight a term of its joint (quivers' QIEC developer note).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from qvr_core.builtins.objects import BY_KIND


@dataclass(frozen=True)
class Operation:
    """One operation of an interface: its static type arguments and value parameters."""

    name: str
    statics: int  # `sample[Real]`: the type of the value drawn
    params: tuple[str, ...]
    doc: str


@dataclass(frozen=True)
class Effect:
    """A prelude interface, applied by `instance NAME : <name>`."""

    name: str
    operations: tuple[Operation, ...]
    doc: str

    def operation(self, name: str) -> Operation | None:
        return next((op for op in self.operations if op.name == name), None)


RANDOM = Effect(
    "Random",
    (
        Operation(
            "sample",
            1,
            ("site", "distribution"),
            "draw from a distribution at a labelled sample site",
        ),
    ),
    "random choices: each draw is a sample site, named by its label",
)
SCORE = Effect(
    "Score",
    (Operation("add", 0, ("weight",), "add a log weight to the joint density"),),
    "conditioning: weights added to the log joint",
)
EFFECTS: dict[str, Effect] = {e.name: e for e in (RANDOM, SCORE)}

#: The value constructors of the prelude's operations: `site("x")` names a sample site,
#: `weight(w)` makes a real number a log weight.
SITE = "site"
WEIGHT = "weight"
#: The value type of a real number (`x : Real`), the one a draw here has.
REAL_TYPE = BY_KIND["real"].name
#: The QIEC kernel's base value types (quivers 0.25.2, `qiec/types.py`): what a module's
#: own effect operations take and give, and a computation's parameters and result.
#: (QIEC's `Unit`, the type of no value, is not qvr's `Unit` object, the interval [0, 1].)
UNIT_TYPE = "Unit"
VALUE_TYPES = (UNIT_TYPE, "Bool", "Int", REAL_TYPE, "String")

#: A program's options (quivers 0.25.2, `_PROGRAM_OPTION_KEYS`).
PROGRAM_OPTIONS = ("effects", "over")
#: The effects a program body has (`_infer_effects`), and the one of none.
PROGRAM_EFFECTS = ("Sample", "Score", "Marginal", "Pure")
PURE = "Pure"


@dataclass(frozen=True)
class ComputationFunction:
    """A function of a QIEC computation's body (quivers 0.25.2's `qiec` prelude) beside
    the arithmetic ones of `FUNCTIONS` and the lifted `map` and `fold`."""

    name: str
    params: tuple[str, ...]
    doc: str


TRAVERSE = ComputationFunction(
    "traverse",
    ("xs", "f"),
    "The list of f's values over xs, in order, each a computation run in turn (its draws "
    "and weights happen in that order): `let ys <- traverse([0, 1], i -> g(i))`.",
)
LOGSUMEXP_OVER = ComputationFunction(
    "logsumexp_over",
    ("xs", "f"),
    "log of the sum of exp(f(x)) over the entries x of xs, computed stably.",
)
LENGTH = ComputationFunction("length", ("xs",), "The number of entries of a list (an Int).")
TO_REAL = ComputationFunction("real", ("n",), "An Int as a Real: the kernel never converts.")
TO_INT = ComputationFunction("int", ("x",), "A whole Real (a data value) as an Int.")
LOG_PROB = ComputationFunction(
    "log_prob",
    ("distribution", "value"),
    "The log density (or mass) of a distribution at a value: `log_prob(Categorical(p), k)`.",
)
MIXTURE = ComputationFunction(
    "Mixture",
    ("weights", "components"),
    "A finite mixture: component k drawn with probability weights[k] (a Sampleable).",
)
#: The functions a computation's body calls besides the arithmetic ones, by name.
COMPUTATION_FUNCTIONS: dict[str, ComputationFunction] = {
    f.name: f for f in (TRAVERSE, LOGSUMEXP_OVER, LENGTH, TO_REAL, TO_INT, LOG_PROB, MIXTURE)
}

#: What a computation's body computes when the file knows a function's argument, so a
#: branch on `abs(q - c) <= r` of written numbers is decided when checked (the names are
#: those of `FUNCTIONS`; a run computes the same functions in torch).
KNOWN_VALUES: dict[str, Callable[[float], float]] = {
    "abs": abs,
    "exp": math.exp,
    "log": math.log,
    "sqrt": math.sqrt,
    "log1p": math.log1p,
    "expm1": math.expm1,
}
#: The functions whose value is an Int when their arguments are Ints.
WHOLE_VALUED = ("abs", "min", "max")
#: The function names a computation's values are built from: the log, and the stable log
#: of a sum of exponentials.
LOG, LOGSUMEXP = "log", "logsumexp"
#: The families whose log density a computation's `log_prob` writes out as arithmetic.
CATEGORICAL, BERNOULLI, NORMAL = "Categorical", "Bernoulli", "Normal"
