"""The bijections a `Pushforward(base, B)` (quivers' `Transformed`) pushes a measure through.

quivers' operator algebra names them (`quivers.dsl.program_elaboration.BIJECTOR_TRANSFORMS`):
each maps one number to one number, increasing, so it carries an interval of the base to
an interval of the image, which is how a `Restrict` of a pushforward finds its mass. The
checker reads the sets each maps between to give a pushforward's support; the runtime maps
each name to its torch transform (`runtime/measures.py`).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Bijector:
    """One named bijection: what it does, the support kind of the values it takes, and
    the support kind of its image (`Exp`: the reals onto the positive numbers)."""

    name: str
    doc: str
    domain: str
    image: str


BIJECTORS: dict[str, Bijector] = {
    b.name: b
    for b in (
        Bijector("Identity", "x itself", "real", "real"),
        Bijector("Exp", "exp(x): the reals onto the positive numbers", "real", "positive"),
        Bijector("Log", "log(x): the positive numbers onto the reals", "positive", "real"),
        Bijector("Sigmoid", "1 / (1 + exp(-x)): the reals onto (0, 1)", "real", "unit_interval"),
        Bijector("Logit", "log(x / (1 - x)): (0, 1) onto the reals", "unit_interval", "real"),
        Bijector(
            "Softplus", "log(1 + exp(x)): the reals onto the positive numbers", "real", "positive"
        ),
    )
}
