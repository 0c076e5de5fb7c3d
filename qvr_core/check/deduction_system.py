"""What the checker knows of a `deduction` declaration (check/deductions.py checks it).

Plain records, no spans: hover and the outline read them from the checked module, and
a frame kept by the incremental checker can hold them however the text moves.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from qvr_core.builtins.semirings import Semiring

#: A term of a deduction's algebra, as quivers' compiler builds one
#: (`dsl/compiler/deductions.py`, `_convert_pattern`): an atom `("atom", "NP")`, a
#: pattern variable `("?", "X")` (any name the `atoms` line does not declare), an applied
#: term `("span", I, K, NP)` with its head a string, a slash `("/", result, argument)` or
#: `("\\", result, argument)`, a product `("product", (A, B))`; a logical form's bound
#: variable is `("var", "#v1")`, and a span's positions are ints.
Term = tuple[Any, ...]
ATOM, VARIABLE = "atom", "?"
#: The clause kind of a `deduction` declaration.
DEDUCTION = "deduction"


@dataclass(frozen=True)
class Rule:
    """One sequent rule: premises `|-` conclusion, as written and as terms."""

    name: str
    premises: tuple[str, ...]
    conclusion: str
    learnable: bool
    bounded: bool
    parent: str | None
    premise_terms: tuple[Term, ...] = ()
    conclusion_term: Term = ()


@dataclass(frozen=True)
class Entry:
    """One lexicon entry: its words, its category (None for any atom, `*`) and its
    logical form, as written; `categories` the category terms it gives each word (one per
    atom for `*` and `{NP, VP}`, which are always learnable) and `form` its logical form
    as a term."""

    words: tuple[str, ...]
    category: str | None
    logical_form: str
    learnable: bool
    categories: tuple[Term, ...] = ()
    form: Term | None = None


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
    #: quivers' `[tolerance=]` and `[max_iterations=]`: when an item's change is too small
    #: to propagate, and how many items the agenda may pop
    tolerance: float = 0.0
    max_iterations: int = 100_000
    #: span items carry a logical form (a `binders` line, or a rule's span of 4 or more)
    carries_forms: bool = False

    @property
    def words(self) -> tuple[str, ...]:
        """Its words in the order its lexicon first lists them: a program's data gives a
        sentence as their ids (`check/deduction_calls.py`)."""
        return tuple(dict.fromkeys(w for e in self.lexicon for w in e.words))

    def summary(self) -> str:
        """One paragraph: the semiring, the goal and the size of the system."""
        goal = f"goal {self.start}" if self.start else "every item a goal"
        depth = f", categories at most {self.depth} deep" if self.depth is not None else ""
        entries = f", {len(self.lexicon)} lexicon entries" if self.lexicon else ""
        return (
            f"weighted deduction in {self.semiring.name} ({self.semiring.doc}); {goal}"
            f"{depth}; {len(self.atoms)} atoms, {len(self.rules)} rules{entries}"
        )
