"""`f.marginalize(A, ...)`: a morphism with factors of its codomain summed out.

quivers 0.25.2 (`core/morphisms.py`, `Morphism.marginalize`, a `MarginalizedMorphism`)
join-reduces the morphism's tensor over the codomain components named, which must be
finite sets of its product codomain; the result's codomain is the product of the others,
in their order. Under a declared composition rule that is the rule's join over those
axes; for qvr's kernels (no rule declared) it is the marginal law: draw the whole value
and keep the other factors, and score a value by summing the kernel's probability over
every value of the factors summed out (`runtime/relations.py`, `Marginalized`).

`summed_out` says which factors a call sums out; the checker types the call with it and
the lowering passes its answer to the runtime, so both read one rule.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from qvr_core.check.context import SymbolKey
from qvr_core.check.types import Arrow, Product, ValueType
from qvr_core.syntax import ast
from qvr_core.text import rules

if TYPE_CHECKING:
    from qvr_core.check.passes import Env

MARGINALIZE = "marginalize"


def summed_out(cod: ValueType, names: Sequence[str]) -> tuple[int, ...] | str:
    """The indices of the codomain factors `names` sums out (each name the next factor of
    that name not yet taken), or why it cannot."""
    if not isinstance(cod, Product) or not cod.factors:
        return f"sums out factors of a product codomain, not {cod.label}"
    taken: list[int] = []
    for name in names:
        found = next(
            (i for i, f in enumerate(cod.factors) if f.name == name and i not in taken), None
        )
        if found is None:
            return f"{name} is not a factor of its codomain {cod.label}"
        if not cod.factors[found].discrete:
            return f"sums out finite sets, and {name} is {cod.factors[found].describe()}"
        taken.append(found)
    if len(taken) == len(cod.factors):
        return f"would sum out every factor of its codomain {cod.label}: keep one"
    return tuple(taken)


def marginalized(inner: Arrow, drop: tuple[int, ...]) -> Arrow:
    """The type of the call: the codomain without the factors summed out."""
    cod = inner.cod
    assert isinstance(cod, Product)
    keep = [i for i in range(len(cod.factors)) if i not in drop]
    parallel = len(cod.written) == len(cod.factors)
    factors = tuple(cod.factors[i] for i in keep)
    written = tuple(cod.written[i] if parallel else cod.factors[i].name for i in keep)
    return Arrow(inner.dom, Product(factors, written))


def check_marginalize(env: Env, expr: ast.Method, inner: Arrow | None) -> Arrow | None:
    """Type `f.marginalize(A, ...)` (`inner`: f's type, None after an error)."""
    ctx = env.ctx
    args = expr.args or ()
    names = [a.name for a in args if isinstance(a, ast.NameRef)]
    if not names or len(names) != len(args):
        ctx.report(
            rules.ARGUMENT_NOT_A_NAME,
            f"{MARGINALIZE} takes the objects of the codomain to sum out: "
            f"{ctx.source(expr.receiver.span)}.{MARGINALIZE}(A, B)",
            expr.method.span,
        )
        return None
    ok = True
    for n in names:
        if n.text in ctx.object_decls:
            ctx.ref(n.span, SymbolKey(n.text))
        else:
            ctx.undefined(n, "object", list(ctx.object_decls))
            ok = False
    if inner is None or not ok:
        return None
    drop = summed_out(inner.cod, [n.text for n in names])
    if isinstance(drop, str):
        ctx.report(
            rules.ROLE_TYPE_MISMATCH,
            f"{ctx.source(expr.receiver.span)}.{MARGINALIZE}(...) {drop}",
            expr.span,
        )
        return None
    return marginalized(inner, drop)
