"""The elementwise builtin functions of program `let` arithmetic (`sigmoid(x)`, `min(a, b)`)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Function:
    name: str
    params: tuple[str, ...]
    doc: str

    @property
    def arity(self) -> int:
        return len(self.params)


def _unary(name: str, what: str) -> Function:
    return Function(name, ("x",), f"Elementwise {what} of a value.")


def _binary(name: str, what: str) -> Function:
    return Function(
        name,
        ("a", "b"),
        f"Elementwise {what} of two values of one dimension (or a value and a number).",
    )


_FUNCTIONS = (
    _unary("sigmoid", "logistic sigmoid 1 / (1 + exp(-x))"),
    _unary("tanh", "hyperbolic tangent"),
    _unary("exp", "exponential"),
    _unary("log", "natural logarithm"),
    _unary("softplus", "softplus log(1 + exp(x))"),
    _unary("relu", "rectifier max(x, 0)"),
    _binary("min", "minimum"),
    _binary("max", "maximum"),
)

FUNCTIONS: dict[str, Function] = {f.name: f for f in _FUNCTIONS}
