"""A step of quivers' measure algebra in Stan: a truncation, `y ~ normal(mu, s) T[0, ];`,
a pushforward and a mixture, their log density added to `target`.

Stan truncates one distribution by its CDF (`T[low, high]`, either end left out), as qvr
rescales a restriction at a step, and declares a parameter within the interval. A
mixture is `target += log_sum_exp({log w_1 + lp_1, ...})` for each value (in a loop
over the site's plate): each component's exact `_lpdf`/`_lpmf` (a truncated one less
the log of its mass, from its CDFs, inside its interval and -inf outside; a count's
ends as whole numbers), a point mass `(y == v ? 0 : negative_infinity())`; a component
that keeps its mass weighs w_k m_k, rescaled. A family pushed through a bijection is
its base's density at the inverse image plus the log of the inverse's derivative,
`target += normal_lpdf(log(y) | mu, s) + sum(-log(y));`, the parameter declared within
the bijection's image. The horseshoe, a mixture of 16 Normals (`Family.normal_scales`),
is written out one value at a time. What no target writes is refused where it is
written (`export/measures.py` says what every target refuses alike).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace

from qvr_core.builtins import FAMILIES
from qvr_core.check.model import Argument, Site
from qvr_core.export.measures import (
    Cut,
    Leaf,
    Mix,
    Part,
    Point,
    Pushed,
    cdf_ends,
    count_ends_written,
    weight_products,
    written_form,
)
from qvr_core.export.plan import Unsupported
from qvr_core.export.stan.families import STAN_FAMILIES, StanFamily
from qvr_core.export.stan.lower_args import AtLeastZero, arg_term, dist, flat
from qvr_core.export.stan.lower_env import Env
from qvr_core.export.stan.lower_sites import lpdf, site_target
from qvr_core.export.stan.program import Assign, For, Statement
from qvr_core.export.stan.values import Ctx, real_literal

#: The parameters a truncation's ends are bound to (`Restrict`'s and `Truncated`'s).
ENDS = ("low", "high")


#: What Stan writes of each operator of the measure algebra (docs/export.md's table).
WRITES: dict[str, str] = {
    "mixture": "yes",
    "restrict": "yes (counts at whole-number ends, observed where at a step)",
    "truncated": "yes (observed counts at whole-number ends)",
    "rescaled": "of a truncation",
    "point": "in a mixture",
    "pushforward": "yes",
    "independent": "as its base",
}

#: Each bijection's inverse at a value `{}`, the log of the inverse's derivative there
#: (Stan's functions are vectorised, so a vector of values reads them entrywise), and
#: the condition that one value lies in its image (a mixture's component is -inf outside
#: it, where the inverse is NaN).
_INVERSES: dict[str, tuple[str, str, str]] = {
    "Identity": ("{}", "", ""),
    "Exp": ("log({})", "-log({})", "{} > 0"),
    "Log": ("exp({})", "{}", ""),
    "Sigmoid": ("logit({})", "-log({}) - log1m({})", "{} > 0 && {} < 1"),
    "Logit": ("inv_logit({})", "log_inv_logit({}) + log1m_inv_logit({})", ""),
    "Softplus": ("log_diff_exp({}, 0)", "{} - log_diff_exp({}, 0)", "{} > 0"),
}


def truncated_site(env: Env, site: Site) -> tuple[Site, StanFamily] | None:
    """The site as its truncated family's (the family's arguments, then the ends) with
    Stan's distribution of that family truncated; None, with the problem, otherwise."""
    assert site.measure is not None
    form = written_form(site.measure)
    if isinstance(form, Unsupported):
        env.no(form.span, form.message)
        return None
    if not isinstance(form, Cut):
        env.no(
            site.step.span,
            "Stan writes a truncated family (T[low, high]), a pushforward or a mixture of "
            "quivers' measure algebra, not a point mass alone: it is a value, `let`",
        )
        return None
    leaf = form.base
    spec = STAN_FAMILIES.get(leaf.family)
    if spec is None or spec.flat or spec.truncation or spec.over_ints:
        env.no(leaf.span, f"Stan has no {leaf.family} of the same density to truncate")
        return None
    if spec.half:  # |x| of a symmetric family at 0: that family truncated at or above 0
        form = replace(form, low=_half_low(form))
        spec = replace(spec, half=False)
    ends = tuple(a for a in (form.low, form.high) if a is not None)
    ints = spec.ints
    if FAMILIES[leaf.family].discrete:  # observed counts: Stan's T[] of a pmf takes ints
        whole = all(isinstance(a.literal, float) and a.literal.is_integer() for a in ends)
        if site.kind != "observe" or not whole:
            env.no(
                leaf.span,
                f"a truncated {leaf.family}: the export truncates observed counts at "
                "whole numbers written out, and continuous families",
            )
            return None
        ints = (*ints, *(a.param for a in ends))
    return replace(site, family=leaf.family, args=(*leaf.args, *ends)), replace(
        spec, truncation=ENDS, ints=ints
    )


