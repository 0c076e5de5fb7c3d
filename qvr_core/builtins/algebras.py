"""The composition rules a `composition NAME` declaration may name: quivers' registry.

A file's `composition NAME [level=...]` chooses the algebra that enriches its
morphisms: a `role=latent` morphism between finite sets is then a tensor of
values of that algebra, and `f >> g` is `(f >> g)[i, k] = join_j (f[i, j] (x) g[j, k])`
with the algebra's tensor `(x)` and join. quivers 0.25.2 keeps these rules in
`dsl/compiler/_prelude.py` (`_ALGEBRA_REGISTRY`), defined in `core/algebras.py`;
this table is qvr's one description of them. The checker resolves a declared
name and its level here, the runtime composes with the operations below, and the
editor completes and documents the names from it.

The operations are written with tensor methods only (`t.sum(dims)`, `a * b`, ...):
they run on torch tensors, and this package still imports no torch (the layers
say so). A latent morphism's entries under every rule of the registry are
`sigmoid(raw)` of a free parameter, in (0, 1): quivers' `LatentMorphism`, whatever
the algebra. Without a declaration quivers enriches over `product_fuzzy`; qvr does
not follow it there (docs/language.md, "Composition algebras").
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal, Protocol, Self

Level = Literal["algebra", "semigroupoid", "bilinear_form", "rule"]

#: The levels a declaration may ask for, strongest first (quivers' `_COMPOSITION_LEVELS`).
LEVELS: tuple[Level, ...] = ("algebra", "semigroupoid", "bilinear_form", "rule")

#: The entries an inline body must have at each level (quivers'
#: `_build_custom_composition_rule`), and the entries it may have besides.
REQUIRED_ENTRIES: Mapping[Level, tuple[str, ...]] = MappingProxyType(
    {
        "algebra": ("tensor_op", "join", "unit", "zero"),
        "semigroupoid": ("tensor_op", "join"),
        "bilinear_form": ("tensor_op", "join"),
        "rule": ("tensor_op", "join"),
    }
)
OPTIONAL_ENTRIES: Mapping[Level, tuple[str, ...]] = MappingProxyType(
    {"algebra": ("negation", "meet"), "semigroupoid": (), "bilinear_form": (), "rule": ()}
)
#: Entries written as functions (`tensor_op(a, b) = ...`), with how many parameters; the
#: others (`unit`, `zero`) are values (`unit = 1.0`).
FUNCTION_ENTRIES: Mapping[str, int] = MappingProxyType(
    {"tensor_op": 2, "join": 1, "negation": 1, "meet": 1}
)


class Values(Protocol):
    """What the operations need of a tensor: a `torch.Tensor` has all of it."""

    @property
    def dtype(self) -> object: ...

    def __add__(self, other: Self | float, /) -> Self: ...
    def __sub__(self, other: Self | float, /) -> Self: ...
    def __rsub__(self, other: float, /) -> Self: ...
    def __mul__(self, other: Self | float, /) -> Self: ...
    def __neg__(self) -> Self: ...
    def __invert__(self) -> Self: ...
    def sum(self, dim: tuple[int, ...], keepdim: bool = False) -> Self: ...
    def amax(self, dim: tuple[int, ...], keepdim: bool = False) -> Self: ...
    def amin(self, dim: tuple[int, ...], keepdim: bool = False) -> Self: ...
    def prod(self, dim: int) -> Self: ...
    def clamp(self, min: float | None = None, max: float | None = None) -> Self: ...
    def log1p(self) -> Self: ...
    def expm1(self) -> Self: ...
    def exp(self) -> Self: ...
    def log(self) -> Self: ...
    def isneginf(self) -> Self: ...
    def where(self, condition: Self, other: float, /) -> Self: ...
    def squeeze(self, dim: tuple[int, ...]) -> Self: ...
    def unbind(self, dim: int) -> tuple[Self, ...]: ...
    def minimum(self, other: Self, /) -> Self: ...
    def maximum(self, other: Self, /) -> Self: ...


@dataclass(frozen=True)
class Algebra:
    """One registered composition rule.

    `level` is the strongest level it is at: an `algebra` also satisfies a
    `semigroupoid` or `rule` declaration (quivers checks the rule's class against
    the declared level's); none of quivers' rules is a `bilinear_form`. `unit` and
    `zero` (the tensor's identity and the join's) exist at the algebra level only.
    `tensor` and `join` say the operations in words, for hover and the docs.
    """

    name: str
    level: Level
    doc: str
    tensor: str
    join: str
    tensor_op: Callable[[Values, Values], Values]
    join_op: Callable[[Values, tuple[int, ...]], Values]
    unit: float | None = None
    zero: float | None = None
    #: the name quivers' rule gives itself (`ProductFuzzy`, `Dual(Godel)`), for messages
    quivers_name: str = ""
    #: why `f >> g` cannot be computed under this rule, when it cannot (the runtime refuses)
    no_composition: str = ""

    def at_level(self, level: Level) -> bool:
        """Whether a declaration `[level=level]` accepts this rule (quivers'
        `_verify_composition_rule_level`: an isinstance check on the class lattice
        CompositionRule > {Semigroupoid > Algebra, BilinearForm})."""
        if level == "rule":
            return True
        if level == "semigroupoid":
            return self.level in ("algebra", "semigroupoid")
        return self.level == level

    def describe(self) -> str:
        """The rule in one paragraph of words: its operations, its unit and zero."""
        ids = ""
        if self.unit is not None and self.zero is not None:
            ids = f"; unit {_number(self.unit)}, zero {_number(self.zero)}"
        return (
            f"{self.name} ({self.level}): {self.doc} Composition: "
            f"(f >> g)[i, k] = join over j of f[i, j] (x) g[j, k], with a (x) b = {self.tensor} "
            f"and join = {self.join}{ids}. A latent morphism's entries are sigmoid(raw), in (0, 1)."
        )


def _number(x: float) -> str:
    if x == float("inf"):
        return "inf"
    if x == float("-inf"):
        return "-inf"
    return f"{x:g}"


# ------------------------------------------------------------------ operations

#: The smallest step above 1 of each float type: quivers' `clamp_probs` keeps
#: probabilities in [eps, 1 - eps] before a logarithm (torch.finfo, without torch).
_EPS = {
    "torch.float64": 2.0**-52,
    "torch.float32": 2.0**-23,
    "torch.float16": 2.0**-10,
    "torch.bfloat16": 2.0**-7,
}


def _clamp_probs(t: Values) -> Values:
    eps = _EPS.get(str(t.dtype), 2.0**-23)
    return t.clamp(eps, 1.0 - eps)


def _times(a: Values, b: Values) -> Values:
    return a * b


def _plus(a: Values, b: Values) -> Values:
    return a + b


def _min(a: Values, b: Values) -> Values:
    return a.minimum(b)


def _max(a: Values, b: Values) -> Values:
    return a.maximum(b)


def _lukasiewicz(a: Values, b: Values) -> Values:
    return (a + b - 1.0).clamp(min=0.0)


def _clamped_times(a: Values, b: Values) -> Values:
    return (a * b).clamp(0.0, 1.0)


def _noisy_or2(a: Values, b: Values) -> Values:
    """product_fuzzy's join of two values (its dual's tensor), in log space as quivers."""
    return -((-_clamp_probs(a)).log1p() + (-_clamp_probs(b)).log1p()).expm1()


def _bounded_sum2(a: Values, b: Values) -> Values:
    return (a + b).clamp(max=1.0)


def _sum(t: Values, dims: tuple[int, ...]) -> Values:
    return t.sum(dims)


def _amax(t: Values, dims: tuple[int, ...]) -> Values:
    return t.amax(dims)


def _amin(t: Values, dims: tuple[int, ...]) -> Values:
    return t.amin(dims)


def _prod(t: Values, dims: tuple[int, ...]) -> Values:
    for d in sorted(dims, reverse=True):
        t = t.prod(d)
    return t


def _noisy_or(t: Values, dims: tuple[int, ...]) -> Values:
    """1 - prod(1 - t), as quivers computes it: -expm1(sum(log1p(-clamp(t))))."""
    return -((-_clamp_probs(t)).log1p().sum(dims)).expm1()


def _bounded_sum(t: Values, dims: tuple[int, ...]) -> Values:
    return t.sum(dims).clamp(max=1.0)


def _clamped_sum(t: Values, dims: tuple[int, ...]) -> Values:
    return t.sum(dims).clamp(0.0, 1.0)


def _logsumexp(t: Values, dims: tuple[int, ...]) -> Values:
    """log(sum(exp(t))), -inf (with a zero gradient) where every entry is -inf, as quivers'
    LogProbAlgebra.join guards it."""
    peak = t.amax(dims, keepdim=True)
    empty = peak.isneginf()
    shift = peak.where(~empty, 0.0)
    total = (t - shift).exp().sum(dims)
    shift, empty = shift.squeeze(dims), empty.squeeze(dims)
    combined = total.where(~empty, 1.0).log() + shift
    return combined.where(~empty, float("-inf"))


def _folded(op: Callable[[Values, Values], Values]) -> Callable[[Values, tuple[int, ...]], Values]:
    """A binary operation folded along axes, left to right (quivers' `_fold_along_dim`):
    the join of a de Morgan dual is its base's tensor folded so."""

    def fold(t: Values, dims: tuple[int, ...]) -> Values:
        for d in sorted(dims, reverse=True):
            first, *rest = t.unbind(d)
            for chunk in rest:
                first = op(first, chunk)
            t = first
        return t

    return fold


def _implication(a: Values, b: Values) -> Values:
    return 1.0 - a + a * b


_DUAL_FAILS = (
    "quivers 0.25.2 fails on every `>>` under a de Morgan dual (its DualAlgebra.tensor_op "
    "stacks its two operands, which composition broadcasts to different shapes)"
)


def _entries() -> tuple[Algebra, ...]:
    inf = float("inf")
    return (
        Algebra(
            "product_fuzzy",
            "algebra",
            "[0, 1] with the product t-norm and the probabilistic sum (noisy-OR); quivers' "
            "default when a file declares none.",
            "a * b",
            "noisy-OR, 1 - prod(1 - t)",
            _times,
            _noisy_or,
            1.0,
            0.0,
            "ProductFuzzy",
        ),
        Algebra(
            "boolean",
            "algebra",
            "crisp relations: AND and OR, computed on [0, 1] as product and maximum.",
            "a * b",
            "max(t)",
            _times,
            _amax,
            1.0,
            0.0,
            "Boolean",
        ),
        Algebra(
            "lukasiewicz",
            "algebra",
            "[0, 1] with the Lukasiewicz t-norm and the bounded sum.",
            "max(a + b - 1, 0)",
            "min(1, sum(t))",
            _lukasiewicz,
            _bounded_sum,
            1.0,
            0.0,
            "Lukasiewicz",
        ),
        Algebra(
            "godel",
            "algebra",
            "[0, 1] with the Goedel (minimum) t-norm.",
            "min(a, b)",
            "max(t)",
            _min,
            _amax,
            1.0,
            0.0,
            "Godel",
        ),
        Algebra(
            "tropical",
            "algebra",
            "[0, inf] with (min, +): distances, shortest paths.",
            "a + b",
            "min(t)",
            _plus,
            _amin,
            0.0,
            inf,
            "Tropical",
        ),
        Algebra(
            "max_plus",
            "algebra",
            "(max, +), the Viterbi semiring: the best path.",
            "a + b",
            "max(t)",
            _plus,
            _amax,
            0.0,
            -inf,
            "MaxPlus",
        ),
        Algebra(
            "log_prob",
            "algebra",
            "the sum-product semiring in log space.",
            "a + b",
            "logsumexp(t)",
            _plus,
            _logsumexp,
            0.0,
            -inf,
            "LogProb",
        ),
        Algebra(
            "real",
            "algebra",
            "the real numbers with + and *: a matrix product.",
            "a * b",
            "sum(t)",
            _times,
            _sum,
            1.0,
            0.0,
            "Real",
        ),
        Algebra(
            "probability",
            "algebra",
            "sum-product on [0, 1], each result clamped to [0, 1].",
            "clamp(a * b, 0, 1)",
            "clamp(sum(t), 0, 1)",
            _clamped_times,
            _clamped_sum,
            1.0,
            0.0,
            "Probability",
        ),
        Algebra(
            "counting",
            "algebra",
            "sum-product on the counts: composition counts paths.",
            "a * b",
            "sum(t)",
            _times,
            _sum,
            1.0,
            0.0,
            "Counting",
        ),
        Algebra(
            "markov",
            "algebra",
            "sum-product for stochastic matrices (quivers' FinStoch composition).",
            "a * b",
            "sum(t)",
            _times,
            _sum,
            1.0,
            0.0,
            "Markov",
        ),
        Algebra(
            "material_impl",
            "semigroupoid",
            "Reichenbach's material implication: associative, without an identity.",
            "1 - a + a * b",
            "prod(t)",
            _implication,
            _prod,
            quivers_name="MaterialImplication",
        ),
        Algebra(
            "reichenbach",
            "algebra",
            "the de Morgan dual of product_fuzzy: noisy-OR as the tensor, product as the join.",
            "1 - (1 - a)(1 - b)",
            "prod(t)",
            _noisy_or2,
            _folded(_times),
            0.0,
            1.0,
            "Dual(ProductFuzzy)",
            _DUAL_FAILS,
        ),
        Algebra(
            "boolean_dual",
            "algebra",
            "the de Morgan dual of boolean: OR as the tensor, AND as the join.",
            "max(a, b)",
            "prod(t)",
            _max,
            _folded(_times),
            0.0,
            1.0,
            "Dual(Boolean)",
            _DUAL_FAILS,
        ),
        Algebra(
            "dual_lukasiewicz",
            "algebra",
            "the de Morgan dual of lukasiewicz: the bounded sum as the tensor, the t-norm "
            "folded as the join.",
            "min(1, a + b)",
            "max(a + b - 1, 0) folded over t",
            _bounded_sum2,
            _folded(_lukasiewicz),
            0.0,
            1.0,
            "Dual(Lukasiewicz)",
            _DUAL_FAILS,
        ),
        Algebra(
            "dual_godel",
            "algebra",
            "the de Morgan dual of godel: max as the tensor, min as the join.",
            "max(a, b)",
            "min(t)",
            _max,
            _folded(_min),
            0.0,
            1.0,
            "Dual(Godel)",
            _DUAL_FAILS,
        ),
    )


#: The registry, by the name a declaration writes (quivers looks names up lower-cased).
ALGEBRAS: Mapping[str, Algebra] = MappingProxyType({a.name: a for a in _entries()})

#: The rule of a file that declares none, in quivers (qvr runs such a file as `markov`).
QUIVERS_DEFAULT = "product_fuzzy"
#: The rule qvr composes finite-set latents under when a file declares none: its
#: latents are row-stochastic matrices, the law of the chain of draws qvr runs.
UNDECLARED = "markov"


# ------------------------------------------------------------------ a latent's start


@dataclass(frozen=True)
class Start:
    """Where `[role=latent, init=auto]` starts a latent's raw parameter: quivers'
    algebra-guided recipe (`analysis/init_spec.py`, `_algebra_init_spec` at depth 1, as its
    compiler applies it to a top-level latent), which puts one composition step of the
    rule near its mid-saturation point, so a chain of them neither vanishes nor saturates.

    `distribution` is "uniform" on [low, high], "normal" (mean, std) or "constant" (mean).
    `through_sigmoid`: the recipe is in value space and the raw parameter is its logit (a
    latent's entries are sigmoid(raw)); otherwise it is applied to the raw parameter as
    it is, as quivers does for the rules whose recipe is not in [0, 1]."""

    distribution: Literal["uniform", "normal", "constant"]
    mean: float
    std: float = 0.0
    low: float = 0.0
    high: float = 0.0
    through_sigmoid: bool = False
    why: str = ""


def auto_start(rule: str, size: int) -> Start:
    """The `init=auto` recipe of a latent under `rule` (a registry name, `markov` for a
    file that declares none) whose larger side has `size` values (quivers'
    `intermediate_size`, the cells one composition joins over)."""
    k = max(int(size), 1)
    if rule in ("product_fuzzy", "lukasiewicz", "probability", "counting"):
        p = math.log(2.0) / k if rule == "product_fuzzy" else 1.0 / k
        high = 3.0 * p / 2.0 if rule == "counting" else min(1.0, 3.0 * p / 2.0)
        return Start(
            "uniform",
            p,
            p / 2.0,
            max(0.0, p / 2.0),
            high,
            through_sigmoid=rule != "counting",
            why=f"each of the {k} cells one composition joins near {p:.4g}",
        )
    if rule in ("boolean", "godel"):
        return Start("constant", 0.5, through_sigmoid=True, why="the mid-point 1/2 (idempotent)")
    if rule == "log_prob":
        return Start("normal", -math.log(k), 0.5, why=f"centred at -ln({k})")
    if rule == UNDECLARED:
        return Start("normal", 0.0, 1.0, why="row logits about 0: a near-uniform row")
    return Start(  # the additive rules, real, the duals and the semigroupoids
        "normal", 0.0, 1.0 / math.sqrt(k), why=f"centred at 0, spread 1/sqrt({k})"
    )
