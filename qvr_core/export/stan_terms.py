"""Checked terms (`qvr_core.check.terms`) written as Stan expressions, with their Stan types.

Stan is typed where QVR broadcasts: `tau * theta_raw` is `real * vector`, but two
vectors multiply entrywise only with `.*`, an integer array takes part in arithmetic
only through `to_vector`, and `int / int` rounds. So every expression is printed
together with its `Value` (its Stan container and the axes it runs over, outermost
first), and an operation is written only where Stan has one of exactly QVR's
meaning: two values over different plates (which torch would broadcast by position),
a comparison of vectors, a remainder, a function Stan lacks, are `Unsupported`
problems located at the term, never code that means something else.

A `Ctx` maps plates to the loop variables of the loops the code runs in: inside
`for (n in 1:Point)` a value over `Point` is read at `[n]` (a marginalised scope
sums each group in turn, and a family Stan does not vectorise is written entry by
entry).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import FunctionType
from typing import Literal

from qvr_core.builtins import FUNCTIONS as BUILTINS
from qvr_core.check.terms import Call, Gather, Num, Op, Ref, Stack, Term, Unary
from qvr_core.export.named import members, named
from qvr_core.export.plan import Unsupported
from qvr_core.text.span import Span

Kind = Literal["int", "real", "vector", "row_vector", "matrix", "ints", "vectors"]
Ctx = Mapping[str, str]


@dataclass(frozen=True)
class Value:
    """The Stan type of a value: its container and its axes, outermost first.

    The last `event` axes are one draw's own (a simplex's entries, `#3` when no
    plate names them); the others are plates. `vectors` is an array of vectors
    (`array[State] simplex[State]`), `ints` an array of integers (one or two axes).
    """

    kind: Kind
    axes: tuple[str, ...] = ()
    event: int = 0

    @property
    def plates(self) -> tuple[str, ...]:
        return self.axes[: len(self.axes) - self.event]

    @property
    def scalar(self) -> bool:
        return self.kind in ("int", "real")

    def first_dropped(self) -> Value:
        """The value of one entry along its first axis (`x[n]`)."""
        rest = self.axes[1:]
        event = min(self.event, len(rest))
        kind: Kind
        match self.kind:
            case "vector" | "row_vector":
                kind = "real"
            case "matrix":
                kind = "row_vector"
            case "ints":
                kind = "ints" if rest else "int"
            case _:  # "vectors": one vector
                kind = "vector"
        return Value(kind, rest, event)


INT = Value("int")
REAL = Value("real")


@dataclass(frozen=True)
class Binding:
    """What a QVR name is in the Stan program.

    `index` names the 1-based copy of an integer data variable that indexes (qvr reads
    indices from 0, Stan counts from 1; the data file stays as it is). `offset` is set
    for a summed-out coordinate, whose Stan loop variable runs over `offset + value`
    (1 for a Categorical's index, 0 for a Bernoulli's 0 and 1). `block` says where it
    is declared: parameter bounds may only read data and earlier parameters.
    """

    stan: str
    value: Value
    index: str | None = None
    offset: int | None = None
    block: str = "data"


@dataclass(frozen=True)
class Printed:
    """A Stan expression, its type, and how tightly its outermost operator binds."""

    text: str
    value: Value
    prec: int = 10


# binding strengths, loosest first (Stan's own order)
_OR, _AND, _EQ, _CMP, _ADD, _MUL, _NEG, _POW, ATOM = 1, 2, 3, 4, 5, 6, 7, 8, 10
_PREC = {
    "||": _OR,
    "&&": _AND,
    "==": _EQ,
    "!=": _EQ,
    "<": _CMP,
    "<=": _CMP,
    ">": _CMP,
    ">=": _CMP,
    "+": _ADD,
    "-": _ADD,
    "*": _MUL,
    "/": _MUL,
}


class _Elementwise:
    """QVR functions with a Stan function of the same meaning, entry by entry (Stan
    vectorises each over vectors and matrices), named after the registry's entry. Not
    `round`: torch rounds halves to even, Stan away from zero."""

    sigmoid = "inv_logit"
    tanh = "tanh"
    exp = "exp"
    expm1 = "expm1"
    log = "log"
    log1p = "log1p"
    log2 = "log2"
    log10 = "log10"
    sqrt = "sqrt"
    rsqrt = "inv_sqrt"
    square = "square"
    abs = "abs"
    reciprocal = "inv"
    sin = "sin"
    cos = "cos"
    tan = "tan"
    asin = "asin"
    acos = "acos"
    atan = "atan"
    sinh = "sinh"
    cosh = "cosh"
    asinh = "asinh"
    acosh = "acosh"
    atanh = "atanh"
    floor = "floor"
    ceil = "ceil"
    trunc = "trunc"
    erf = "erf"
    erfc = "erfc"
    lgamma = "lgamma"
    digamma = "digamma"
    softplus = "log1p_exp"
    logsigmoid = "log_inv_logit"


ELEMENTWISE = named(_Elementwise, BUILTINS, str)


class _NotWritten:
    """Builtins Stan has (under these names) that the export does not write yet: a let of
    a matrix needs a declared `matrix[N, N]` the export has no size for."""

    gp_exp_quad_cov = (
        "Stan's gp_exp_quad_cov returns a matrix, which the export does not declare yet"
    )
    add_diag = "Stan's add_diag returns a matrix, which the export does not declare yet"
    cholesky = "Stan's cholesky_decompose returns a matrix, which the export does not declare yet"
    matvec = "a matrix times a vector (Stan's `*`): the export does not declare matrices yet"


_NOT_WRITTEN = named(_NotWritten, BUILTINS, str)
#: Stan functions the printer may be handed as `Call("stan:<name>", ...)` when a
#: family's argument is written through one (`multiply_lower_tri_self_transpose(L)`).
STAN_PREFIX = "stan:"


class _Reduce:
    """A whole value to one number."""

    sum = "sum"
    mean = "mean"
    prod = "prod"
    logsumexp = "log_sum_exp"


class _Extreme:
    """One argument: its smallest (largest) entry; two: the elementwise one of the two."""

    min = ("min", "fmin")
    max = ("max", "fmax")


class _Rowwise:
    """Along one vector."""

    softmax = "softmax"
    log_softmax = "log_softmax"
    cumsum = "cumulative_sum"
    sort = "sort_asc"


class _DividedBySum:
    """Along one vector, written as the vector over its sum."""

    normalize = True


class _Infix:
    """Written as Stan's power operator (`a ^ b`; `.^` elementwise)."""

    pow = True


