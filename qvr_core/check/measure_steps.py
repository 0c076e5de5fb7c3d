"""Steps of quivers' measure algebra: distributions built from distributions.

`observe y <- Mixture([pi, 1.0 - pi], [PointMass(0.0), Restrict(Poisson(rate), 1.0)])`
(a hurdle model), `sample x <- Restrict(Normal(mu, 1.0), 0.0)` (a truncated Normal),
`observe z <- Pushforward(Normal(m, s), Exp)` (a LogNormal, spelled out).

quivers' meaning (`quivers.qiec.reference_families`, `program_elaboration`): each
operator builds a measure. `Mixture(w, [c_k])` weighs its components (log density
log sum_k w_k p_k(x), mass sum_k w_k m_k), `Restrict(b, low, high)` keeps the base on
[low, high] without rescaling it (its mass is the base's mass there), `Normalize(b)`
divides by the mass, `PointMass(v)` puts mass 1 on v, `Pushforward(b, B)` maps the base
through a bijection. A step normalises the measure it draws from at its boundary, so
`Restrict(Normal(0.0, 1.0), 0.0)` at a step is the half-Normal, while inside a
`Mixture` a restriction keeps its mass, which is how a hurdle's counts above 0 take the
weight 1 - pi whatever the rate.

The checker binds every argument at every depth as a family site's arguments
(`ModelChecker.bind_family`), so the names they read, their plates and their literal
checks are the family site's; it works out the set the values lie in (`Measure.support`),
which inference maps a latent into and the runtime checks data against. What no run can
do is reported here, at the construct: a vector family inside a measure, a latent with
part of its mass on single values, a `PointMass` drawn alone (a `let`), a bijection that
takes values its base does not give.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Protocol

from qvr_core.builtins import FAMILIES, Constraint, Family, Param, bind, resolved
from qvr_core.builtins.bijectors import BIJECTORS
from qvr_core.check.declarations import report_binding
from qvr_core.check.model import Argument, Measure
from qvr_core.syntax import ast
from qvr_core.text import rules

if TYPE_CHECKING:
    from qvr_core.check.context import Context
    from qvr_core.text.span import Span

#: Support kinds of the whole numbers a count family draws, and of real numbers.
_COUNTS = ("nonnegative_integer", "positive_integer", "integer_interval", "boolean")


class Binder(Protocol):
    """What binds a family's arguments in a Bayesian program (`ModelChecker`)."""

    @property
    def ctx(self) -> Context: ...

    def bind_family(self, family: Family, call: ast.Call) -> tuple[Argument, ...]: ...

    def bind_argument(self, param: Param | None, node: object) -> Argument: ...

    def check_literals(self, family: Family, args: tuple[Argument, ...]) -> None: ...


def measure_typed(node: object, plain: Callable[[object], bool], *, top: bool = True) -> bool:
    """Whether the model checker types this step source as a measure: a call of an
    operator whose distribution arguments are calls of registry families (nested
    operators included), every other argument one `plain` admits (a family argument)."""
    if not isinstance(node, ast.Call):
        return False
    family = FAMILIES.get(node.callee.text)
    if family is None or (top and family.measure is None):
        return False
    for arg in (*node.args, *(kw.value for kw in node.kwargs)):
        if isinstance(arg, ast.Call) and arg.callee.text in FAMILIES:
            if not measure_typed(arg, plain, top=False):
                return False
        elif isinstance(arg, ast.ListArg) and any(isinstance(i, ast.Call) for i in arg.items):
            if not all(measure_typed(i, plain, top=False) for i in arg.items):
                return False
        elif not plain(arg):
            return False
    return True


def build_measure(mc: Binder, call: ast.Call, kind: str, target: str) -> Measure | None:
    """The measure a step of kind `kind` draws `target` from, every argument bound and
    typed; None where it is reported (and the step has no site)."""
    m = _measure(mc, call, top=True)
    if m is None:
        return None
    ctx = mc.ctx
    if kind == "marginalize":
        ctx.report(
            rules.WRONG_KIND,
            f"a marginalize sums out a family's finitely many values; {m.family} builds a "
            "measure, which is drawn (`sample`) or observed",
            call.callee.span,
        )
        return None
    if kind == "sample" and FAMILIES[m.family].measure == "point":
        ctx.report(
            rules.WRONG_KIND,
            f"PointMass puts all its mass on one value, so '{target}' is no random draw: "
            f"bind it with `let {target} = ...`",
            call.callee.span,
        )
        return None
    if kind == "sample" and m.point and not m.support.discrete:
        ctx.report(
            rules.WRONG_KIND,
            f"'{target}' would be part discrete (a PointMass's value) and part continuous, "
            "which no gradient-based sampler moves: observe such a mixture (zero-inflated "
            "data), or draw the continuous part and the choice apart",
            call.callee.span,
        )
        return None
    return m


