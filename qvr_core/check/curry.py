"""`f.curry_right` and `f.curry_left`: a relation on a product read as one into a residual.

quivers 0.25.2 (`core/morphisms.py`, `CurriedMorphism`) takes `f : X * Y -> Z` and
presents the same tensor as `f.curry_right : X -> Z/Y` (the last factor of the domain
moves across the arrow) or `f.curry_left : Y -> X\\Z` (the first one does); a domain
that is not a product of at least two factors is refused there. Nothing is computed:
the residuation is an isomorphism, the identity on the tensor's entries.

qvr reads the residual of finite sets as the relations of V-valued tensors do (they are
compact closed): a value of `Z/Y` is a pair of a `Y` and a `Z`, so the curried relation
is the |X| x |Y*Z| matrix whose entry `(x, (y, z))` is `f`'s `((x, y), z)`, and it
composes with whatever reads `Y * Z`. Its tensor for `curry_right` is quivers' tensor,
axis for axis; for `curry_left` it is the same entries with the moved factor's axis
after the domain's (quivers keeps the inner tensor's axis order under every direction).
It is a relation with no draws, of finite sets on both sides (`runtime/relations.py`,
`Curried`): under a declared composition rule its entries are the rule's; without one
`f` is qvr's kernel and they are its probabilities (a row of the curried relation sums to
|Y|, so it is no kernel to draw from), where quivers' undeclared rule is product_fuzzy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from qvr_core.check.types import Arrow, Product
from qvr_core.syntax import ast
from qvr_core.syntax.ast import CURRY
from qvr_core.text import rules

if TYPE_CHECKING:
    from qvr_core.check.passes import Env


def curried(inner: Arrow, direction: str) -> Arrow | str:
    """The type of `inner` curried, or why it cannot be: the domain keeps all its factors
    but the one that moves, and the codomain is the residual written as quivers writes it
    (`Z/Y`, `X\\Z`), whose values are the moved factor's and then the codomain's."""
    dom, cod = inner.dom, inner.cod
    if not isinstance(dom, Product) or len(dom.factors) < 2:
        return f"needs a domain that is a product of two or more objects, not {dom.label}"
    if not isinstance(cod, Product) or not (dom.discrete and cod.discrete):
        return f"curries a relation between finite sets, not {inner.label}"
    names = _factor_names(dom)
    if direction == "right":
        moved, kept = dom.factors[-1], dom.factors[:-1]
        kept_names, moved_name = names[:-1], names[-1]
        written = f"{_grouped(cod)}/{moved_name}"
    else:
        moved, kept = dom.factors[0], dom.factors[1:]
        kept_names, moved_name = names[1:], names[0]
        written = f"{moved_name}\\{_grouped(cod)}"
    return Arrow(Product(kept, kept_names), Product((moved, *cod.factors), (written,)))


def check_curry(env: Env, expr: ast.Method, inner: Arrow | None) -> Arrow | None:
    """Type `f.curry_right` / `f.curry_left` (`inner`: f's type, None after an error)."""
    ctx = env.ctx
    method = expr.method.text
    if inner is None:
        return None
    t = curried(inner, CURRY[method])
    if isinstance(t, str):
        ctx.report(rules.ROLE_TYPE_MISMATCH, f"`.{method}` {t}", expr.receiver.span)
        return None
    return t


def _factor_names(p: Product) -> tuple[str, ...]:
    """Each factor's name as the user wrote it where the written names are one a factor,
    else the base objects' names (an alias of a product is split into its factors)."""
    if len(p.written) == len(p.factors):
        return p.written
    return p.names


def _grouped(p: Product) -> str:
    return p.label if len(p.written) == 1 else f"({p.label})"
