"""The semirings a `deduction` may score its derivations in (`[semiring=LogProb]`).

quivers' compiler knows these four names (0.25.2, `dsl/compiler/deductions.py`, its
semiring table) and silently reads any other as LogProb; the checker reads this table
to say so where the name is written, and hover and completion describe each from here.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Semiring:
    name: str
    doc: str
    #: whether a rule's or a lexicon entry's learned weight counts: quivers reads learned
    #: log weights only in the two log semirings; the others multiply by their one
    reads_weights: bool


LOG_PROB = Semiring(
    "LogProb",
    "log probabilities: a derivation's weight is the sum of its log weights, an item's the "
    "log-sum-exp over its derivations (the inside weight; the default)",
    reads_weights=True,
)
VITERBI = Semiring(
    "Viterbi",
    "log probabilities: a derivation's weight is the sum of its log weights, an item's the "
    "best derivation's (max)",
    reads_weights=True,
)
BOOLEAN = Semiring(
    "Boolean", "derivability: an item holds when some derivation reaches it", reads_weights=False
)
COUNTING = Semiring(
    "Counting", "the number of derivations that reach each item", reads_weights=False
)

SEMIRINGS: dict[str, Semiring] = {s.name: s for s in (LOG_PROB, VITERBI, BOOLEAN, COUNTING)}
DEFAULT_SEMIRING = LOG_PROB