def _measure(mc: Binder, call: ast.Call, *, top: bool) -> Measure | None:
    """One node: a number family (a leaf) or an operator with its parts."""
    ctx = mc.ctx
    family = FAMILIES.get(call.callee.text)
    if family is None:
        ctx.undefined(call.callee, "family", list(FAMILIES))
        return None
    family = resolved(family)
    if family.measure is None:
        return _leaf(mc, family, call)
    keywords = {kw.key.text: kw.value for kw in call.kwargs}
    bound = bind(family, list(call.args), keywords)
    if isinstance(bound, str):
        report_binding(ctx, family, bound, call.span)
        return None
    schema, values = bound
    args: list[Argument] = []
    parts: list[Measure] = []
    bijector: str | None = None
    joined = 0
    ok = True
    for p in schema:
        node = values.get(p.name)
        if node is None:
            continue
        kind = p.constraint.kind
        if kind == "measure":
            part = _part(mc, family, p, node)
            ok = ok and part is not None
            parts += [part] if part is not None else []
        elif kind == "measures":
            found = _components(mc, family, p, node)
            ok = ok and found is not None
            parts += found or []
        elif kind == "bijector":
            bijector = _bijector(ctx, node)
            ok = ok and bijector is not None
        elif kind == "plate_count":
            count = _plate_count(ctx, family, p, node)
            ok = ok and count is not None
            joined = count or 0
        else:
            args.append(mc.bind_argument(p, node))
    if not ok:
        return None
    mc.check_literals(family, tuple(args))
    m = Measure(family.name, call.span, tuple(args), tuple(parts), bijector, joined=joined)
    return _with_support(ctx, m, family, top)


def _leaf(mc: Binder, family: Family, call: ast.Call) -> Measure | None:
    ctx = mc.ctx
    why = (
        "draws a vector or matrix; the measure algebra combines number families"
        if family.event_rank
        else "is a morphism's family"
        if family.kernel_only or family.dirac
        else "is an improper prior, with no mass to weigh or restrict"
        if family.improper
        else "draws a chain along a plate"
        if family.chain
        else ""
    )
    if why:
        ctx.report(rules.WRONG_KIND, f"{family.name} {why}", call.callee.span)
        return None
    args = mc.bind_family(family, call)
    mc.check_literals(family, args)
    return Measure(family.name, call.span, args, support=_leaf_support(family, args))


def _part(mc: Binder, family: Family, p: Param, node: object) -> Measure | None:
    if isinstance(node, ast.Call):
        return _measure(mc, node, top=False)
    _not_what_it_takes(mc.ctx, family, p, node)
    return None


def _components(mc: Binder, family: Family, p: Param, node: object) -> list[Measure] | None:
    if not isinstance(node, ast.ListArg) or not node.items:
        _not_what_it_takes(mc.ctx, family, p, node)
        return None
    found = [_part(mc, family, p, item) for item in node.items]
    parts = [m for m in found if m is not None]
    return parts if len(parts) == len(found) else None


def _not_what_it_takes(ctx: Context, family: Family, p: Param, node: object) -> None:
    span: Span = node.span  # type: ignore[attr-defined]  # every argument node has one
    ctx.report(
        rules.FAMILY_ARGUMENTS,
        f"the {p.name} of {family.name} is {p.constraint.describe()}, not "
        f"{ctx.source(span)}: {family.signature()}",
        span,
    )


def _plate_count(ctx: Context, family: Family, p: Param, node: object) -> int | None:
    """How many plates an `Independent` joins: a whole number written out, since the
    shape of one observation cannot wait for a value."""
    if isinstance(node, ast.Literal) and node.kind == "int" and int(node.value) >= 0:
        return int(node.value)
    _not_what_it_takes(ctx, family, p, node)
    return None


