"""The combinators of `let` expressions (`fan`, `scan`, `stack`, `repeat`, `identity`)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CombinatorParam:
    name: str
    doc: str
    kind: str = "morphism"  # what is written there: a "morphism" expression, an "object", a "count"


@dataclass(frozen=True)
class Combinator:
    """A combinator: its parameters in order, keyword arguments with their literal values,
    whether it takes any number of branches, its type as a signature tail, and its doc."""

    name: str
    params: tuple[CombinatorParam, ...]
    result: str  # the signature's tail: ` : [A] -> H`
    doc: str
    keywords: tuple[tuple[str, tuple[str, ...], str], ...] = ()  # (name, values, default)
    variadic: bool = False  # `fan(f1, ..., fn)`

    def param_at(self, index: int) -> CombinatorParam | None:
        """The parameter of the index-th positional argument (None past the last)."""
        if self.variadic:
            return self.params[min(index, len(self.params) - 1)]
        return self.params[index] if index < len(self.params) else None


_COMBINATORS = (
    Combinator(
        "fan",
        (CombinatorParam("f", "a branch, D -> C"),),
        " : D -> C1 * ... * Cn",
        "Runs every branch on the same input and pairs the results: D -> C1 * ... * Cn. "
        "`fan(head)` with a `replicate=k` morphism runs its k copies.",
        variadic=True,
    ),
    Combinator(
        "scan",
        (CombinatorParam("c", "the cell, A * H -> H"),),
        " : [A] -> H",
        "Folds the cell `c : A * H -> H` over a sequence: [A] -> H. "
        "`reverse=true` reads the sequence right to left.",
        keywords=(("reverse", ("true", "false"), "false"),),
    ),
    Combinator(
        "stack",
        (
            CombinatorParam("b", "the body, A -> A"),
            CombinatorParam("n", "how many copies", "count"),
        ),
        " : A -> A",
        "n copies of `b : A -> A` in a row, each with its own parameters.",
    ),
    Combinator(
        "repeat",
        (
            CombinatorParam("b", "the body, A -> A"),
            CombinatorParam("n", "how many copies", "count"),
        ),
        " : A -> A",
        "`b : A -> A` applied n times, parameters shared.",
    ),
    Combinator(
        "identity",
        (CombinatorParam("T", "an object", "object"),),
        " : T -> T",
        "The identity morphism T -> T of an object T.",
    ),
)

COMBINATORS: dict[str, Combinator] = {c.name: c for c in _COMBINATORS}
