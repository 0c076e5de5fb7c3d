"""The values of a `define` over vectors: `z : State -> Real`, `z[0]`, `[du, dv]`.

A right-hand side of an ODE (`ode_rk45`'s f) is written as Stan writes its function:

    define lotka_volterra(t : Real, z : State -> Real, theta : Param -> Real) : State -> Real !{} =
        let u = z[0]
        let du = (theta[0] - theta[1] * z[1]) * u
        ...
        return [du, dv]

A parameter typed `A -> Real` (A a declared finite set) is a vector of |A| numbers, one per
element of A, as a model's `sample z : A <- ...` is. In the body a number picks one entry
(counted from 0, as in a model's lets), arithmetic and elementwise functions work entry by
entry (a number broadcasts; two vectors must be of one length), and a list of numbers
`[a, b]` is a vector of its length. That is all the body of such a function needs, and all
the runtime's solver evaluates (`runtime.ode`), entry by entry; anything else (an index
that is not a number, a reduction, a list of vectors) keeps the names-only check.

`value_type` types one lowered term (`terms.lower`) over the names bound so far; errors are
reported where they are written and give None, what is not typed raises `NotTyped`.
"""

from __future__ import annotations

from collections.abc import Mapping

from qvr_core.builtins import FUNCTIONS
from qvr_core.check.context import Context
from qvr_core.check.defines import NUMBER
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
from qvr_core.check.types import Element, Plated
from qvr_core.text import rules

#: Functions a vector define may call: one value per entry, whatever the entries.
_ENTRYWISE = frozenset(
    name for name, f in FUNCTIONS.items() if f.shape == "elementwise" and not f.reduces_alone
)


class NotTyped(Exception):
    """A construct the checker does not type in a define over vectors (the reason)."""


def length(t: Plated) -> int | None:
    """How many numbers a define's value holds: 0 for a number, n for a vector of n (its
    one plate's size, or its one axis's: a list), None for anything else."""
    axes = [p.size for p in t.plates] + list(t.element.event)
    if t.data_plates or len(axes) > 1:
        return None
    return axes[0] if axes else 0


def vector(n: int) -> Plated:
    """A list of n numbers, `[a, b]`."""
    return Plated((), Element("real", (n,)))


def value_type(ctx: Context, term: Term, types: Mapping[str, Plated], define: str) -> Plated | None:
    """The type of `term` in define `define`, whose bound names have `types` (every name
    it reads is bound: the caller reports the others first)."""
    match term:
        case Num():
            return NUMBER
        case Ref(name=name):
            return types[name]
        case Unary(operand=operand):
            return value_type(ctx, operand, types, define)
        case Op(left=left, right=right):
            parts = [value_type(ctx, left, types, define), value_type(ctx, right, types, define)]
            return _entrywise(ctx, term, parts, define)
        case Call(fn=fn, args=args, axis=None) if fn in _ENTRYWISE:
            parts = [value_type(ctx, a, types, define) for a in args]
            return _entrywise(ctx, term, parts, define)
        case Call(fn=fn):
            raise NotTyped(f"its function {fn} over vectors")
        case Gather(base=base, indices=indices):
            return _entry(ctx, term, types[base], indices, define)
        case Stack(items=items):
            for item in items:
                t = value_type(ctx, item, types, define)
                if t is None:
                    return None
                if t != NUMBER:
                    raise NotTyped("its list of vectors")
            return vector(len(items))
        case Comprehension():
            raise NotTyped("its factor expression")
        case Fold():
            raise NotTyped("its fold")
    raise NotTyped("its expressions")


def _entrywise(ctx: Context, term: Term, parts: list[Plated | None], define: str) -> Plated | None:
    """Arithmetic or a function entry by entry: a number broadcasts, two vectors are of
    one length (the value keeps the first vector's type, which names its set)."""
    if any(p is None for p in parts):
        return None
    out = NUMBER
    for p in parts:
        assert p is not None
        n, m = length(out), length(p)
        if n is None or m is None:
            raise NotTyped("its values of several axes")
        if m == 0:
            continue
        if n and n != m:
            ctx.report(
                rules.ARITHMETIC_DIMENSIONS,
                f"in define {define}, {ctx.source(term.span)} works entry by entry on vectors "
                f"of {n} and {m} entries: give them one length",
                term.span,
            )
            return None
        if not n:
            out = p
    return out


def _entry(
    ctx: Context, term: Gather, base: Plated, indices: tuple[Term | None, ...], define: str
) -> Plated | None:
    """`z[0]`: one entry of a vector, picked by a whole number from 0 below its length."""
    n = length(base)
    if n is None:
        raise NotTyped("its values of several axes")
    index = indices[0] if len(indices) == 1 else None
    value = _number(index)
    if value is None:
        raise NotTyped("its index that is not a number")
    assert index is not None
    if not n:
        ctx.report(
            rules.INDEX_PLATE,
            f"'{term.base}' is one number in define {define}: it has no entries to pick",
            term.span,
        )
        return None
    if value != int(value) or not 0 <= value < n:
        ctx.report(
            rules.INDEX_PLATE,
            f"'{term.base}' has {n} entries in define {define}: an index is a whole number "
            f"from 0 to {n - 1}, not {ctx.source(index.span)}",
            index.span,
        )
        return None
    return NUMBER


def _number(index: Term | None) -> float | None:
    """The number an index is written as (`0`, or `-1`, which is reported), or None."""
    if isinstance(index, Unary) and index.op == "-" and isinstance(index.operand, Num):
        return -index.operand.value
    return index.value if isinstance(index, Num) else None