def is_pushed(site: Site) -> bool:
    """The step draws from a distribution pushed through a bijection (`pushed`)."""
    return site.measure is not None and isinstance(written_form(site.measure), Pushed)


def pushed(env: Env, site: Site) -> list[Statement]:
    """`target += base_lpdf(inverse(y) | ...) + log |d inverse / dy|;` for the whole
    value at once (a pushed truncation one value at a time, each -inf outside its
    interval); nothing, with the problem, where the base has no Stan density."""
    assert site.measure is not None
    form = written_form(site.measure)
    assert isinstance(form, Pushed)
    if isinstance(form.base, Cut):
        return _each_value(env, site, lambda ctx: _pushed_density(env, site, form, ctx))
    density = _pushed_density(env, site, form, {})
    return [Assign("target", density, "+=")] if density is not None else []


def _pushed_density(env: Env, site: Site, part: Pushed, ctx: Ctx) -> str | None:
    cut = part.base if isinstance(part.base, Cut) else None
    leaf = part.base.base if isinstance(part.base, Cut) else part.base
    spec = _spec(env, leaf)
    target = site_target(env, site, ctx)
    if spec is None or target is None:
        return None
    inverse, jacobian, image = _INVERSES[part.bijector]
    plain = replace(site, family=leaf.family, args=leaf.args, measure=None)
    density = lpdf(env, plain, spec, ctx, at=inverse)
    if density is None:
        return None
    value = flat(target, target.value)
    if jacobian:
        summed = jacobian.format(value, value)
        density += f" + {summed if target.value.scalar else f'sum({summed})'}"
    conditions = [image.format(value, value)] if image and target.value.scalar else []
    if cut is not None:  # one value (pushed() loops): its inverse inside the interval
        mass = _mass(env, plain, spec, cut, ctx)
        inside = _inside(env, site, cut, ctx, at=inverse)
        if mass is None or inside is None:
            return None
        density += f" - {mass}"
        conditions.append(inside)
    if conditions:  # one value: -inf outside, not NaN or a density with no mass there
        density = f"({' && '.join(conditions)} ? {density} : negative_infinity())"
    return density


def _each_value(
    env: Env, site: Site, term: Callable[[Ctx], str | None], what: str = "this distribution"
) -> list[Statement]:
    """`target += term` for each value of the site: in a loop over its one plate, `term`
    read at the loop's index; nothing, with the problem, where it cannot be written."""
    target = site_target(env, site, {})
    if target is None:
        return []
    plates = target.value.plates
    if len(plates) > 1:
        env.no(site.step.span, f"{what} over more than one plate; the export loops over one")
        return []
    i = env.fresh("i") if plates else None
    ctx: Ctx = {plates[0]: i} if i is not None else {}
    env.active.append(set())
    try:
        text = term(ctx)
    finally:
        env.active.pop()
    if text is None:
        return []
    add = Assign("target", text, "+=")
    return [add] if i is None else [For(i, "1", env.size(plates[0]), (add,))]


def normal_scales(env: Env, site: Site) -> list[Statement]:
    """A family whose density is a mixture of Normals at 0 with fixed weights and scales
    relative to its `scale` (the horseshoe, `Family.normal_scales`), one value at a time:
    `target += log_sum_exp(log_w - 0.5 * square(y ./ s) - log(s)) - log(sqrt(2 pi))`
    with `s` the scale times the relative scales (a vector)."""
    assert site.family is not None
    pairs = FAMILIES[site.family].normal_scales
    assert pairs is not None
    scale = next(a for a in site.args if a.param == "scale")
    log_w = ", ".join(real_literal(math.log(w)) for w, _ in pairs)
    relative = ", ".join(real_literal(r) for _, r in pairs)

    def density(ctx: Ctx) -> str | None:
        value = site_target(env, site, ctx)
        s = _text(env, scale, ctx)
        if value is None or s is None:
            return None
        sd = f"({s}) * [{relative}]'"
        return (
            f"log_sum_exp([{log_w}]' - 0.5 * square({value.text} ./ ({sd})) - log({sd})) "
            f"- {real_literal(0.5 * math.log(2 * math.pi))}"
        )

    return _each_value(env, site, density, f"a {site.family}")