_REDUCE = named(_Reduce, BUILTINS, str)
_EXTREME = named(_Extreme, BUILTINS, tuple)
_ROWWISE = named(_Rowwise, BUILTINS, str)
_DIVIDED_BY_SUM = members(_DividedBySum, BUILTINS)
_INFIX = members(_Infix, BUILTINS)
_CONTAINERS = ("vector", "row_vector", "matrix")


def real_literal(v: float) -> str:
    """A number as a Stan real literal (`5.0`, `0.25`, `1.0e-06`)."""
    text = repr(float(v))
    mantissa, _, exponent = text.partition("e")
    if "." not in mantissa:
        mantissa += ".0"
    return f"{mantissa}e{exponent}" if exponent else mantissa


class Printer:
    """Prints terms; a term Stan cannot say is recorded in `problems` and gives None.

    `failed` holds names whose own declaration was refused (with its reason): a term
    reading one gives None without a second problem."""

    def __init__(
        self,
        lookup: Callable[[str], Binding | None],
        problems: list[Unsupported],
        failed: set[str] | None = None,
    ) -> None:
        self.lookup = lookup
        self.problems = problems
        self.failed = failed if failed is not None else set()

    def no(self, span: Span, message: str) -> None:
        self.problems.append(Unsupported(span, message))

    def unknown(self, name: str, span: Span) -> None:
        if name not in self.failed:
            self.no(span, f"`{name}` has no value in the exported program")

    # ------------------------------------------------------------------ terms

    def expr(self, term: Term, ctx: Ctx) -> Printed | None:
        match term:
            case Num(value=value):
                return Printed(real_literal(value), REAL)
            case Ref(name=name, span=span):
                return self._ref(name, span, ctx)
            case Unary():
                return self._unary(term, ctx)
            case Op():
                return self._op(term, ctx)
            case Call():
                return self._call(term, ctx)
            case Gather():
                return self._gather(term, ctx)
            case Stack(items=items, span=span):
                parts = [self.expr(i, ctx) for i in items]
                if any(p is None for p in parts):
                    return None
                done = [p for p in parts if p is not None]
                if not all(p.value.scalar for p in done):
                    self.no(span, "a list of vectors; Stan stacks numbers only")
                    return None
                text = ", ".join(p.text for p in done)
                return Printed(f"[{text}]'", Value("vector", (f"#{len(done)}",), 1))

    def _ref(self, name: str, span: Span, ctx: Ctx) -> Printed | None:
        b = self.lookup(name)
        if b is None:
            self.unknown(name, span)
            return None
        if b.offset is not None:  # a summed coordinate's value, from its loop variable
            if b.offset == 0:
                return Printed(b.stan, INT)
            return Printed(f"({b.stan} - {b.offset})", INT)
        p = at(Printed(b.stan, b.value), ctx)
        if p.value.kind == "ints":  # integers in arithmetic are reals, as in qvr
            kind: Kind = "vector" if len(p.value.axes) == 1 else "matrix"
            fn = "to_vector" if kind == "vector" else "to_matrix"
            return Printed(f"{fn}({p.text})", Value(kind, p.value.axes))
        return p

    def _unary(self, term: Unary, ctx: Ctx) -> Printed | None:
        inner = self.expr(term.operand, ctx)
        if inner is None:
            return None
        if inner.value.kind == "vectors":
            self.no(term.span, "arithmetic on an array of vectors; Stan has none")
            return None
        if term.op == "-":
            return Printed(f"-{wrap(inner, _NEG)}", inner.value, _NEG)
        if not inner.value.scalar:
            self.no(term.span, "`not` of a vector; Stan negates numbers only")
            return None
        return Printed(f"({inner.text} == 0)", INT)

    def _op(self, term: Op, ctx: Ctx) -> Printed | None:
        left = self.expr(term.left, ctx)
        right = self.expr(term.right, ctx)
        if left is None or right is None:
            return None
        if term.op == "%":
            self.no(term.span, "`%` (a remainder of reals with the divisor's sign); Stan has none")
            return None
        prec = _PREC[term.op]
        a, b = left.value, right.value
        if term.op in ("&&", "||", "==", "!=", "<", "<=", ">", ">="):
            if not (a.scalar and b.scalar):
                self.no(term.span, f"`{term.op}` of vectors; Stan compares numbers only")
                return None
            if term.op in ("&&", "||"):  # Stan's logic takes integers
                left, right = truth(left), truth(right)
            text = f"{wrap(left, prec)} {term.op} {wrap(right, prec + 1)}"
            return Printed(text, INT, prec)
        value = combined(a, b)
        if value is None:
            self.no(term.span, different(a, b))
            return None
        op = term.op
        if not a.scalar and not b.scalar and op in ("*", "/"):
            op = "." + op  # entry by entry, as qvr multiplies
        elif a.scalar and not b.scalar and op == "/":
            op = "./"
        if op == "/" and a.kind == "int" and b.kind == "int":  # a real quotient, as in qvr
            left = Printed(f"1.0 * {wrap(left, _MUL)}", REAL, _MUL)
        if value.kind == "int" and op == "/":
            value = REAL
        return Printed(f"{wrap(left, prec)} {op} {wrap(right, prec + 1)}", value, prec)

    def _call(self, term: Call, ctx: Ctx) -> Printed | None:
        args = [self.expr(a, ctx) for a in term.args]
        if any(a is None for a in args):
            return None
        xs = [a for a in args if a is not None]
        fn, span = term.fn, term.span
        if fn.startswith(STAN_PREFIX):
            return Printed(f"{fn[len(STAN_PREFIX) :]}({xs[0].text})", xs[0].value)
        if len(xs) == 1 and xs[0].value.kind == "vectors":
            self.no(span, f"`{fn}` of an array of vectors; the export writes it for vectors only")
            return None
        if fn in ELEMENTWISE:
            return Printed(f"{ELEMENTWISE[fn]}({xs[0].text})", real_of(xs[0].value))
        composed = _composed(fn, term)
        if composed is not None:
            return self.expr(composed, ctx)
        extreme = _EXTREME.get(fn)
        if fn in _REDUCE or (extreme is not None and len(xs) == 1):
            return self._reduce(term, xs[0])
        if extreme is not None:
            value = combined(xs[0].value, xs[1].value)
            if value is None:
                self.no(span, different(xs[0].value, xs[1].value))
                return None
            return Printed(f"{extreme[1]}({xs[0].text}, {xs[1].text})", real_of(value))
        if fn in _INFIX:
            value = combined(xs[0].value, xs[1].value)
            if value is None:
                self.no(span, different(xs[0].value, xs[1].value))
                return None
            op = "^" if value.scalar else ".^"
            # right-associative: the base binds tighter than `^`, the exponent as tightly
            text = f"{wrap(xs[0], _POW + 1)} {op} {wrap(xs[1], _POW)}"
            return Printed(text, real_of(value), _POW)
        if fn in _ROWWISE or fn in _DIVIDED_BY_SUM:
            x = xs[0]
            if x.value.kind != "vector":
                what = "a number" if x.value.scalar else "a matrix"
                self.no(span, f"`{fn}` of {what}; the export writes it along one vector")
                return None
            if fn in _DIVIDED_BY_SUM:
                return Printed(f"{wrap(x, _MUL)} / sum({x.text})", x.value, _MUL)
            return Printed(f"{_ROWWISE[fn]}({x.text})", x.value)
        self.no(span, f"`{fn}`: {_NOT_WRITTEN.get(fn, 'Stan has no function of the same meaning')}")
        return None

    def _reduce(self, term: Call, x: Printed) -> Printed | None:
        fn = term.fn
        if x.value.scalar:  # a number reduced is itself
            return Printed(x.text, real_of(x.value), x.prec)
        if term.axis is not None and len(x.value.axes) > 1:
            self.no(
                term.span, f"`{fn}` along one axis of a matrix; the export reduces whole values"
            )
            return None
        name = _REDUCE[fn] if fn in _REDUCE else _EXTREME[fn][0]
        return Printed(f"{name}({x.text})", REAL)

    # ---------------------------------------------------------------- gathers

    def _gather(self, term: Gather, ctx: Ctx) -> Printed | None:
        b = self.lookup(term.base)
        if b is None:
            self.unknown(term.base, term.span)
            return None
        if b.offset is not None:
            self.no(term.span, f"`{term.base}` is a summed-out coordinate, not a value to index")
            return None
        base = b.value
        if len(term.indices) > len(base.axes):
            self.no(term.span, f"`{term.base}` has {len(base.axes)} axes, not {len(term.indices)}")
            return None
        texts: list[str] = []
        kept: list[tuple[int, tuple[str, ...]]] = []  # (axis position, axes it becomes)
        arrays = 0
        for pos, (axis, index) in enumerate(zip(base.axes, term.indices, strict=False)):
            got = self._index(index, axis, ctx, term.span)
            if got is None:
                return None
            text, axes = got
            texts.append(text)
            if axes is not None:
                kept.append((pos, axes))
                arrays += axes != (axis,)
        if arrays > 1:
            self.no(
                term.span,
                "a gather by two index arrays: Stan would take every combination, qvr pairs them",
            )
            return None
        rest = [(pos, (a,)) for pos, a in enumerate(base.axes) if pos >= len(term.indices)]
        kept += rest
        while texts and texts[-1] == ":":
            texts.pop()
        text = f"{b.stan}[{', '.join(texts)}]" if texts else b.stan
        value = _gathered(base, kept)
        if value is None:
            self.no(term.span, f"this gather of `{term.base}` has no Stan type")
            return None
        return at(Printed(text, value), ctx)

    def _index(
        self, index: Term | None, axis: str, ctx: Ctx, span: Span
    ) -> tuple[str, tuple[str, ...] | None] | None:
        """One index: its text, and the axes it leaves (None: one entry, the axis is gone)."""
        if index is None:
            if axis in ctx:
                return ctx[axis], None
            return ":", (axis,)
        if isinstance(index, Num):
            if not float(index.value).is_integer() or index.value < 0:
                self.no(index.span, "an index that is not a whole number >= 0")
                return None
            return str(int(index.value) + 1), None
        if not isinstance(index, Ref):
            self.no(index.span, "an index computed by arithmetic; the export indexes by names")
            return None
        b = self.lookup(index.name)
        if b is None:
            self.unknown(index.name, index.span)
            return None
        if b.offset is not None:
            return (b.stan if b.offset == 1 else f"{b.stan} + {1 - b.offset}"), None
        if b.index is None:
            self.no(index.span, f"`{index.name}` holds no whole numbers to index by")
            return None
        p = at(Printed(b.index, b.value), ctx)
        if p.value.kind == "int":
            return p.text, None
        if p.value.kind == "ints" and len(p.value.axes) == 1:
            return p.text, p.value.axes
        self.no(index.span, f"`{index.name}` indexes with more than one axis")
        return None


