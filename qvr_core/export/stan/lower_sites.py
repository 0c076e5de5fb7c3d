"""The sites outside the scopes and what every site's distribution is in Stan.

A `sample` is a parameter, declared with its family's support as bounds or as a
constrained type (a `simplex`, a `cholesky_factor_corr`), and a `~` statement in source
order; an `observe` is the `~` statement alone (its data is declared in `data`). Stan
vectorises a family over the plates of its values where its arguments are numbers or
run over the same plates; where they differ per draw and are vectors themselves, the
draws are written one at a time in a loop. Inside a scope a site is a term of the
scope's sum instead: its exact log density, constants kept (`lpdf`).
"""

from __future__ import annotations

from qvr_core.builtins import FAMILIES, Constraint
from qvr_core.check.model import Site
from qvr_core.check.terms import Call, Gather, Num, Ref, refs
from qvr_core.export.stan.families import CONSTRAINED, FROM_ZERO, STAN_FAMILIES, StanFamily
from qvr_core.export.stan.lower_args import (
    EARLY,
    arg_term,
    arguments,
    dist,
    flat,
    param_rank,
    written_out,
)
from qvr_core.export.stan.lower_env import Env, declared
from qvr_core.export.stan.program import (
    NO_BOUNDS,
    Bounds,
    Comment,
    Declare,
    Draw,
    For,
    Statement,
    Type,
)
from qvr_core.export.stan.terms import Printer
from qvr_core.export.stan.values import INT, Binding, Ctx, Printed, Value, at, real_literal


def value_support(site: Site) -> Constraint:
    """The set a site's values lie in as Stan declares them: its family's support, or
    the one the checker worked out for a step of the measure algebra."""
    assert site.family is not None
    support = site.support if site.measure is not None else None
    return support or FAMILIES[site.family].support


def site_value(env: Env, site: Site) -> Value | None:
    """The Stan type of a site's value: its plates, then one draw's own axes."""
    support = value_support(site)
    plates = site.plates
    span = site.step.span
    for p in plates:
        if not env.axis_known(p):
            env.no(span, f"the plate `{p}` has no size the export knows")
            return None
    element = site.type.element if site.type is not None else None
    event_sizes = element.event if element is not None else ()
    if support.rank == 0:
        if len(plates) > 2:
            env.no(span, f"a value over {len(plates)} plates; the export writes two at most")
            return None
        if support.discrete:
            return Value("ints", plates) if plates else INT
        return Value(("real", "vector", "matrix")[len(plates)], plates)
    if len(event_sizes) != support.rank or any(n < 0 for n in event_sizes):
        env.no(span, "a draw whose size the export cannot tell")
        return None
    names = tuple(_event_axis(env, site, n) for n in event_sizes)
    if support.rank == 1 and not support.discrete:
        if len(plates) > 1:
            env.no(span, "vector draws over more than one plate; the export writes one")
            return None
        return Value("vectors" if plates else "vector", (*plates, *names), 1)
    if support.rank == 2 and not plates:
        return Value("matrix", names, 2)
    env.no(span, f"draws of {site.family} over plates; the export writes one")
    return None


def _event_axis(env: Env, site: Site, n: int) -> str:
    """The name of an axis of one draw: the plate that names it, else its size."""
    element = site.type.element if site.type is not None else None
    for name in (element.of if element is not None else None, *site.over):
        if name is not None and name in env.plan.plates and env.plan.plates[name].size == n:
            return name
    return f"#{n}"