def is_mixture(site: Site) -> bool:
    """The step draws from a mixture (written by `mixture`, not as a `~` statement)."""
    return site.measure is not None and isinstance(written_form(site.measure), Mix)


def mixture(env: Env, site: Site) -> list[Statement]:
    """`target += log_sum_exp({...})` for each value of the site (module doc); nothing,
    with the problem, where a part has no Stan density."""
    assert site.measure is not None
    form = written_form(site.measure)
    assert isinstance(form, Mix)
    return _each_value(env, site, lambda ctx: _mixed(env, site, form, ctx), "a mixture")


def _mixed(env: Env, site: Site, form: Mix, ctx: Ctx) -> str | None:
    """A mixture's log density at one value of the site, read in `ctx`."""
    weights = _log_weights(env, form, ctx)
    terms = [_part(env, site, part, ctx) for part in form.parts]
    kept = _kept_masses(env, site, form, ctx)
    if weights is None or kept is None or any(t is None for t in terms):
        return None
    if any(kept):  # w_k m_k / sum_j w_j m_j for a Restrict that keeps its mass m_k
        weighed = [f"{w} + {m}" if m else w for w, m in zip(weights, kept, strict=True)]
        total = f"log_sum_exp({{{', '.join(weighed)}}})"
        weights = [f"{w} - {total}" for w in weighed]
    summed = ", ".join(f"{w} + {t}" for w, t in zip(weights, terms, strict=True))
    return f"log_sum_exp({{{summed}}})"


def scoped(env: Env, site: Site, ctx: Ctx) -> str | None:
    """The log density of an observation drawn from a measure inside a `marginalize`
    scope, at its one value read in `ctx` (the scope's groups bind its plate, or a
    `via` map's row does): a term of the scope's sum for each value summed out. Nothing,
    with the problem, where the value is not one number there or a part has no Stan
    density."""
    assert site.measure is not None
    form = written_form(site.measure)
    if isinstance(form, Unsupported):
        env.no(form.span, form.message)
        return None
    target = site_target(env, site, ctx)
    if target is None:
        return None
    if not target.value.scalar:
        env.no(
            site.step.span,
            "a distribution built from distributions over plates inside `marginalize`: "
            "the export writes it one value at a time, over the plate the scope groups by",
        )
        return None
    return _mixed(env, site, form, ctx) if isinstance(form, Mix) else _part(env, site, form, ctx)


def _kept_masses(env: Env, site: Site, form: Mix, ctx: Ctx) -> list[str] | None:
    """Each component's log mass where it keeps it (`Cut.kept`), else ""."""
    out = []
    for part in form.parts:
        if not (isinstance(part, Cut) and part.kept):
            out.append("")
            continue
        spec = _spec(env, part.base)
        plain = replace(site, family=part.base.family, args=part.base.args, measure=None)
        mass = _mass(env, plain, spec, part, ctx) if spec is not None else None
        if mass is None:
            return None
        out.append(mass)
    return out


def _log_weights(env: Env, form: Mix, ctx: Ctx) -> list[str] | None:
    """log w_k / sum(w): numbers where they are written, else read from the vector; where
    a mixture was flattened into this one, each the sum of its entries' logs less their
    log_sum_exp (`Mix.products`)."""
    w, n = form.weights, len(form.parts)
    if form.products is not None:
        texts: dict[int, str] = {}
        for a, _ in (e for entries in form.products for e in entries):
            if not isinstance(a.literal, tuple) and id(a) not in texts:
                text = _text(env, a, ctx)
                if text is None:
                    env.no(a.span, "mixture weights the export cannot read")
                    return None
                texts[id(a)] = text

        def entry(a: Argument, k: int) -> str:
            if isinstance(a.literal, tuple):
                return real_literal(math.log(a.literal[k]))
            return f"log({texts[id(a)]}[{k + 1}])"

        logs = weight_products(form, entry, " + ")
        log_total = f"log_sum_exp({{{', '.join(logs)}}})"
        return [f"{log} - {log_total}" for log in logs]
    if isinstance(w.literal, tuple):
        total = math.fsum(w.literal)
        return [real_literal(math.log(v / total)) for v in w.literal]
    text = _text(env, w, ctx)
    if text is None:
        env.no(w.span, "mixture weights the export cannot read")
        return None
    return [f"log({text}[{k + 1}]) - log(sum({text}))" for k in range(n)]


