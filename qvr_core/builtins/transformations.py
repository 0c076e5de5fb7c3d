"""The change-of-base transformations `f.change_base(phi)` may name: quivers' registry.

quivers 0.25.2 (`dsl/compiler/_prelude.py`: `_build_default_trans_singletons`,
`_build_default_trans_constructors`; `core/algebra_morphisms.py`,
`core/morphism_transformations.py`) moves a relation between finite sets from one
composition rule to another. A *singleton* is written by its bare name
(`expectation`) and maps each entry on its own; a *constructor* is called with an
object whose axis it works along (`softmax(B)`) or with a prior (`bayes_invert(pi)`).
`t1 >>> t2` chains two, the first's target rule being the second's source
(`check/change_base.py` types these; `runtime/relations.py`, `Transformed`, computes
them). This table is qvr's one description of them: the checker reads the rules and
what a constructor takes, the runtime the operations, the editor the words.

The operations are written with tensor methods only, so this package imports no torch.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal, Protocol, Self

#: What a constructor is called with: the object whose axis it acts along, or the
#: morphism whose tensor is the prior; a singleton takes nothing.
Takes = Literal["", "axis", "prior"]

#: The operator that chains two transformations, and the method that applies one.
CHAIN = ">>>"
CHANGE_BASE = "change_base"

#: What `f.change_base(phi)` does, for hover and signature help.
CHANGE_BASE_DOC = (
    "The relation f moved to another composition rule: phi's steps applied to its tensor "
    "in order, the first taking f's rule, the result valued in the last one's. The sides "
    "stay (Bayes' inversion swaps them); it has no draws."
)

#: Below this a sum or a norm is read as this (quivers' `EPS`), so nothing divides by 0.
EPS = 1e-8


class Entries(Protocol):
    """What the operations need of a tensor: a `torch.Tensor` has all of it."""

    def clamp(self, min: float | None = None, max: float | None = None) -> Self: ...
    def log(self) -> Self: ...
    def floor(self) -> Self: ...
    def gt(self, other: float, /) -> Self: ...
    def type_as(self, other: Self, /) -> Self: ...
    def softmax(self, dim: int) -> Self: ...
    def sum(self, dim: int, keepdim: bool = False) -> Self: ...
    def sqrt(self) -> Self: ...
    def __mul__(self, other: Self | float, /) -> Self: ...
    def __truediv__(self, other: Self, /) -> Self: ...


@dataclass(frozen=True)
class Transformation:
    """One registered transformation: from the relations of rule `source` to those of
    `target`. `pointwise` maps a tensor entry by entry; `along` maps it along one axis
    (a constructor that takes an `axis`); a `prior` one is Bayes' inversion, computed
    by the runtime from the prior's tensor (`invert`)."""

    name: str
    source: str
    target: str
    doc: str
    takes: Takes = ""
    pointwise: Callable[[Entries], Entries] | None = None
    along: Callable[[Entries, int], Entries] | None = None

    @property
    def constructor(self) -> bool:
        """Whether it is called with an argument (`softmax(B)`), not named bare."""
        return self.takes != ""

    @property
    def call(self) -> str:
        """How it is written: `softmax(axis)`, `expectation`."""
        return f"{self.name}({self.takes})" if self.constructor else self.name

    def describe(self) -> str:
        """What it does in words, for hover and the docs."""
        return (
            f"Takes {self.source} relations to {self.target} ones. {self.doc} Apply it with "
            f"`f.{CHANGE_BASE}({self.call})`; chain it with `{CHAIN}`."
        )


def _threshold(t: Entries) -> Entries:
    return t.gt(0.5).type_as(t)


def _l1(t: Entries, dim: int) -> Entries:
    kept = t.clamp(min=0.0)
    return kept / kept.sum(dim, keepdim=True).clamp(min=EPS)


def _l2(t: Entries, dim: int) -> Entries:
    return t / (t * t).sum(dim, keepdim=True).sqrt().clamp(min=EPS)


def invert(kernel: Entries, prior: Entries) -> Entries:
    """Bayes' inversion of the |A| x |B| kernel under the prior over A (a column of |A|
    entries): `post[b, a] = prior[a] f[a, b] / sum_a' prior[a'] f[a', b]`, returned as
    a B x A tensor's transpose taken by the caller (quivers' `BayesInvert.apply`)."""
    joint = prior * kernel
    return joint / joint.sum(0, keepdim=True).clamp(min=EPS)


def _entries() -> tuple[Transformation, ...]:
    def clamp01(t: Entries) -> Entries:
        return t.clamp(min=0.0, max=1.0)

    def log(t: Entries) -> Entries:
        return t.clamp(min=1e-30).log()

    def same(t: Entries) -> Entries:
        return t

    return (
        Transformation(
            "expectation",
            "markov",
            "product_fuzzy",
            "A kernel's probabilities read as fuzzy truth values (clamped to [0, 1]).",
            pointwise=clamp01,
        ),
        Transformation(
            "log_prob",
            "product_fuzzy",
            "log_prob",
            "Each entry's logarithm (entries below 1e-30 read as 1e-30).",
            pointwise=log,
        ),
        Transformation(
            "max_plus",
            "product_fuzzy",
            "max_plus",
            "Each entry's logarithm, composed with max and +.",
            pointwise=log,
        ),
        Transformation(
            "material_implication",
            "product_fuzzy",
            "godel",
            "The entries, clamped to [0, 1], under Goedel's min and max.",
            pointwise=clamp01,
        ),
        Transformation(
            "threshold",
            "product_fuzzy",
            "boolean",
            "1 where an entry is above 0.5, else 0.",
            pointwise=_threshold,
        ),
        Transformation(
            "boolean_embedding",
            "boolean",
            "product_fuzzy",
            "A crisp relation read as a fuzzy one (the entries unchanged).",
            pointwise=same,
        ),
        Transformation(
            "probability_clamp",
            "real",
            "probability",
            "Real entries clamped to [0, 1].",
            pointwise=clamp01,
        ),
        Transformation(
            "probability_to_real",
            "probability",
            "real",
            "Probabilities read as real numbers (the entries unchanged).",
            pointwise=same,
        ),
        Transformation(
            "counting_from_real",
            "real",
            "counting",
            "Real entries as counts: negative ones 0, the others rounded down.",
            pointwise=lambda t: t.clamp(min=0.0).floor(),
        ),
        Transformation(
            "counting_to_real",
            "counting",
            "real",
            "Counts read as real numbers (the entries unchanged).",
            pointwise=same,
        ),
        Transformation(
            "softmax",
            "product_fuzzy",
            "markov",
            "The softmax along the named object's axis: entries in (0, 1) that sum to 1 along it.",
            takes="axis",
            along=lambda t, dim: t.softmax(dim),
        ),
        Transformation(
            "l1_normalize",
            "real",
            "markov",
            "Negative entries 0, the others divided by their sum along the named object's axis.",
            takes="axis",
            along=_l1,
        ),
        Transformation(
            "l2_normalize",
            "real",
            "real",
            "The entries divided by their Euclidean norm along the named object's axis.",
            takes="axis",
            along=_l2,
        ),
        Transformation(
            "bayes_invert",
            "markov",
            "markov",
            "Bayes' inversion of a kernel A -> B under a prior over A: the kernel B -> A "
            "of the posterior. The prior is a morphism's tensor (|A| entries, renormalised "
            "when they do not sum to 1), read once, with no gradient.",
            takes="prior",
        ),
    )


TRANSFORMATIONS: Mapping[str, Transformation] = MappingProxyType({t.name: t for t in _entries()})