def stan_family(env: Env, site: Site) -> StanFamily | None:
    """The Stan distribution of a site outside the scopes, or None with the problem: a
    family Stan has none of the same density for, or a discrete latent that no sum
    takes in (Stan has no discrete parameters)."""
    name = site.family
    span = site.step.span
    if name is None or name not in FAMILIES:
        env.no(span, f"`{name}` is no family the export knows")
        return None
    assert site.measure is None  # measures.py writes those, in scopes too
    family = FAMILIES[name]
    if family.discrete and site.name in env.plan.model.observed_lets:
        env.no(
            span,
            f"{name} observes whole numbers, and `{site.name}` is a let of the data, "
            "which Stan computes as reals in `transformed data`: observe a data name "
            "of whole numbers",
        )
        return None
    if site.kind == "sample" and family.discrete:  # not summed out (see `lower`)
        why = (
            "inside `marginalize`, where qvr does not sum it either"
            if family.support.finite
            else "with infinitely many values, which no sum takes in"
        )
        env.no(span, f"a discrete latent ({name}) {why}: Stan has no discrete parameters")
        return None
    spec = STAN_FAMILIES.get(name)
    if spec is None:
        env.no(span, f"{name}: Stan has no distribution of the same density")
    elif spec.logits is not None and any(a.param == "logits" for a in site.args):
        return spec.logits
    return spec


def parameter(env: Env, site: Site) -> None:
    """A `sample`'s parameter, declared within its family's support (bounds, or Stan's
    constrained type), so that Stan samples where qvr's density is defined; a step's
    `[constraint=ordered]` is Stan's `ordered[K]` (the plan has it over one plate)."""
    value = site_value(env, site)
    if value is None:
        return
    support = value_support(site)
    span = site.step.span
    name = env.stan_name(site.name, span)
    if name is None:
        return
    constrained = CONSTRAINED.get(support.kind, "")
    if site.constraint is not None:  # its own type, within the family's support: no bounds
        decl = declared(value, env.size, NO_BOUNDS, CONSTRAINED[site.constraint.kind])
    elif support.rank == 2:
        if not constrained:
            env.no(span, f"draws of {site.family}; Stan has no such type")
            return
        decl = Type(constrained, (env.size(value.axes[0]),))
    else:
        bounds = _bounds(env, site, value)
        if bounds is None:
            return
        decl = declared(value, env.size, bounds, constrained)
    env.params.append(Declare(decl, name))
    env.names[site.name] = Binding(name, value, block="param")


def _bounds(env: Env, site: Site, value: Value) -> Bounds | None:
    """The bounds of a parameter: its family's support (None, with the problem, where
    Stan has no parameter of that support)."""
    assert site.family is not None
    c = value_support(site)  # a truncation's interval (measures.py) or the family's
    match c.kind:
        case "real" | "simplex" | "real_vector":
            return NO_BOUNDS
        case "positive" | "nonnegative":
            return Bounds(lower="0")
        case "unit_interval":
            return Bounds(lower="0", upper="1")
        case "interval" | "greater_than" | "greater_than_eq" | "less_than_eq":
            ends: list[str | None] = []
            for param in (c.low, c.high):
                if param is None or isinstance(param, float):
                    ends.append(None if param is None else real_literal(param))
                    continue
                text = _bound(env, site, param, value)
                if text is None:
                    return None
                ends.append(text)
            return Bounds(*ends)
        case _:
            pass
    env.no(
        site.step.span,
        f"values of {site.family} ({c.describe()}); Stan has no such parameter",
    )
    return None


def _bound(env: Env, site: Site, param: str, value: Value) -> str | None:
    """A bound given by an argument: read from data or the parameters before it, a `let`
    of those written out (`written_out`: `upper=(1.0 - alpha1)`)."""
    a = next((a for a in site.args if a.param == param), None)
    term = arg_term(env, a) if a is not None else None
    if a is None or term is None:
        env.no(site.step.span, f"no `{param}` to bound the values by")
        return None
    term = written_out(env, term)
    p = env.printer.expr(term, {})
    if p is None:
        return None
    late = [n for n in refs(term) if (b := env.lookup(n)) is not None and b.block not in EARLY]
    if late:
        env.no(
            a.span,
            f"a bound read from `{late[0]}`, which Stan computes after the parameters",
        )
        return None
    if not p.value.scalar and p.value.plates != value.plates:
        env.no(a.span, "a bound over other plates than the values")
        return None
    # an expression in parentheses: `<upper=(a > b)>` would end the bounds at its `>`
    return p.text if isinstance(term, Num | Ref | Gather | Call) else f"({p.text})"


