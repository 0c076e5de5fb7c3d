"""The values a QIEC computation computes with, as the checker evaluates it.

The checker runs a computation's body (`qiec_eval.py`) over these values. What is known
when the file is checked is known here (a whole-number literal, a list's length, which
constructor built a value, an index given in brackets); what a run decides (a parameter
drawn by the sampler, a data value) is a `Term`, the checked arithmetic the runtime
evaluates. So a `case` on a value whose index is known takes one branch, `map` and
`traverse` over a list of known length give a list of that length, and what reaches a
program is terms over the program's own names.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from qvr_core.builtins import FAMILIES
from qvr_core.builtins.effects import (
    BERNOULLI,
    CATEGORICAL,
    LOG,
    LOG_PROB,
    LOGSUMEXP,
    MIXTURE,
    NORMAL,
    REAL_TYPE,
    UNIT_TYPE,
)
from qvr_core.check.qiec_declarations import Constructor
from qvr_core.check.qiec_types import (
    BOOL,
    INT,
    BaseT,
    DistT,
    FamilyT,
    QType,
    TensorT,
    written,
)
from qvr_core.check.terms import Call, Density, Gather, Num, Op, Ref, Stack, Term
from qvr_core.syntax import ast
from qvr_core.text.span import Span

Static = float | int | bool | str


class NotRun(Exception):
    """What a checked computation does that a program's run cannot put in place."""


@dataclass(frozen=True)
class Scalar:
    """One value of a base type: `static` when the file says it, else `term` (a run's).
    `literal`: a whole-number literal, which goes where a Real goes too."""

    kind: str
    static: Static | None = None
    term: Term | None = None
    literal: bool = False

    @property
    def unknown(self) -> bool:
        """A value checked for its type only (a define checked alone): no term to run."""
        return self.static is None and self.term is None

    def as_term(self, span: Span) -> Term:
        if self.term is not None:
            return self.term
        if self.static is None or isinstance(self.static, str):
            raise NotRun("a value a run would need that only its type is known of")
        return Num(float(self.static), span)


@dataclass(frozen=True)
class Items:
    """A list (a tensor's outermost axis): its entries, all of one type."""

    items: tuple[Value, ...]


@dataclass(frozen=True)
class Built:
    """A value of an indexed family, built by a known constructor."""

    constructor: Constructor
    type: FamilyT
    fields: tuple[Value, ...]


@dataclass(frozen=True)
class Opaque:
    """A value known by its type only (a family value the caller passes, a distribution
    the checker does not look into)."""

    type: QType


@dataclass(frozen=True)
class Dist:
    """A distribution: a family of the registry (or `Mixture`) and its arguments."""

    family: str
    args: tuple[tuple[str, Value], ...]
    element: str  # the base type of a draw

    def arg(self, name: str) -> Value | None:
        return next((v for k, v in self.args if k == name), None)


@dataclass(frozen=True)
class Closure:
    """`x -> body` (curried for more parameters), with the names it closes over."""

    param: str
    body: ast.Arith
    env: tuple[tuple[str, Value], ...]


@dataclass(frozen=True)
class Tagged:
    """`site("label")` and `weight(w)`: the prelude's wrapped values."""

    tag: str
    value: Value


Value = Scalar | Items | Built | Opaque | Dist | Closure | Tagged


def real(x: float) -> Scalar:
    return Scalar(REAL_TYPE, static=x)


def unit() -> Scalar:
    return Scalar(UNIT_TYPE, static=0)


def type_of(v: Value) -> QType | None:
    """The value's type, or None for what has no QIEC type (a lambda, a list whose rows
    differ)."""
    match v:
        case Scalar(kind=kind):
            return BaseT(kind)
        case Items(items=items):
            if not items:
                return None
            inner = [type_of(i) for i in items]
            first = inner[0]
            if any(t != first for t in inner):
                return None
            if isinstance(first, BaseT):
                return TensorT(first.name, (len(items),))
            if isinstance(first, TensorT):
                return TensorT(first.element, (len(items), *first.dims))
            return None
        case Built(type=t) | Opaque(type=t):
            return t
        case Dist(element=e):
            return DistT(BaseT(e))
        case _:
            return None


