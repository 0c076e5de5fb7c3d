"""Objects whose size is written with names or several numbers: `Real D`, `Real 4 8`,
`FinSet N`.

quivers 0.25.2 resolves a constructor's size arguments one by one (`dsl/compiler/
resolution.py`): a whole number, or the name of a finite object declared before, which
stands for its number of elements. `Real` multiplies several sizes into one (`Real 4 8`
is R^32); every other constructor takes exactly one. `FinSet N` with a name is that
object itself. A name of a continuous space, or of nothing, is refused. qvr types these
sides as it types `Real 32`: an unnamed object of that size, named as written.

`Real N {low=a, high=b}` bounds every coordinate (quivers' bounded `Euclidean`): the
bounds are numbers, high above low. As in quivers' runtime, they are read by what bins
values (`role=discretize`) and shown in hover; a draw into such a space is not
truncated.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from qvr_core.builtins.objects import FINSET, OBJECT_CONSTRUCTORS
from qvr_core.check.types import CONSTRUCTORS, ObjectType, Product, dims_text
from qvr_core.syntax import ast
from qvr_core.syntax.builder import MAX_OBJECT_SIZE
from qvr_core.text import rules

if TYPE_CHECKING:
    from collections.abc import Callable

    from qvr_core.check.context import Context
    from qvr_core.text.span import Span

    #: How a written object is typed (`declarations.resolve_type`).
    Resolve = Callable[[Context, ast.ObjectExpr | None], Product | None]


def names_in(ref: ast.ObjCtor) -> tuple[str, ...]:
    """The object names a sized constructor's arguments read."""
    return tuple(a.raw for a in ref.args if a.kind == "name")


def resolve_sized(
    ctx: Context, ref: ast.ObjCtor, resolve: Resolve, name: str | None = None
) -> Product | None:
    """The one-factor product `ref` denotes (None after an error, which is reported).

    `resolve` types a written object (`declarations.resolve_type`); `name`: the declared
    object it defines (`object X : Real D`), else the side is named as written."""
    ctor = ref.constructor.text
    kind = CONSTRUCTORS[ctor]
    if ctor == FINSET and len(ref.args) == 1 and ref.args[0].kind == "name":
        return _same_object(ctx, ref, ref.args[0], name, resolve)
    if len(ref.args) > 1 and not OBJECT_CONSTRUCTORS[ctor].fuses_sizes:
        ctx.report(
            rules.OBJECT_SIZE,
            f"{ctor} takes one size, but {len(ref.args)} are given (only Real multiplies "
            f"several sizes into one: `Real 4 8` is R^32)",
            ref.span,
        )
        return None
    sizes: list[int] = []
    for arg in ref.args:
        size = _size_of(ctx, arg, resolve)
        if size is None:
            return None
        sizes.append(size)
    size = math.prod(sizes)
    if size > MAX_OBJECT_SIZE:
        ctx.report(
            rules.OBJECT_SIZE,
            f"{ctx.source(ref.span)} has {size:,} dimensions, more than a tensor axis holds",
            ref.span,
        )
        return None
    room_for_a_simplex(ctx, kind, size, ctx.source(ref.span), ref.span)
    bounds = _bounds(ctx, ref)
    if bounds is None:
        return None
    written = name if name is not None else ctx.source(ref.span)
    found = ObjectType(written, kind, size, low=bounds[0], high=bounds[1])
    product = Product((found,), (written,))
    ctx.record_type(ref.span, product)
    return product


def room_for_a_simplex(ctx: Context, kind: str, size: int, written: str, span: Span) -> None:
    """QVR210 for a `Simplex` of fewer than 2 entries, as written."""
    if kind == "simplex" and size < 2:
        ctx.report(
            rules.SIMPLEX_TOO_SMALL,
            f"{written} has no room for a probability vector: use at least 2",
            span,
        )


def _bounds(ctx: Context, ref: ast.ObjCtor) -> tuple[float | None, float | None] | None:
    """`{low=a, high=b}`: numbers, high above low, as quivers checks them (None after an
    error, reported; the registry has said which options the constructor takes)."""
    found: dict[str, float] = {}
    for o in ref.options:
        v = o.value
        if not (isinstance(v, ast.Literal) and v.kind in ("int", "float")):
            ctx.report(
                rules.INVALID_OPTION_VALUE,
                f"{o.key.text} of {ref.constructor.text} must be a number",
                o.span,
            )
            return None
        if o.key.text in found:
            ctx.report(rules.DUPLICATE_OPTION, f"{o.key.text} is given twice", o.span)
            return None
        found[o.key.text] = float(v.value)
    low, high = found.get("low"), found.get("high")
    if low is not None and high is not None and high <= low:
        ctx.report(
            rules.INVALID_OPTION_VALUE,
            f"high={high} must be greater than low={low}",
            ref.span,
        )
        return None
    return (low, high)


def _size_of(ctx: Context, arg: ast.Literal, resolve: Resolve) -> int | None:
    """A size argument's value: the number, or the number of elements of the finite
    object it names."""
    if arg.kind == "int":
        value = int(arg.raw)
        if value < 1:
            ctx.report(
                rules.OBJECT_SIZE,
                f"a size must be at least 1, but it is {value}: a zero-dimensional space "
                "has no values",
                arg.span,
            )
            return None
        return value
    why = "which has no number of elements: a size is a whole number or a finite object"
    product = _finite(ctx, arg, why, resolve)
    return None if product is None else product.size


def _same_object(
    ctx: Context, ref: ast.ObjCtor, arg: ast.Literal, name: str | None, resolve: Resolve
) -> Product | None:
    """`FinSet N`: the finite object N itself, as quivers resolves it."""
    product = _finite(ctx, arg, "not a finite set", resolve)
    if product is None:
        return None
    written = (name,) if name is not None else product.written
    found = Product(product.factors, written)
    ctx.record_type(ref.span, found)
    return found


def _finite(ctx: Context, arg: ast.Literal, otherwise: str, resolve: Resolve) -> Product | None:
    """The finite object a size argument names, or None with an error (QVR212 for a
    space: `otherwise` says what it is not)."""
    product = _named(ctx, arg, resolve)
    if product is not None and not product.discrete:
        ctx.report(rules.OBJECT_SIZE, f"'{arg.raw}' is {dims_text(product)}, {otherwise}", arg.span)
        return None
    return product


def _named(ctx: Context, arg: ast.Literal, resolve: Resolve) -> Product | None:
    """The object a size argument names, resolved as any written object is (its use
    recorded; an undefined name or another kind of declaration reported)."""
    name = ast.Name(arg.raw, arg.span)
    return resolve(ctx, ast.TypeRef((name,), arg.span))