def site_target(env: Env, site: Site, ctx: Ctx) -> Printed | None:
    """The site's value as its distribution reads it: a 1-based copy of indices."""
    b = env.lookup(site.name)
    if b is None:
        return None
    assert site.family is not None
    name = b.index if FAMILIES[site.family].support.kind in FROM_ZERO else b.stan
    if name is None:
        return None
    return at(Printed(name, b.value), ctx)


def loop_needed(env: Env, site: Site, family: StanFamily, target: Printed) -> bool:
    """Whether Stan needs the draws one at a time: a vector family over plates (but
    an array of indices under one vector), or an argument that differs per draw
    and is itself a vector."""
    if not target.value.plates:
        return False
    assert site.family is not None
    if FAMILIES[site.family].event_rank and not family.over_ints:
        return True
    args = arguments(env, site, family) or {}
    quiet = Printer(env.lookup, [], env.failed)
    for name, term in args.items():
        p = quiet.expr(term, {})
        if param_rank(site, name) and p is not None and p.value.plates:
            return True
    return False


def draw(env: Env, site: Site, family: StanFamily) -> list[Statement]:
    """The `~` statement of a site outside the scopes (in a loop where Stan needs)."""
    target = site_target(env, site, {})
    if target is None:
        return []
    if family.flat:  # the checker allows it on a `sample` only: a parameter's prior
        return [Comment(f"{target.text}: {site.family}, an improper flat prior: no statement")]
    if not loop_needed(env, site, family, target):
        got = dist(env, site, family, target, {})
        if got is None:
            return []
        stan, args, bounds = got
        return [Draw(flat(target, target.value), stan, args, bounds)]
    plates = target.value.plates
    if len(plates) != 1:
        env.no(
            site.step.span,
            "draws one at a time over more than one plate; the export loops over one",
        )
        return []
    env.active.append(set())
    i = env.fresh("i")
    ctx = {plates[0]: i}
    inner = site_target(env, site, ctx)
    got = dist(env, site, family, inner, ctx) if inner is not None else None
    env.active.pop()
    if got is None or inner is None:
        return []
    stan, args, bounds = got
    return [For(i, "1", env.size(plates[0]), (Draw(inner.text, stan, args, bounds),))]


def lpdf(env: Env, site: Site, family: StanFamily, ctx: Ctx, at: str = "{}") -> str | None:
    """The exact log density of a site in a scope, read in `ctx` (a sum over what is
    left of its plates), constants kept; `at` maps the value's text to the point the
    density is taken at (a pushforward's base at the inverse image)."""
    target = site_target(env, site, ctx)
    if target is None:
        return None
    if loop_needed(env, site, family, target):
        env.no(
            site.step.span,
            "inside `marginalize`, the export writes draws of numbers (or indices under "
            "one probability vector)",
        )
        return None
    got = dist(env, site, family, target, ctx)
    if got is None:
        return None
    stan, args, bounds = got
    assert site.family is not None
    suffix = "lpmf" if FAMILIES[site.family].discrete else "lpdf"
    value = at.format(flat(target, target.value))
    text = f"{stan}_{suffix}({value} | {args})"
    count = "" if target.value.scalar else f"num_elements({target.text}) * "
    if family.half:  # |x|: twice the density on x >= 0
        text += f" + {count}log2()"
    if bounds is not None:
        if not target.value.scalar:
            env.no(site.step.span, "a truncated family over plates inside `marginalize`")
            return None
        low, high = bounds  # the mass the truncation keeps
        text += f" - log_diff_exp({stan}_lcdf({high} | {args}), {stan}_lcdf({low} | {args}))"
    return text


__all__ = ["draw", "lpdf", "parameter", "site_target", "site_value", "stan_family", "value_support"]
