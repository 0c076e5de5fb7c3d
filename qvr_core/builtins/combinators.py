"""The combinators of `let` expressions (`fan`, `scan`, `stack`, `repeat`, `identity`).

Each entry also says what a call costs (`CombinatorCost`): the memory estimate
(`qvr_core.sizing.resources`) sizes a call from it, so a new combinator is sized by
its entry instead of silently costing nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class CombinatorParam:
    name: str
    doc: str
    kind: str = "morphism"  # what is written there: a "morphism" expression, an "object", a "count"


@dataclass(frozen=True)
class CombinatorCost:
    """How a call runs its morphism arguments and what parameters it makes, as compiled.

    `runs`: "once", every morphism argument runs once on the input, side by side
    (`fan`; `identity` has none); "each_step", the first argument runs once per
    position of the input sequence and the call gives one value (`scan`);
    "count", the first argument runs `count` times in a row (`stack`, `repeat`).
    """

    runs: Literal["once", "each_step", "count"]
    fresh_copies: bool = False  # each of the `count` runs has its own parameters (`stack`)
    keeps_positions: bool = False  # "each_step" keeping every step's value (`scanl`)
    parameters: int = 0  # held by the combinator's own module, per call (none holds any yet)


@dataclass(frozen=True)
class Combinator:
    """A combinator: its parameters in order, keyword arguments with their literal values,
    whether it takes any number of branches, its type as a signature tail, and its doc."""

    name: str
    params: tuple[CombinatorParam, ...]
    result: str  # the signature's tail: ` : [A] -> H`
    doc: str
    cost: CombinatorCost
    keywords: tuple[tuple[str, tuple[str, ...], str], ...] = ()  # (name, values, default)
    #: the keywords quivers' grammars parse on this call (the others are qvr's: QVR012)
    quivers_keywords: tuple[str, ...] = ()
    variadic: bool = False  # `fan(f1, ..., fn)`: branches on one input, results joined
    #: which attention a call is (the checker's typing and the runtime's masks read it)
    attention: Literal["self", "causal", "cross"] | None = None
    #: the count of a call that leaves it out (quivers' `repeat(b)`: `RepeatMorphism(b,
    #: n=1)`, whose count the program's Python changes later); None: it must be written
    default_count: int | None = None

    @property
    def folds_a_sequence(self) -> bool:
        """Whether a call reads its input sequence position by position (`scan`)."""
        return self.cost.runs == "each_step"

    def param_at(self, index: int) -> CombinatorParam | None:
        """The parameter of the index-th positional argument (None past the last)."""
        if self.variadic:
            return self.params[min(index, len(self.params) - 1)]
        return self.params[index] if index < len(self.params) else None

    @property
    def count_index(self) -> int | None:
        """The position of the count argument (`stack(b, n)`: 1), None without one."""
        return next((i for i, p in enumerate(self.params) if p.kind == "count"), None)


#: `scan`/`scanl` keywords. quivers' grammar parses `init=` on `scan` only; the rest is
#: qvr's own spelling (the checker's QVR012 hint says so).
_SCAN_KEYWORDS = (
    ("reverse", ("true", "false"), "false"),
    ("init", ("zeros", "learned"), "zeros"),
)


def learned_init(word: str) -> bool | None:
    """What a scan's `init=` says: True for `learned`, False for `zeros` (the default),
    None for a word it does not take."""
    return word == "learned" if word in ("learned", "zeros") else None


_ATTENTION_PARAMS = (
    CombinatorParam("query", "the query maps, A -> K, one per head"),
    CombinatorParam("key", "the key maps, A -> K, one per head"),
    CombinatorParam("value", "the value maps, A -> V, one per head"),
)

_COMBINATORS = (
    Combinator(
        "fan",
        (CombinatorParam("f", "a branch, D -> C"),),
        " : D -> C1 * ... * Cn",
        "Runs every branch on the same input and pairs the results: D -> C1 * ... * Cn. "
        "`fan(head)` with a `replicate=k` morphism runs its k copies.",
        CombinatorCost("once"),
        variadic=True,
    ),
    Combinator(
        "scan",
        (CombinatorParam("c", "the cell, A * H -> H"),),
        " : [A] -> H",
        "Folds the cell `c : A * H -> H` over a sequence: [A] -> H, the last state. "
        "`init=learned` starts from a learned state instead of zeros; "
        "`reverse=true` (qvr only) reads the sequence right to left.",
        CombinatorCost("each_step"),
        keywords=_SCAN_KEYWORDS,
        quivers_keywords=("init",),
    ),
    Combinator(
        "scanl",
        (CombinatorParam("c", "the cell, A * H -> H"),),
        " : [A] -> [H]",
        "Runs the cell `c : A * H -> H` along a sequence and keeps every state: [A] -> [H], "
        "the state after reading position t at position t (a tagger, a language model "
        "trained on every position, an encoder per token). Reading right to left (the "
        "second branch of a bidirectional fan), position t holds the state after reading "
        "positions L-1 down to t.",
        CombinatorCost("each_step", keeps_positions=True),
        keywords=_SCAN_KEYWORDS,
    ),
    Combinator(
        "multihead",
        _ATTENTION_PARAMS,
        " : [A] -> [V * ... * V]",
        "Multi-head scaled dot-product self-attention over a sequence: head i weighs every "
        "position's value_i by softmax(query_i . key_i / sqrt(d_k)) and the heads are put "
        "side by side, [A] -> [V * ... * V]. Give three `replicate=h` groups for h heads "
        "(d_k is the key codomain's dimension); padded positions get no weight.",
        CombinatorCost("once"),
        attention="self",
    ),
    Combinator(
        "causal_multihead",
        _ATTENTION_PARAMS,
        " : [A] -> [V * ... * V]",
        "Multi-head self-attention in which position t sees positions 0..t only (a "
        "decoder's masked self-attention: what it predicts at t cannot read the future), "
        "[A] -> [V * ... * V]. Padding needs no key mask here: padded positions come after "
        "every real one.",
        CombinatorCost("once"),
        attention="causal",
    ),
    Combinator(
        "cross_multihead",
        (
            CombinatorParam("query", "the query maps, Q -> K, one per head"),
            CombinatorParam("key", "the key maps, M -> K, one per head (read the memory)"),
            CombinatorParam("value", "the value maps, M -> V, one per head (read the memory)"),
        ),
        " : [Q * M] -> [V * ... * V]",
        "Multi-head cross-attention: the queries come from one sequence (a decoder's states "
        "Q), keys and values from another (the encoder's states M, the memory), paired "
        "position by position as a call `f(y, memory)` pairs them: [Q * M] -> [V * ... * V]. "
        "Both are padded to one length; memory positions past the input's lengths get no "
        "weight.",
        CombinatorCost("once"),
        attention="cross",
    ),
    Combinator(
        "stack",
        (
            CombinatorParam("b", "the body, A -> A"),
            CombinatorParam("n", "how many copies", "count"),
        ),
        " : A -> A",
        "n copies of `b : A -> A` in a row, each with its own parameters.",
        CombinatorCost("count", fresh_copies=True),
    ),
    Combinator(
        "repeat",
        (
            CombinatorParam("b", "the body, A -> A"),
            CombinatorParam("n", "how many copies", "count"),
        ),
        " : A -> A",
        "`b : A -> A` applied n times, parameters shared. `repeat(b)` applies it once "
        "until the program sets its count (`times`), as quivers' runtime-variable repeat.",
        CombinatorCost("count"),
        default_count=1,
    ),
    Combinator(
        "identity",
        (CombinatorParam("T", "an object", "object"),),
        " : T -> T",
        "The identity morphism T -> T of an object T.",
        CombinatorCost("once"),
    ),
)

COMBINATORS: dict[str, Combinator] = {c.name: c for c in _COMBINATORS}
