"""What a typed `define` is: its value parameters, effect row, lines and result.

The data the computation pass (`computations.py`) produces and the call steps
(`call_steps.py`) inline; kept apart from the pass so that the passes' shared
interfaces (`passes.py`) can name it without importing a pass.
"""

from __future__ import annotations

from dataclasses import dataclass

from qvr_core.check.terms import Term


@dataclass(frozen=True)
class Draw:
    """`let x <- perform random.sample[Real](site("l"), F(args))`: `args` bound to F's
    parameters, each a term over the computation's names."""

    local: str | None
    label: str
    family: str
    args: tuple[tuple[str, Term], ...]


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
    """A typed `define`: its value parameters, row, body and returned value."""

    name: str
    params: tuple[str, ...]
    row: tuple[str, ...]
    lines: tuple[Line, ...]
    result: Term
