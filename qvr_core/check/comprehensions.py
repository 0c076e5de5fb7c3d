"""quivers' `factor` expression in a model's `let`: a value assembled over finite objects.

`let cell = factor v : Verb, c : Class in delta[v] + mu[c]` is the value over the plates
Verb and Class whose entry at (i, j) is the body with `v` = i and `c` = j;
`factor c : Class in {0 -> a, 1 -> b}` has one entry per case, labelled by its index.
quivers' compiler (0.25.2, `dsl/qiec_lowering.py`, `_lower_factor`) builds both as
nested comprehensions: shape `(|Verb|, |Class|, *body_shape)`, the binders whole
numbers visible in the body only, the case labels covering `0..|Class|-1` exactly and
every case of one type. The checker types it the same way: each binder is one entry of
its object (an index that a gather `delta[v]` reads as a discrete value does), and the
result's plates are the binders' objects, then the body's own.

The runtime evaluates the lowered `terms.Comprehension`; this module only types it and
reports its misuses where they are written.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from qvr_core.builtins.functions import MAP
from qvr_core.check.context import SymbolKey
from qvr_core.check.lambdas import lambda_argument, too_many_parameters
from qvr_core.check.terms import binder_object
from qvr_core.check.types import Element, ObjectType, Plated
from qvr_core.syntax import ast
from qvr_core.text import rules

if TYPE_CHECKING:
    from qvr_core.check.passes import ModelPass


def factor_type(mc: ModelPass, node: ast.Factor) -> Plated | None:
    """The type of a `factor` expression, its misuses reported where they are written."""
    ctx = mc.ctx
    plates: list[ObjectType] = []
    names: list[str] = []  # each plate's binder
    bound: dict[str, Plated] = {}
    ok = True
    for name, obj in node.binders:
        ref = binder_object(obj)
        target = ctx.objects.get(ref.text) if ref is not None else None
        if ref is None or target is None or not target.discrete or target.size < 0:
            ctx.report(
                rules.WRONG_KIND,
                f"the binder {name.text} of a factor ranges over a declared finite object "
                f"(`object Class : FinSet 4`), not {ctx.source(obj.span)}",
                obj.span,
            )
            ok = False
            continue
        ctx.ref(ref.span, SymbolKey(target.name))
        if target in plates:  # quivers' (|K|, |K|) table has two axes of one plate
            ctx.report(
                rules.ARITHMETIC_DIMENSIONS,
                f"two binders of this factor range over {target.name}: a value has each "
                "plate once, so declare a second object of its size for the other axis",
                obj.span,
            )
            ok = False
            continue
        plates.append(target)
        names.append(name.text)
        one = Plated((), Element("index", (), target.name))
        bound[name.text] = one
        ctx.record_type(name.span, one, f"a factor's binder: each entry of {target.name} in turn")
    if not ok:
        return None
    outer = dict(mc.binders)
    mc.binders.update(bound)
    try:
        if node.body is not None:
            body = mc.arith(node.body)
            return None if body is None else _over(mc, plates, names, body, node.body)
        return _cases(mc, node, plates, names)
    finally:
        mc.binders.clear()
        mc.binders.update(outer)


def _over(
    mc: ModelPass, plates: list[ObjectType], names: list[str], body: Plated, at: ast.Arith
) -> Plated | None:
    """The factor's type: the binders' plates, then the body's own; a body over one of
    the binders' plates has no place in it (quivers would give it a second axis)."""
    again = [p for p in body.plates if p in plates]
    if again:
        binder = names[plates.index(again[0])]
        mc.ctx.report(
            rules.ARITHMETIC_DIMENSIONS,
            f"the body of this factor is a value over {again[0].name}, which its binder "
            f"{binder} ranges over: index the value by {binder} (`x[{binder}]`) for its entry",
            at.span,
        )
        return None
    if body.data_plates:
        mc.gaps.append(
            f"line {at.span.start_line + 1}: the body of a factor reads values the data "
            "sizes, which the model runtime cannot lay out after the factor's plates yet"
        )
    return Plated((*plates, *body.plates), body.element, body.data_plates)