def fits(v: Value, want: QType) -> bool:
    """Whether `v` goes where `want` is declared: the same type, a whole-number literal
    where a Real goes, lists of such where a tensor of Reals goes."""
    if isinstance(v, Scalar) and isinstance(want, BaseT):
        return v.kind == want.name or (v.literal and want.name == REAL_TYPE)
    if isinstance(v, Items) and isinstance(want, TensorT):
        if len(v.items) != want.dims[0]:
            return False
        inner: QType = (
            BaseT(want.element) if len(want.dims) == 1 else TensorT(want.element, want.dims[1:])
        )
        return all(fits(i, inner) for i in v.items)
    if isinstance(v, Dist) and isinstance(want, DistT):
        return isinstance(want.element, BaseT) and want.element.name == v.element
    return type_of(v) == want


def as_real(v: Scalar) -> Scalar:
    """An Int literal read where a Real goes."""
    return Scalar(REAL_TYPE, v.static, v.term) if v.literal else v


def leaves(t: QType, name: str, span: Span) -> Value:
    """A parameter of type `t` bound to a run's value `name`: a number is the name, a
    tensor a list of its entries `name[i, j]`, a family value opaque."""
    match t:
        case BaseT(name=kind):
            return Scalar(kind, term=Ref(name, span))
        case TensorT(element=e, dims=dims):
            return _entries(e, dims, name, (), span)
        case _:
            return Opaque(t)


def _entries(e: str, dims: tuple[int, ...], name: str, at: tuple[int, ...], span: Span) -> Value:
    if not dims:
        return Scalar(e, term=Gather(name, tuple(Num(float(i), span) for i in at), span))
    return Items(tuple(_entries(e, dims[1:], name, (*at, i), span) for i in range(dims[0])))


def term_of(v: Value, span: Span) -> Term | None:
    """The run's term of a number or a list of numbers, or None. A `Stack` puts a new
    last axis, so a list of lists is stacked along its last axis first: entry [i, j] of
    the value is entry [..., i, j] of the tensor."""
    if isinstance(v, Scalar):
        return v.as_term(span) if v.kind in (REAL_TYPE, INT, BOOL) and not v.unknown else None
    t = type_of(v)
    if not isinstance(t, TensorT):
        return None
    return _stacked(v, t.dims, span)


def _stacked(v: Value, dims: tuple[int, ...], span: Span) -> Term | None:
    if not dims:
        return term_of(v, span)
    parts = [_stacked(_last(v, k), dims[:-1], span) for k in range(dims[-1])]
    if any(p is None for p in parts):
        return None
    return Stack(tuple(p for p in parts if p is not None), span)


def _last(v: Value, k: int) -> Value:
    """`v[..., k]`: the entries whose last index is k."""
    assert isinstance(v, Items)
    if all(isinstance(i, Items) for i in v.items):
        return Items(tuple(_last(i, k) for i in v.items))
    return v.items[k]


def arithmetic(op: str, a: Scalar, b: Scalar, kind: str, span: Span) -> Scalar:
    """`a op b` of two numbers: folded when both are known, else a term."""
    if a.static is not None and b.static is not None:
        x, y = a.static, b.static
        if isinstance(x, str) or isinstance(y, str):  # two Strings compared
            same = x == y
            return Scalar(kind, static=same if op == "==" else not same)
        value = _fold(op, x, y, kind)
        if value is not None:
            return Scalar(kind, static=value, literal=a.literal and b.literal)
    if a.unknown or b.unknown:
        return Scalar(kind)
    unit = {"+": 0, "*": 1}.get(op) if kind != BOOL else None  # `0.0 + x`, `x * 1.0`: x
    if unit is not None and a.static == unit and b.term is not None:
        return Scalar(kind, term=b.term)
    if unit is not None and b.static == unit and a.term is not None:
        return Scalar(kind, term=a.term)
    return Scalar(kind, term=Op(op, a.as_term(span), b.as_term(span), span))


