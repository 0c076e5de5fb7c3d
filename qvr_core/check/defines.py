"""What a typed `define` is: its value parameters, effect row, lines and result.

The data the computation pass (`computations.py`) produces and the call steps
(`call_steps.py`) inline; kept apart from the pass so that the passes' shared
interfaces (`passes.py`) can name it without importing a pass.
"""

from __future__ import annotations

from dataclasses import dataclass

from qvr_core.check.terms import Term
from qvr_core.check.types import Plated

#: A number: what a value typed `Real` is.
NUMBER = Plated(())


@dataclass(frozen=True)
class Draw:
    """`let x <- perform random.sample[Real](site("l"), F(args))`: `args` bound to F's
    parameters, each a term over the computation's names. A draw from a `Mixture` has
    its weights as `args` and its components as `parts` (each a draw without a local)."""

    local: str | None
    label: str
    family: str
    args: tuple[tuple[str, Term], ...]
    parts: tuple[Draw, ...] = ()


@dataclass(frozen=True)
class Weigh:
    """`perform score.add(weight(e))`."""

    term: Term


@dataclass(frozen=True)
class Bind:
    """`let x = e`."""

    local: str
    term: Term


@dataclass(frozen=True)
class Invoke:
    """`let x <- g(args)`: another typed computation."""

    local: str
    callee: str
    args: tuple[Term, ...]


Line = Draw | Weigh | Bind | Invoke


@dataclass(frozen=True)
class Computation:
    """A typed `define`: its value parameters, row, body and returned value. `types` are
    the parameters' (`x : Real` a number, `z : State -> Real` a vector over State),
    `result_type` the returned value's: a vector only in a pure function of vectors, which
    a solver calls (`ode_rk45`), never a call step."""

    name: str
    params: tuple[str, ...]
    row: tuple[str, ...]
    lines: tuple[Line, ...]
    result: Term
    types: tuple[Plated, ...] = ()
    result_type: Plated = NUMBER
    #: the module's own effect operations it performs (`ask.get`), in order: a handler
    #: gives their values, which qvr does not run (check/user_effects.py)
    handlers: tuple[str, ...] = ()

    @property
    def numbers_only(self) -> bool:
        """Whether every value it takes and returns is a number and it needs no handler:
        what a call step passes, and the runtime puts in place."""
        return not self.handlers and all(t == NUMBER for t in (*self.types, self.result_type))