def at(p: Printed, ctx: Ctx) -> Printed:
    """`p` read at the loop variables of the plates it leads with (`y` -> `y[n]`)."""
    while p.value.plates and p.value.axes[0] in ctx:
        p = Printed(f"{p.text}[{ctx[p.value.axes[0]]}]", p.value.first_dropped())
    return p


def wrap(p: Printed, prec: int) -> str:
    """`p`'s text, in parentheses where it binds more loosely than `prec` asks."""
    return p.text if p.prec >= prec else f"({p.text})"


def truth(p: Printed) -> Printed:
    """An integer that is 1 where `p` is not 0 (Stan's `&&` and `||` take integers)."""
    return p if p.value.kind == "int" else Printed(f"({p.text} != 0)", INT)


def real_of(v: Value) -> Value:
    return REAL if v.kind == "int" else v


def combined(a: Value, b: Value) -> Value | None:
    """The type of an entrywise operation of `a` and `b`; None where Stan has none of the
    same meaning (two containers of different types or axes, an array of vectors)."""
    if a.kind == "vectors" or b.kind == "vectors":
        return None
    if a.scalar and b.scalar:
        return INT if a.kind == b.kind == "int" else REAL
    if a.scalar:
        return b
    if b.scalar:
        return a
    if a.kind == b.kind and a.axes == b.axes:
        return a if a.event <= b.event else b
    return None