def _fold(op: str, x: float | int | bool, y: float | int | bool, kind: str) -> Static | None:
    match op:
        case "+":
            return x + y
        case "-":
            return x - y
        case "*":
            return x * y
        case "/":
            if y == 0:
                return None
            return x // y if kind == INT else x / y
        case "%":
            return None if y == 0 else x % y
        case "==":
            return x == y
        case "!=":
            return x != y
        case "<":
            return x < y
        case "<=":
            return x <= y
        case ">":
            return x > y
        case ">=":
            return x >= y
        case "&&":
            return bool(x) and bool(y)
        case "||":
            return bool(x) or bool(y)
        case _:
            return None


def select(index: Scalar, items: tuple[Value, ...], span: Span) -> Value | None:
    """`xs[i]` for an `i` a run decides: the sum over k of `(i == k) * xs[k]`, entry by
    entry (None where an entry is no number)."""
    first = items[0]
    if isinstance(first, Items):
        rows = [i for i in items if isinstance(i, Items)]
        if len(rows) != len(items):
            return None
        picked = [
            select(index, tuple(r.items[j] for r in rows), span) for j in range(len(first.items))
        ]
        if any(p is None for p in picked):
            return None
        return Items(tuple(p for p in picked if p is not None))
    if not all(isinstance(i, Scalar) for i in items):
        return None
    assert isinstance(first, Scalar)
    total: Term | None = None
    for k, item in enumerate(items):
        assert isinstance(item, Scalar)
        hit = Op("==", index.as_term(span), Num(float(k), span), span)
        part = Op("*", hit, item.as_term(span), span)
        total = part if total is None else Op("+", total, part, span)
    assert total is not None
    return Scalar(first.kind, term=total)


def merged(cond: Scalar, a: Value, b: Value, span: Span) -> Value | None:
    """`if c then a else b` for a `c` a run decides: `c * a + (1 - c) * b`, entry by
    entry; None where the branches' values are not numbers alike."""
    if isinstance(a, Scalar) and isinstance(b, Scalar):
        if a.static is not None and a.static == b.static:
            return a
        c = cond.as_term(span)
        yes = Op("*", c, a.as_term(span), span)
        no = Op("*", Op("-", Num(1.0, span), c, span), b.as_term(span), span)
        return Scalar(a.kind, term=Op("+", yes, no, span))
    if isinstance(a, Items) and isinstance(b, Items) and len(a.items) == len(b.items):
        parts = [merged(cond, x, y, span) for x, y in zip(a.items, b.items, strict=True)]
        if any(p is None for p in parts):
            return None
        return Items(tuple(p for p in parts if p is not None))
    return None


def log_density(dist: Dist, x: Scalar, span: Span) -> Scalar | None:
    """The log density of `dist` at `x` as a term (quivers' `log_prob`): Categorical,
    Bernoulli and Normal written out, a `Mixture` as the log of its weighted components'
    densities, and any other family of the registry whose arguments are numbers as a
    `log_prob` call the runtime scores with the registry's torch distribution; None
    where an argument is not a number (a list given to a scalar family)."""
    if dist.family == MIXTURE.name:
        return _mixture_density(dist, x, span)
    written_out = _written_out(dist, x, span)
    if written_out is not None or dist.family in (CATEGORICAL, BERNOULLI, NORMAL):
        return written_out
    return density(dist, x, span)


def density(dist: Dist, x: Scalar, span: Span) -> Scalar | None:
    """`log_prob(F(a, b), x)` for a family F of the registry, its arguments numbers: a call
    the runtime scores with F's torch distribution (`terms.Density`)."""
    numbers = [(name, v) for name, v in dist.args if isinstance(v, Scalar)]
    if dist.family not in FAMILIES or len(numbers) != len(dist.args):
        return None
    params = tuple(name for name, _ in numbers)
    values = tuple(v.as_term(span) for _, v in numbers)
    call = Call(
        LOG_PROB.name, (x.as_term(span), *values), span, density=Density(dist.family, params)
    )
    return Scalar(REAL_TYPE, term=call)