def _bijector(ctx: Context, node: object) -> str | None:
    name = (
        node.name
        if isinstance(node, ast.NameRef)
        else ast.Name(str(node.value), node.span)
        if isinstance(node, ast.Literal) and node.kind == "name"
        else None
    )
    if name is None or name.text not in BIJECTORS:
        span: Span = name.span if name is not None else node.span  # type: ignore[attr-defined]  # every argument node has a span
        ctx.did_you_mean(
            rules.FAMILY_ARGUMENTS,
            f"{ctx.source(span)} is no bijection",
            span,
            name.text if name is not None else "",
            list(BIJECTORS),
            otherwise=f": use one of {', '.join(BIJECTORS)}",
        )
        return None
    return name.text


# ---------------------------------------------------------------- supports


def supported(ctx: Context, m: Measure, *, top: bool = True) -> Measure | None:
    """`m`, built elsewhere (a computation's draw from a `Mixture`, call_steps.py), with
    the set each node's values lie in worked out as for a step's; None where reported."""
    family = FAMILIES[m.family]
    if family.measure is None:
        return replace(m, support=_leaf_support(family, m.args))
    found = [supported(ctx, p, top=False) for p in m.parts]
    parts = tuple(p for p in found if p is not None)
    if len(parts) != len(found):
        return None
    return _with_support(ctx, replace(m, parts=parts), family, top)


def _leaf_support(family: Family, args: tuple[Argument, ...]) -> Constraint:
    """A number family's support, its bounds named by parameters read from the literal
    arguments; a bound given by a name widens to what the kind allows."""
    s = family.support
    literal = {a.param: a.literal for a in args if isinstance(a.literal, float)}

    def end(b: float | str | None) -> float | None:
        return literal.get(b) if isinstance(b, str) else b

    low, high = end(s.low), end(s.high)
    if s.kind in ("index", "ordinal"):
        return Constraint("nonnegative_integer")
    if (s.low is not None and low is None) or (s.high is not None and high is None):
        if s.discrete:
            return Constraint("nonnegative_integer")
        return Constraint("real") if low is None else Constraint("greater_than_eq", low)
    return Constraint(s.kind, low, high)


def _with_support(ctx: Context, m: Measure, family: Family, top: bool) -> Measure | None:
    """`m` with the set its values lie in; None where no value is possible (reported)."""
    match family.measure:
        case "point":
            value = next((a.literal for a in m.args if isinstance(a.literal, float)), None)
            whole = value is not None and value.is_integer() and value >= 0
            support = Constraint("nonnegative_integer") if whole else Constraint("real")
            return replace(m, support=support, point=True)
        case "rescaled":
            base = m.parts[0]
            return replace(m, support=base.support, point=base.point)
        case "pushforward":
            return _pushed(ctx, m)
        case "restrict" | "truncated":
            return replace(m, support=_restricted(m, top), point=m.parts[0].point)
        case "mixture":
            return _mixed(ctx, m)
        case "independent":
            base = m.parts[0]
            if not top:
                ctx.report(
                    rules.WRONG_KIND,
                    f"{m.family} reads the step's plates as one observation, so it is the "
                    "step's whole distribution: write it outermost",
                    m.span,
                )
                return None
            return replace(m, support=base.support, point=base.point)
        case _:
            return m


def _pushed(ctx: Context, m: Measure) -> Measure | None:
    base = m.parts[0]
    b = BIJECTORS[m.bijector or "Identity"]
    if base.support.discrete or base.point:
        ctx.report(
            rules.FAMILY_ARGUMENTS,
            f"{base.family} draws whole numbers; Pushforward maps a continuous base",
            base.span,
        )
        return None
    if b.name == "Identity":
        return replace(m, support=base.support)
    carried = _carried(base.support, b.forward)
    if not _within(base.support, b.domain):
        ctx.report(
            rules.FAMILY_ARGUMENTS,
            f"{b.name} takes {Constraint(b.domain).describe()}s, but {base.family} draws "
            f"{base.support.describe()}: choose a bijection defined on its values",
            base.span,
        )
        return None
    return replace(m, support=carried or Constraint(b.image))