def different(a: Value, b: Value) -> str:
    """Why two values do not combine."""
    if a.kind == "vectors" or b.kind == "vectors":
        return "arithmetic on an array of vectors; Stan has none"
    return (
        f"values over {_axes_words(a)} and {_axes_words(b)} combined; the export writes "
        "arithmetic of values over the same plates (or a number with one)"
    )


def _axes_words(v: Value) -> str:
    return " * ".join(a.lstrip("#") for a in v.axes) or "nothing"


def _gathered(base: Value, kept: list[tuple[int, tuple[str, ...]]]) -> Value | None:
    """The type of a gather of `base` keeping these axis positions (each becoming the
    axes listed: itself, or an index array's rows)."""
    axes = tuple(a for _, new in kept for a in new)
    event_from = len(base.axes) - base.event
    event = sum(1 for pos, _ in kept if pos >= event_from)
    match base.kind:
        case "ints":
            return Value("ints", axes) if axes else INT
        case "vector" | "row_vector":
            if not axes:
                return REAL
            return Value(base.kind, axes, event)
        case "matrix":
            if not axes:
                return REAL
            if len(kept) == 2:
                return Value("matrix", axes, event)
            return Value("vector" if kept[0][0] == 0 else "row_vector", axes, event)
        case "vectors":
            positions = [pos for pos, _ in kept]
            if positions == [0, 1]:
                return Value("vectors", axes, 1)
            if positions == [1]:
                return Value("vector", axes, 1)
            return None if positions else REAL
        case _:
            return None


