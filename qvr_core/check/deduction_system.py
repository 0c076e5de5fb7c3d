"""What the checker knows of a `deduction` declaration (check/deductions.py checks it).

Plain records, no spans: hover and the outline read them from the checked module, and
a frame kept by the incremental checker can hold them however the text moves.
"""

from __future__ import annotations

from dataclasses import dataclass

from qvr_core.builtins.semirings import Semiring


@dataclass(frozen=True)
class Rule:
    """One sequent rule: premises `|-` conclusion, as written."""

    name: str
    premises: tuple[str, ...]
    conclusion: str
    learnable: bool
    bounded: bool
    parent: str | None


@dataclass(frozen=True)
class Entry:
    """One lexicon entry: its words, its category (None for any atom, `*`) and its
    logical form, as written."""

    words: tuple[str, ...]
    category: str | None
    logical_form: str
    learnable: bool


@dataclass(frozen=True)
class Deduction:
    """A checked `deduction`: what hover and the outline say of it."""

    name: str
    semiring: Semiring
    start: str | None
    depth: int | None
    atoms: tuple[str, ...]
    binders: tuple[str, ...]
    rules: tuple[Rule, ...]
    lexicon: tuple[Entry, ...]

    def summary(self) -> str:
        """One paragraph: the semiring, the goal and the size of the system."""
        goal = f"goal {self.start}" if self.start else "every item a goal"
        depth = f", categories at most {self.depth} deep" if self.depth is not None else ""
        entries = f", {len(self.lexicon)} lexicon entries" if self.lexicon else ""
        return (
            f"weighted deduction in {self.semiring.name} ({self.semiring.doc}); {goal}"
            f"{depth}; {len(self.atoms)} atoms, {len(self.rules)} rules{entries}"
        )
