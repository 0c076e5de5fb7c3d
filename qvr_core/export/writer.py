"""What each target's package answers about a plan, from its lowering and its printer.

A target lowers a `Plan` to a tree of its program, or to the located problems of what
it cannot say, and prints the tree. The three questions the export and the check ask
(`export.api.Emitter`) are answered here once for every target, from one lowering each.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from qvr_core.export.plan import Plan, Unsupported

Tree = TypeVar("Tree")


@dataclass(frozen=True)
class Writer(Generic[Tree]):
    """A target's `lower` and `write`, and the language's name for messages."""

    title: str
    lower: Callable[[Plan], Tree | list[Unsupported]]
    write: Callable[[Tree], str]

    def written(self, plan: Plan) -> str | list[Unsupported]:
        """The program of `plan` in the target's language, or what in it the language
        cannot say with qvr's meaning, each where it is written."""
        lowered = self.lower(plan)
        return lowered if isinstance(lowered, list) else self.write(lowered)

    def unsupported(self, plan: Plan) -> list[Unsupported]:
        """What in `plan` the target cannot say (none: it writes the program)."""
        lowered = self.lower(plan)
        return lowered if isinstance(lowered, list) else []

    def emit(self, plan: Plan) -> str:
        """The program of `plan` (asked only when `unsupported(plan)` is empty)."""
        lowered = self.lower(plan)
        if isinstance(lowered, list):
            raise ValueError(f"not exportable to {self.title}: {lowered[0].message}")
        return self.write(lowered)