def _carried(s: Constraint, forward: Callable[[float], float]) -> Constraint | None:
    """The image of a base's interval with ends written as numbers (a truncation's):
    every bijection increases, so its ends map to the image's; None where the base has
    no such end (the image is then the bijection's whole range)."""
    low = s.low if isinstance(s.low, float) and s.kind != "real" else None
    high = s.high if isinstance(s.high, float) and s.kind != "real" else None
    if low is None and high is None:
        return None
    try:
        ends = [forward(e) if e is not None else None for e in (low, high)]
    except (OverflowError, ValueError):  # an end outside what floats hold
        return None
    lo, hi = ends
    if lo is not None and hi is not None:
        return Constraint("interval", lo, hi)
    if lo is not None:
        return Constraint("greater_than_eq", lo)
    return Constraint("less_than_eq", None, hi)


def _within(s: Constraint, kind: str) -> bool:
    """Every value of `s` is a value of the support kind `kind` (real, positive, unit)."""
    if kind == "real":
        return True
    low = s.low if isinstance(s.low, float) else None
    high = s.high if isinstance(s.high, float) else None
    if kind == "positive":
        return s.kind in ("positive", "unit_interval") or (low is not None and low > 0)
    return s.kind == "unit_interval" or (
        low is not None and high is not None and low > 0 and high < 1
    )


def _restricted(m: Measure, top: bool) -> Constraint:
    """The base's support cut to [low, high]: a bound written as a name is the site's own
    argument where the restriction is the step's whole measure (`site_bounds` reads it),
    and widens the set inside another measure."""
    base = m.parts[0].support
    given = {a.param: a for a in m.args}

    def bound(param: str) -> float | str | None:
        a = given.get(param)
        if a is None:
            return None
        if isinstance(a.literal, float):
            return a.literal
        return param if top and not a.index else None

    low, high = bound("low"), bound("high")
    if base.discrete:
        floor = base.low if isinstance(base.low, float) else 0.0
        if isinstance(low, float):
            floor = max(floor, float(int(-(-low // 1))))  # the first whole number >= low
        if high is not None:
            return Constraint("integer_interval", floor, high)
        return Constraint("positive_integer" if floor == 1 else "nonnegative_integer")
    if base.kind in ("positive", "nonnegative") and low is None:
        low = 0.0
    if base.kind == "unit_interval":
        low, high = (0.0 if low is None else low), (1.0 if high is None else high)
    if low is not None and high is not None:
        return Constraint("interval", low, high)
    if low is not None:
        return Constraint("greater_than_eq", low)
    if high is not None:
        return Constraint("less_than_eq", None, high)
    return base


def _mixed(ctx: Context, m: Measure) -> Measure | None:
    """A mixture's support: its components' where they agree; the reals where continuous
    ones differ; whole numbers where every one is discrete (a point at a whole number
    counts as one). Continuous and discrete components together are no density."""
    weights = next((a for a in m.args if a.param == "weights"), None)
    n = _entries(weights)
    if n is not None and n != len(m.parts):
        assert weights is not None
        ctx.report(
            rules.FAMILY_ARGUMENTS,
            f"Mixture has {len(m.parts)} components but {n} weights: give one weight each",
            weights.span,
        )
        return None
    point = any(p.point for p in m.parts)
    solid = [p for p in m.parts if FAMILIES[p.family].measure != "point"]
    kinds = {p.support.discrete for p in solid}
    if kinds == {True, False}:
        counts = next(p for p in solid if p.support.discrete)
        ctx.report(
            rules.FAMILY_ARGUMENTS,
            f"{counts.family} draws whole numbers and another component real ones: a "
            "mixture's components are all discrete or all continuous",
            counts.span,
        )
        return None
    supports = {p.support for p in m.parts}  # a point's: whole numbers, if it is one
    if len(supports) == 1:
        support = supports.pop()
    elif all(s.discrete for s in supports):
        support = Constraint("nonnegative_integer")
    else:
        support = Constraint("real")
    return replace(m, support=support, point=point)


def _entries(a: Argument | None) -> int | None:
    if a is None:
        return None
    if isinstance(a.literal, tuple):
        return len(a.literal)
    event = a.type.element.event if a.type is not None else ()
    return event[-1] if event and event[-1] >= 0 else None


__all__ = ["Binder", "build_measure", "measure_typed"]
