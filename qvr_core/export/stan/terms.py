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

from collections.abc import Callable

from qvr_core.check.terms import (
    Call,
    Comprehension,
    Fold,
    Gather,
    Num,
    Op,
    Ref,
    Stack,
    Term,
    Unary,
)
from qvr_core.export.plan import NOT_EXPORTED_FACTOR, NOT_EXPORTED_FOLD, Unsupported
from qvr_core.export.stan.families import density_call, density_refusal
from qvr_core.export.stan.functions import (
    DIVIDED_BY_SUM,
    ELEMENTWISE,
    EXTREME,
    INFIX,
    NOT_WRITTEN,
    REDUCE,
    ROWWISE,
    STAN_PREFIX,
    composed,
)
from qvr_core.export.stan.values import (
    INT,
    REAL,
    Binding,
    Ctx,
    Kind,
    Printed,
    Value,
    at,
    combined,
    different,
    gathered,
    real_literal,
    real_of,
    truth,
    wrap,
)
from qvr_core.text.span import Span

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
            case Comprehension(span=span):
                self.no(span, NOT_EXPORTED_FACTOR)
                return None
            case Fold(span=span):
                self.no(span, NOT_EXPORTED_FOLD)
                return None

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
        if term.density is not None:  # `log_prob(F(a, b), x)`: Stan's density of F
            if not all(x.value.scalar for x in xs):
                self.no(span, f"log_prob of {term.density.family} over a vector")
                return None
            family, params = term.density.family, term.density.params
            why = density_refusal(family, params)
            if why is not None:
                self.no(span, why)
                return None
            return Printed(density_call(family, params, [x.text for x in xs]), REAL)
        if fn.startswith(STAN_PREFIX):
            return Printed(f"{fn[len(STAN_PREFIX) :]}({xs[0].text})", xs[0].value)
        if len(xs) == 1 and xs[0].value.kind == "vectors":
            self.no(span, f"`{fn}` of an array of vectors; the export writes it for vectors only")
            return None
        if fn in ELEMENTWISE:
            return Printed(f"{ELEMENTWISE[fn]}({xs[0].text})", real_of(xs[0].value))
        rewritten = composed(fn, term)
        if rewritten is not None:
            return self.expr(rewritten, ctx)
        extreme = EXTREME.get(fn)
        if fn in REDUCE or (extreme is not None and len(xs) == 1):
            return self._reduce(term, xs[0])
        if extreme is not None:
            value = combined(xs[0].value, xs[1].value)
            if value is None:
                self.no(span, different(xs[0].value, xs[1].value))
                return None
            return Printed(f"{extreme[1]}({xs[0].text}, {xs[1].text})", real_of(value))
        if fn in INFIX:
            value = combined(xs[0].value, xs[1].value)
            if value is None:
                self.no(span, different(xs[0].value, xs[1].value))
                return None
            op = "^" if value.scalar else ".^"
            # right-associative: the base binds tighter than `^`, the exponent as tightly
            text = f"{wrap(xs[0], _POW + 1)} {op} {wrap(xs[1], _POW)}"
            return Printed(text, real_of(value), _POW)
        if fn in ROWWISE or fn in DIVIDED_BY_SUM:
            x = xs[0]
            if x.value.kind != "vector":
                what = "a number" if x.value.scalar else "a matrix"
                self.no(span, f"`{fn}` of {what}; the export writes it along one vector")
                return None
            if fn in DIVIDED_BY_SUM:
                return Printed(f"{wrap(x, _MUL)} / sum({x.text})", x.value, _MUL)
            return Printed(f"{ROWWISE[fn]}({x.text})", x.value)
        self.no(span, f"`{fn}`: {NOT_WRITTEN.get(fn, 'Stan has no function of the same meaning')}")
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
        name = REDUCE[fn] if fn in REDUCE else EXTREME[fn][0]
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
        value = gathered(base, kept)
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


__all__ = ["ATOM", "Printer"]