def _text(env: Env, a: Argument, ctx: Ctx) -> str | None:
    """An argument's Stan text read in `ctx` (None, with the problem, where it cannot be)."""
    term = arg_term(env, a)
    p = env.printer.expr(term, ctx) if term is not None else None
    return p.text if p is not None else None


def _part(env: Env, site: Site, part: Part, ctx: Ctx) -> str | None:
    """One component's exact log density at the site's value read in `ctx`."""
    match part:
        case Point(value=value):
            target = site_target(env, site, ctx)
            point = _text(env, value, ctx)
            if target is None or point is None:
                return None
            return f"({target.text} == {point} ? 0 : negative_infinity())"
        case Leaf():
            spec = _spec(env, part)
            if spec is None:
                return None
            density = lpdf(env, replace(site, family=part.family, args=part.args), spec, ctx)
            target = site_target(env, site, ctx)
            if density is None or target is None or not spec.half:
                return density
            # |x| has no mass below 0, where its symmetric family's density has some
            return f"({target.text} >= 0 ? {density} : negative_infinity())"
        case Cut(base=base):
            spec = _spec(env, base)
            if spec is None:
                return None
            if spec.half:  # no mass below 0: the interval starts there at the lowest
                part = replace(part, low=_half_low(part))
            plain = replace(site, family=base.family, args=base.args)
            density = lpdf(env, plain, spec, ctx)
            mass = _mass(env, plain, spec, part, ctx)
            inside = _inside(env, site, part, ctx)
            if density is None or mass is None or inside is None:
                return None
            return f"({inside} ? {density} - {mass} : negative_infinity())"
        case Pushed():
            return _pushed_density(env, site, part, ctx)
        case _:
            raise AssertionError(part)


def _inside(env: Env, site: Site, cut: Cut, ctx: Ctx, at: str = "{}") -> str | None:
    """The condition that the value (`at` of it: a pushforward's inverse image) lies in a
    truncation's interval (outside it the density is 0, whatever its lpdf says)."""
    target = site_target(env, site, ctx)
    if target is None:
        return None
    value = at.format(target.text)
    conditions = []
    for a, op in ((cut.low, ">="), (cut.high, "<=")):
        if a is None:
            continue
        end = _text(env, a, ctx)
        if end is None:
            return None
        conditions.append(f"{value} {op} {end}")
    return " && ".join(conditions) or "1"


def _spec(env: Env, leaf: Leaf) -> StanFamily | None:
    spec = STAN_FAMILIES.get(leaf.family)
    if spec is None or spec.flat or spec.truncation or spec.over_ints:
        env.no(leaf.span, f"Stan has no {leaf.family} of the same density to build on")
        return None
    return spec


def _half_low(cut: Cut) -> Argument:
    """The lower end a half family's truncation has as its symmetric family's: 0 where
    none is given, a given end below 0 raised to 0 (|x| has no mass below it): a number
    here, a value in Stan (`fmax(end, 0)`)."""
    if cut.low is None:
        return Argument("low", cut.span, literal=0.0)
    if isinstance(cut.low.literal, float):
        return replace(cut.low, literal=max(cut.low.literal, 0.0))
    return AtLeastZero.of(cut.low)


def _mass(env: Env, plain: Site, spec: StanFamily, cut: Cut, ctx: Ctx) -> str | None:
    """The log of the mass a truncation keeps: from the CDFs at its ends (a count's ends
    are whole numbers: from its lower end less 1, as Stan's CDFs of counts include it). A
    half family's is twice its symmetric family's between the ends (`_half_low`)."""
    if spec.half:
        at = _half_low(cut)
        mass = _mass(env, plain, replace(spec, half=False), replace(cut, low=at), ctx)
        return None if mass is None else f"(log2() + {mass})"
    target = site_target(env, plain, ctx)
    got = dist(env, plain, spec, target, ctx) if target is not None else None
    if got is None:
        return None
    stan, args, _ = got
    if not count_ends_written(cut):
        env.no(cut.span, "a count's truncation at an end that is not a whole number written")
        return None
    ends = cdf_ends(cut, lambda a: _text(env, a, ctx))
    if ends is None:
        return None
    low, high = ends
    if low is not None and high is not None:
        return f"log_diff_exp({stan}_lcdf({high} | {args}), {stan}_lcdf({low} | {args}))"
    if low is not None:
        return f"{stan}_lccdf({low} | {args})"
    return f"{stan}_lcdf({high} | {args})"


__all__ = [
    "ENDS",
    "WRITES",
    "is_mixture",
    "is_pushed",
    "mixture",
    "normal_scales",
    "pushed",
    "scoped",
    "truncated_site",
]
