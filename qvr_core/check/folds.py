"""quivers' `fold(xs, init, acc -> x -> body)` in a model's `let`: a left fold.

quivers 0.25.2 (`dsl/qiec_lowering.py`, `_lower_collection_value`, its `fold` case) takes
three arguments: a non-scalar tensor xs of statically known leading extent n, an initial
value, and a lambda curried with the accumulator first and the entry second (`acc -> x
-> body`; "fold's lambda is curried as `acc -> item -> body`" otherwise), written inline
or bound by a `let` (`_collection_lambda`). Its value is the body applied n times: the
accumulator starts as init, and step i substitutes the accumulator so far for `acc` and
`xs[i]` for `x` (quivers unrolls the substitutions; `docs/reference/qvr/
collection-expressions.md` gives the result the type of init). Here xs's leading axis
is its first plate, so `x` is a value over xs's other plates, the accumulator has init's
type, and the body must give that type again: a step that changes it would make the
fold's type depend on its length. The runtime runs the lowered `terms.Fold` as a loop
that carries the accumulator (`runtime/evaluate.py`); this module types it and reports
its misuses where they are written.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from qvr_core.builtins.functions import FOLD
from qvr_core.check.comprehensions import collection_plate
from qvr_core.check.lambdas import lambda_argument, too_many_parameters
from qvr_core.check.terms import fold_accumulator
from qvr_core.check.types import Plated
from qvr_core.syntax import ast
from qvr_core.text import rules
from qvr_core.text.diagnostics import Related

if TYPE_CHECKING:
    from qvr_core.check.passes import ModelPass

USAGE = f"{FOLD.name}(xs, init, acc -> x -> body)"


def fold_type(mc: ModelPass, node: ast.Apply) -> Plated | None:
    """The type of a `fold`: its init's, once the body is checked to give it again."""
    ctx = mc.ctx
    if len(node.args) != 3:
        ctx.report(rules.ARGUMENT_COUNT, f"{FOLD.name} takes 3 values: {USAGE}", node.span)
        for a in node.args:  # what is not a lambda is read as a value
            if lambda_argument(mc, a) is None:
                mc.arith(a)
        return None
    source, init, f = node.args
    xs = mc.arith(source)
    start = mc.arith(init)
    outer = lambda_argument(mc, f)
    if outer is None or not isinstance(outer.body, ast.Lambda):
        what = "a lambda of one parameter" if outer is not None else ctx.source(f.span)
        ctx.report(
            rules.WRONG_KIND,
            f"the third value of {FOLD.name} is a lambda of the accumulator, then the entry, "
            f"`acc -> x -> body` (quivers' fold takes it curried), not {what}: {USAGE}",
            f.span,
        )
        if outer is None:
            mc.arith(f)
        return None
    inner = outer.body
    if too_many_parameters(mc, inner, f, USAGE):
        return None
    along = collection_plate(mc, FOLD.name, node, source, xs)
    if along is None or start is None:
        return None
    plate, entry = along
    assert isinstance(source, ast.Var)  # `collection_plate` says so
    acc, item = outer.param, inner.param
    ctx.record_type(
        acc.span,
        start,
        f"a {FOLD.name}'s accumulator: {ctx.source(init.span)}, then each step's value",
    )
    ctx.record_type(
        item.span,
        entry,
        f"a {FOLD.name}'s entry: each entry of {source.name.text} along {plate.name}, in order",
    )
    saved = dict(mc.binders)
    mc.binders[acc.text] = start
    mc.binders[item.text] = entry  # the inner parameter shadows the outer of its name
    try:
        body = mc.arith(inner.body)
    finally:
        mc.binders.clear()
        mc.binders.update(saved)
    if body is None:
        return None
    if not _same(body, start):
        ctx.report(
            rules.ARITHMETIC_DIMENSIONS,
            f"the body of this {FOLD.name} is {body.label}, but its accumulator is "
            f"{start.label}, init's type ({ctx.source(init.span)}): each step's value is the "
            "next step's accumulator, so the body must give init's type",
            inner.body.span,
            related=(Related(init.span, f"init, {start.label}"),),
        )
        return None
    mc.accumulators[fold_accumulator(node.span)] = tuple(p.name for p in start.plates)
    return start


def _same(a: Plated, b: Plated) -> bool:
    """Whether two values have one shape: the same plates, the same rows of the data and
    the same shape of one draw (numbers of any support are alike: arithmetic makes them
    real numbers). The plates are compared as a set: the checker lists an operator's
    plates left operand first (`x + acc` of an `x : B` and an `acc : A * B` is `B * A`)
    while its tensor has the runtime's layout, so the order written is no difference."""
    return (
        set(a.plates) == set(b.plates)
        and len(a.plates) == len(b.plates)
        and a.data_plates == b.data_plates
        and a.element.event == b.element.event
    )