def _mixture_density(dist: Dist, x: Scalar, span: Span) -> Scalar | None:
    """log sum_k w_k p_k(x), as quivers' Mixture (weights on the simplex, as given) scores
    it: the log-sum-exp of log w_k + log p_k(x), stable however small a component's
    density is. None where a weight is not a number or a component is not scored."""
    weights, components = dist.arg("weights"), dist.arg("components")
    if not isinstance(weights, Items) or not isinstance(components, Items):
        return None
    if len(weights.items) != len(components.items) or not weights.items:
        return None
    parts: list[Term] = []
    for w, component in zip(weights.items, components.items, strict=True):
        if not isinstance(w, Scalar) or not isinstance(component, Dist):
            return None
        inner = log_density(component, x, span)
        if inner is None:
            return None
        log_w = _call(LOG, as_real(w), span)
        parts.append(Op("+", log_w.as_term(span), inner.as_term(span), span))
    # along the components' axis only: a value per row (data read a row at a time) keeps
    # its rows, each scored under the whole mixture
    stacked = Stack(tuple(parts), span)
    return Scalar(REAL_TYPE, term=Call(LOGSUMEXP, (stacked,), span, axis=-1))


def _written_out(dist: Dist, x: Scalar, span: Span) -> Scalar | None:
    """Categorical (which picks an entry of its list), Bernoulli and Normal as terms."""
    log = LOG
    if dist.family == CATEGORICAL:
        probs = dist.arg("probs")
        if not isinstance(probs, Items) or not probs.items:
            return None
        if x.static is not None and not isinstance(x.static, str):
            k = int(x.static)
            if not 0 <= k < len(probs.items):
                return None
            picked: Value | None = probs.items[k]
        else:
            picked = select(x, probs.items, span)
        if not isinstance(picked, Scalar):
            return None
        return _call(log, picked, span)
    if dist.family == BERNOULLI:
        p = dist.arg("probs")
        if not isinstance(p, Scalar):
            return None
        xt = x.as_term(span)
        pt = p.as_term(span)
        one = Num(1.0, span)
        hit = Op("*", xt, _call(log, p, span).as_term(span), span)
        miss_p = Scalar(REAL_TYPE, term=Op("-", one, pt, span))
        miss = Op("*", Op("-", one, xt, span), _call(log, miss_p, span).as_term(span), span)
        return Scalar(REAL_TYPE, term=Op("+", hit, miss, span))
    if dist.family == NORMAL:
        mu, sigma = dist.arg("loc"), dist.arg("scale")
        if not isinstance(mu, Scalar) or not isinstance(sigma, Scalar):
            return None
        z = Op("/", Op("-", x.as_term(span), mu.as_term(span), span), sigma.as_term(span), span)
        quad = Op("*", Num(-0.5, span), Op("*", z, z, span), span)
        norm = Op(
            "+", _call(log, sigma, span).as_term(span), Num(0.5 * math.log(2 * math.pi), span), span
        )
        return Scalar(REAL_TYPE, term=Op("-", quad, norm, span))
    return None


def _call(fn: str, x: Scalar, span: Span) -> Scalar:
    if x.static is not None and not isinstance(x.static, str) and fn == LOG and x.static > 0:
        return real(math.log(x.static))
    return Scalar(REAL_TYPE, term=Call(fn, (x.as_term(span),), span))


def describe(v: Value) -> str:
    """A value's type as a message writes it."""
    t = type_of(v)
    if t is not None:
        return written(t)
    if isinstance(v, Closure):
        return "a function"
    if isinstance(v, Items):
        return f"a list of {len(v.items)} values of different types"
    return "a value"