def _cases(
    mc: ModelPass, node: ast.Factor, plates: list[ObjectType], names: list[str]
) -> Plated | None:
    """`factor c : Class in {0 -> a, 1 -> b}`: one binder, labels covering its object's
    entries exactly, every case the same kind of value."""
    ctx = mc.ctx
    if len(plates) != 1:
        ctx.report(
            rules.ARITHMETIC_DIMENSIONS,
            "a factor with cases has one binder (write the others' axes with a body, "
            "`factor v : V, c : C in ...`)",
            node.span,
        )
        for _, value in node.cases:
            mc.arith(value)
        return None
    plate = plates[0]
    seen: set[int] = set()
    ok = True
    for label, _ in node.cases:
        entry = label.value
        if not isinstance(entry, int) or isinstance(entry, bool) or not 0 <= entry < plate.size:
            ctx.report(
                rules.ARITHMETIC_DIMENSIONS,
                f"a case of a factor over {plate.name} is labelled by one of its entries, "
                f"0 to {plate.size - 1}: not {label.raw}",
                label.span,
            )
            ok = False
        elif entry in seen:
            ctx.report(rules.ARITHMETIC_DIMENSIONS, f"a second case labelled {entry}", label.span)
            ok = False
        else:
            seen.add(entry)
    missing = [k for k in range(plate.size) if k not in seen]
    if ok and missing:
        shown = ", ".join(str(k) for k in missing[:5]) + (", ..." if len(missing) > 5 else "")
        ctx.report(
            rules.ARITHMETIC_DIMENSIONS,
            f"this factor over {plate.name} ({plate.size} entries) has no case for {shown}: "
            "its cases label every entry once",
            node.span,
        )
        ok = False
    types = [(value, mc.arith(value)) for _, value in node.cases]
    first = types[0][1] if types else None
    for value, t in types[1:]:
        if first is None or t is None:
            break
        if t.plates != first.plates or t.element.event != first.element.event:
            ctx.report(
                rules.ARITHMETIC_DIMENSIONS,
                f"every case of a factor is the same kind of value: this one is {t.label}, "
                f"the first {first.label}",
                value.span,
            )
            ok = False
    if not ok or first is None or any(t is None for _, t in types):
        return None
    kinds = {t.element.kind for _, t in types if t is not None}
    element = first.element if len(kinds) == 1 else Element("real", first.element.event)
    case_type = Plated(first.plates, element, first.data_plates)
    return _over(mc, plates, names, case_type, node.cases[0][1])


def map_type(mc: ModelPass, node: ast.Apply) -> Plated | None:
    """quivers' `map(xs, x -> body)` (0.25.2, `qiec_lowering.py`, `_lower_map`): the body
    with `x` each entry of xs along its leading axis, stacked on a new leading axis. Here
    that axis is xs's first plate: `x` is a value over xs's other plates, and the result
    is over that plate, then the body's own. Its misuses are reported where written."""
    ctx = mc.ctx
    usage = f"{MAP.name}(xs, x -> body)"
    if len(node.args) != 2:
        ctx.report(
            rules.ARGUMENT_COUNT,
            f"{MAP.name} takes 2 values: {usage}",
            node.span,
        )
        for a in node.args:  # what is not a lambda is read as a value
            if lambda_argument(mc, a) is None:
                mc.arith(a)
        return None
    source, written = node.args
    xs = mc.arith(source)
    f = lambda_argument(mc, written)
    if f is None:
        ctx.report(
            rules.WRONG_KIND,
            f"the second value of {MAP.name} is a lambda, `x -> body`, written there or "
            f"bound by a `let`, not {ctx.source(written.span)}: {usage}",
            written.span,
        )
        mc.arith(written)
        return None
    if too_many_parameters(mc, f, written, usage):
        return None
    along = collection_plate(mc, MAP.name, node, source, xs)
    if along is None:
        return None
    plate, entry = along
    assert isinstance(source, ast.Var)  # `collection_plate` says so
    param = f.param.text
    ctx.record_type(
        f.param.span, entry, f"a {MAP.name}'s parameter: each entry of {source.name.text}"
    )
    outer = dict(mc.binders)
    mc.binders[param] = entry
    try:
        body = mc.arith(f.body)
    finally:
        mc.binders.clear()
        mc.binders.update(outer)
    if body is None:
        return None
    if plate in body.plates:
        ctx.report(
            rules.ARITHMETIC_DIMENSIONS,
            f"the body of this {MAP.name} is a value over {plate.name}, which {MAP.name} "
            f"runs over: quivers would give it {plate.name} twice (read one entry, or "
            "compute the value without map)",
            f.body.span,
        )
        return None
    return Plated((plate, *body.plates), body.element, body.data_plates)


def collection_plate(
    mc: ModelPass, verb: str, node: ast.Apply, source: ast.Arith, xs: Plated | None
) -> tuple[ObjectType, Plated] | None:
    """The plate a `map` or `fold` runs along (its collection's first) and the type of one
    entry (a value over the collection's other plates); the misuses reported where
    written. The collection is a name: quivers indexes it entry by entry."""
    ctx = mc.ctx
    if not isinstance(source, ast.Var):
        ctx.report(
            rules.WRONG_KIND,
            f"the collection {verb} runs over is written as a name here: bind "
            f"{ctx.source(source.span)} with a `let` first",
            source.span,
        )
        return None
    if xs is None:
        return None
    if not xs.plates:
        ctx.report(
            rules.ARITHMETIC_DIMENSIONS,
            f"{verb} runs along the first plate of its collection, and "
            f"{source.name.text} is {xs.label}, over no plate",
            source.span,
        )
        return None
    if xs.data_plates:
        mc.gaps.append(
            f"line {node.span.start_line + 1}: {verb} over a value the data sizes, "
            "which the model runtime cannot lay out yet"
        )
    return xs.plates[0], Plated(xs.plates[1:], xs.element, xs.data_plates)