def _composed(fn: str, term: Call) -> Term | None:
    """The functions Stan writes as a composition of its own: the same term, rewritten."""
    x = term.args[0] if term.args else None
    build = _COMPOSED.get(fn)
    if x is None or len(term.args) != 1 or build is None:
        return None
    return build(x, term.span)


def _call(name: str, arg: Term, s: Span) -> Term:
    return Call(name, (arg,), s)


def _softsign(x: Term, s: Span) -> Term:
    return Op("/", x, Op("+", Num(1.0, s), _call("abs", x, s), s), s)


def _silu(x: Term, s: Span) -> Term:
    return Op("*", x, _call("sigmoid", x, s), s)


def _mish(x: Term, s: Span) -> Term:
    return Op("*", x, _call("tanh", _call("softplus", x, s), s), s)


def _gelu(x: Term, s: Span) -> Term:
    return Op("*", x, _call(STAN_PREFIX + "Phi", x, s), s)  # torch's exact form, x * Phi(x)


def _erfinv(x: Term, s: Span) -> Term:
    return _call(STAN_PREFIX + "inv_erfc", Op("-", Num(1.0, s), x, s), s)


def _relu(x: Term, s: Span) -> Term:
    return Call("max", (x, Num(0.0, s)), s)


class _Composition:
    """The functions Stan writes as a composition of its own, each `(x, span) -> term`,
    named after the registry's entry."""

    softsign = _softsign
    silu = _silu
    mish = _mish
    gelu = _gelu
    erfinv = _erfinv
    relu = _relu


_COMPOSED: dict[str, Callable[[Term, Span], Term]] = {
    name: build for name, build in named(_Composition, BUILTINS, FunctionType).items()
}


def declared(value: Value, size: Callable[[str], str], bounds: str = "", vector: str = "") -> str:
    """The Stan type that declares `value` (`vector<lower=0>[School]`); `vector` names a
    constrained vector type for the event (`simplex`)."""
    sizes = [size(a) for a in value.axes]
    match value.kind:
        case "int":
            return f"int{bounds}"
        case "real":
            return f"real{bounds}"
        case "vector" | "row_vector":
            return f"{vector or value.kind}{bounds}[{sizes[0]}]"
        case "matrix":
            return f"matrix{bounds}[{', '.join(sizes)}]"
        case "ints":
            return f"array[{', '.join(sizes)}] int{bounds}"
        case "vectors":
            return f"array[{sizes[0]}] {vector or 'vector'}{bounds}[{sizes[1]}]"


__all__ = [
    "ATOM",
    "INT",
    "REAL",
    "Binding",
    "Ctx",
    "Printed",
    "Printer",
    "Value",
    "at",
    "declared",
    "real_literal",
]
