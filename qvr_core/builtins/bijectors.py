"""The bijections a `Pushforward(base, B)` (quivers' `Transformed`) pushes a measure through.

quivers' operator algebra names them (`quivers.dsl.program_elaboration.BIJECTOR_TRANSFORMS`):
each maps one number to one number, increasing, so it carries an interval of the base to
an interval of the image, which is how a `Restrict` of a pushforward finds its mass. The
checker reads the sets each maps between to give a pushforward's support; the runtime maps
each name to its torch transform (`runtime/measures.py`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Bijector:
    """One named bijection: what it does, the support kind of the values it takes, the
    support kind of its image (`Exp`: the reals onto the positive numbers), and the map
    itself on one number, which carries a base's interval to the image's."""

    name: str
    doc: str
    domain: str
    image: str
    forward: Callable[[float], float]


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))


def _softplus(x: float) -> float:
    return x + math.log1p(math.exp(-x)) if x > 0 else math.log1p(math.exp(x))


BIJECTORS: dict[str, Bijector] = {
    b.name: b
    for b in (
        Bijector("Identity", "x itself", "real", "real", lambda x: x),
        Bijector(
            "Exp", "exp(x): the reals onto the positive numbers", "real", "positive", math.exp
        ),
        Bijector(
            "Log", "log(x): the positive numbers onto the reals", "positive", "real", math.log
        ),
        Bijector(
            "Sigmoid", "1 / (1 + exp(-x)): the reals onto (0, 1)", "real", "unit_interval", _sigmoid
        ),
        Bijector(
            "Logit",
            "log(x / (1 - x)): (0, 1) onto the reals",
            "unit_interval",
            "real",
            lambda x: math.log(x / (1.0 - x)),
        ),
        Bijector(
            "Softplus",
            "log(1 + exp(x)): the reals onto the positive numbers",
            "real",
            "positive",
            _softplus,
        ),
    )
}
