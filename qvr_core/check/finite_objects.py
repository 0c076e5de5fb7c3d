"""Finite sets made of others: coproducts `X + Y` and free monoids `FreeMonoid(X, max_length=n)`.

quivers 0.25.2 builds `object S : X + Y` over finite sets as a `CoproductSet` of
|X| + |Y| elements (X's first), and `object W : FreeMonoid(X, max_length=n)` as the
coproduct `Unit + X + X*X + ... + X^n`: every word of length 0 to n over X, 1 + |X| +
... + |X|^n elements (`core/objects.py`; its compiler refuses generators that are no
finite set). As a plate or a value each is a FinSet of that size, which is what qvr
types; hover says how it is made. A coproduct with a continuous side, or a product
inside one, keeps the names-only check (QVR011).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from qvr_core.builtins.objects import FREE_MONOID
from qvr_core.check.context import SymbolKey
from qvr_core.check.types import ObjectType
from qvr_core.check.unchecked import note, refer
from qvr_core.syntax import ast
from qvr_core.text import rules
from qvr_core.text.units import format_count

if TYPE_CHECKING:
    from qvr_core.check.context import Context

#: The most elements such a set may have: its values are int64 indices, and a latent over
#: it is sized by the memory estimate.
MAX_ELEMENTS = 2**31 - 1


def is_finite_construction(body: ast.ObjectExpr | None) -> bool:
    """Whether an object's right-hand side is a coproduct or a free monoid."""
    return (isinstance(body, ast.ObjBinary) and body.op == "+") or (
        isinstance(body, ast.ObjApply) and body.func.text == FREE_MONOID
    )


def check_finite_constructions(ctx: Context, decls: list[ast.ObjectDecl]) -> None:
    """Type each, what one uses first (in any order; a cycle is reported)."""
    pending = {d.name.text: d for d in decls}
    for name in list(pending):
        _resolve(ctx, name, pending, ())


def _resolve(
    ctx: Context, name: str, pending: dict[str, ast.ObjectDecl], chain: tuple[str, ...]
) -> ObjectType | None:
    if name in ctx.objects:
        return ctx.objects[name]
    decl = pending.pop(name, None)
    if decl is None:
        return None
    body = decl.body
    if isinstance(body, ast.ObjApply):
        found = _free_monoid(ctx, decl, body, pending, (*chain, name))
    else:
        assert isinstance(body, ast.ObjBinary)
        found = _coproduct(ctx, decl, body, pending, (*chain, name))
    if found is not None:
        ctx.objects[name] = found
    return found


def _side(
    ctx: Context,
    side: ast.ObjectExpr,
    pending: dict[str, ast.ObjectDecl],
    chain: tuple[str, ...],
) -> ObjectType | str | None:
    """A finite set one side names; a reason (str) where it is something else; None
    after an error reported elsewhere."""
    if isinstance(side, ast.ObjBinary) and side.op == "+":
        parts = [_side(ctx, s, pending, chain) for s in (side.left, side.right)]
        if not all(isinstance(p, ObjectType) for p in parts):
            return next((p for p in parts if not isinstance(p, ObjectType)), None)
        a, b = parts
        assert isinstance(a, ObjectType) and isinstance(b, ObjectType)
        return ObjectType(f"{a.name} + {b.name}", "finset", a.size + b.size)
    if not isinstance(side, ast.TypeRef) or len(side.factors) != 1:
        return "a part that is not one named finite set"
    ref = side.factors[0]
    if ref.text in chain:
        ctx.report(
            rules.CYCLIC_DEFINITION,
            f"object {chain[0]} is made of itself: {' -> '.join((*chain, ref.text))}",
            ref.span,
        )
        return None
    alias = ctx.aliases.get(ref.text)
    if alias is not None:  # `object A : X`, a second name of one set
        ctx.ref(ref.span, SymbolKey(ref.text))
        if len(alias.factors) != 1:
            return f"{ref.text}, which is the product {alias.label}"
        found: ObjectType | None = alias.factors[0]
    elif ref.text in pending or ref.text in ctx.objects:
        ctx.ref(ref.span, SymbolKey(ref.text))
        found = _resolve(ctx, ref.text, pending, chain)
    elif ref.text in ctx.object_decls:
        ctx.ref(ref.span, SymbolKey(ref.text))
        return None  # an object with an error or names only, said where it is declared
    else:
        ctx.undefined(ref, "object", list(ctx.object_decls))
        return None
    if found is None:
        return None
    if not found.discrete:
        return f"{ref.text}, which is {found.describe()}"
    return found


def _coproduct(
    ctx: Context,
    decl: ast.ObjectDecl,
    body: ast.ObjBinary,
    pending: dict[str, ast.ObjectDecl],
    chain: tuple[str, ...],
) -> ObjectType | None:
    made = _side(ctx, body, pending, chain)
    if isinstance(made, str):
        refer(ctx, body)
        note(ctx, decl.name.span, f"object {decl.name.text} (a coproduct with {made})")
        return None
    if made is None:
        return None
    return _sized(ctx, decl, made.size, ctx.source(body.span), "elements, left first")


def _free_monoid(
    ctx: Context,
    decl: ast.ObjectDecl,
    body: ast.ObjApply,
    pending: dict[str, ast.ObjectDecl],
    chain: tuple[str, ...],
) -> ObjectType | None:
    generators = [a for a in body.args if not isinstance(a, ast.Option)]
    options = {o.key.text: o for o in body.args if isinstance(o, ast.Option)}
    for key, o in options.items():
        if key != "max_length":
            ctx.unknown_option(o.key, FREE_MONOID, ("max_length",))
    length = options.get("max_length")
    v = length.value if length is not None else None
    if not (isinstance(v, ast.Literal) and v.kind == "int" and int(v.value) >= 0):
        ctx.report(
            rules.INVALID_OPTION_VALUE,
            f"{FREE_MONOID} needs max_length=<whole number>: the longest word it holds",
            length.span if length is not None else body.span,
        )
        return None
    if len(generators) != 1:
        ctx.report(
            rules.ARGUMENT_COUNT,
            f"{FREE_MONOID} takes one finite set of generators: {FREE_MONOID}(X, max_length=3)",
            body.span,
        )
        return None
    made = _side(ctx, generators[0], pending, chain)
    if isinstance(made, str):
        ctx.report(
            rules.WRONG_KIND,
            f"{FREE_MONOID}'s generators must be a declared finite set, not {made}",
            generators[0].span,
        )
        return None
    if made is None:
        return None
    n = int(v.value)
    size = 0
    for k in range(n + 1):
        size += made.size**k
        if size > MAX_ELEMENTS:
            break
    return _sized(ctx, decl, size, ctx.source(body.span), f"words of length 0 to {n}")


def _sized(
    ctx: Context, decl: ast.ObjectDecl, size: int, written: str, what: str
) -> ObjectType | None:
    if size > MAX_ELEMENTS:
        ctx.report(
            rules.INVALID_OPTION_VALUE,
            f"object {decl.name.text} would have more than {format_count(MAX_ELEMENTS)} "
            "elements: make it smaller",
            decl.body.span,
        )
        return None
    found = ObjectType(decl.name.text, "finset", size, closure=written)
    ctx.record_type(decl.name.span, found, f"{format_count(size)} {what}")
    return found
