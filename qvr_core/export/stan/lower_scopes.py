"""A `marginalize` scope (or a discrete `sample` qvr's NUTS sums out) in Stan: the
coordinate summed out exactly, as qvr's runtime does (`runtime/model/marginal.py`).

Per group (one round of a loop over the scope's plate), the value of each of the
coordinate's values is its log prior plus the scope's terms, written into a slot of a
local vector (`lp_z[k]`); `log_sum_exp` of the vector is added to the log density, or,
for a nested scope, to the slot of the scope around it, inside its loop (an HMM's chain
of states). Every term is a normalised `_lpdf`, so that the sum is the same number
qvr's is; an observation drawn from a distribution built from distributions (a
truncation, a mixture, a pushforward) is its exact log density at its one value in the
group (`measures.scoped`). An observation grouped through a `via` map adds each of its rows to its
group's slot, read through the rows sorted by group in `transformed data`.
"""

from __future__ import annotations

from collections.abc import Callable

from qvr_core.check.model import Let, Node, Site
from qvr_core.export.stan.families import STAN_FAMILIES
from qvr_core.export.stan.lower_args import arg_term
from qvr_core.export.stan.lower_env import Env
from qvr_core.export.stan.lower_lets import declare_let, score
from qvr_core.export.stan.lower_sites import lpdf, stan_family
from qvr_core.export.stan.measures import scoped
from qvr_core.export.stan.program import Assign, Comment, Declare, For, Statement, Type
from qvr_core.export.stan.values import INT, Binding, Ctx

#: An observation's log density read at a context (`_density`).
Density = Callable[[Ctx], str | None]


def scope(env: Env, node: Node, ctx: Ctx, outer: str | None, add: str) -> list[Statement]:
    """Statements that add the scope's exact log sum to `add` (`target`, or the slot of the
    value of the scope around it): per group, log_sum_exp over the coordinate's values
    of its log prior plus the scope's terms."""
    site = node.step
    assert isinstance(site, Site)
    span = site.step.span
    if not site.sums_exactly:
        env.no(
            span,
            f"reduction={site.reduction}: qvr sums the coordinate out exactly "
            "(logsumexp), and so does the export",
        )
        return []
    if len(site.plates) > 1:
        env.no(span, "groups over more than one plate; the export groups by one")
        return []
    groups = site.plates[0] if site.plates else None
    if outer is not None and groups != outer:
        env.no(
            span,
            f"a scope grouped by {groups or 'nothing'} inside one grouped by {outer}: "
            "qvr sums a scope's groups into the groups around it only when they are "
            "the same",
        )
        return []
    out: list[Statement] = []
    env.active.append(set())
    env.local.append({})
    try:
        inner_ctx = dict(ctx)
        loop = None
        if groups is not None and outer is None:
            loop = env.fresh("n")
            inner_ctx[groups] = loop
        summed = _summed(env, site, inner_ctx)
        if summed is None:
            return []
        first, last, count, prior, offset = summed
        lp = env.fresh(f"lp_{site.name}", global_=True)
        k = env.fresh(site.name, keeps=True)
        slot = f"{lp}[{k}]" if offset == 1 else f"{lp}[{k} + 1]"
        env.local[-1][site.name] = Binding(k, INT, offset=offset, block="local")
        body = _body(env, node, site, inner_ctx, groups, slot, prior)
        if body is None:
            return []
        inner: list[Statement] = [
            Declare(Type("vector", (count,)), lp),
            For(k, first, last, tuple(body)),
            Assign(add, f"log_sum_exp({lp})", "+="),
        ]
        if loop is None:
            out = inner
        else:
            assert groups is not None
            out = [For(loop, "1", env.size(groups), tuple(inner))]
    finally:
        env.local.pop()
        env.active.pop()
    return out


def _summed(env: Env, site: Site, ctx: Ctx) -> tuple[str, str, str, str, int] | None:
    """The coordinate's values (first, last, how many), its log prior as a format
    string of its loop variable, and the loop variable's offset from its value."""
    span = site.step.span
    family = site.summed_family
    if family is None:
        env.no(span, f"`{site.family}` is no family the export knows")
        return None
    args = {a.param: a for a in site.args}
    spec = STAN_FAMILIES.get(family.name)
    stan = spec.stan if spec is not None else None
    if spec is not None and spec.logits is not None:  # a vector of probabilities
        param = "logits" if "logits" in args else "probs"
        term = arg_term(env, args[param])
        p = env.printer.expr(term, ctx) if term is not None else None
        if p is None:
            return None
        if p.value.kind != "vector":
            env.no(args[param].span, f"`{param}` is not one vector for each group")
            return None
        by = (spec.logits if param == "logits" else spec).stan
        count = env.size(p.value.axes[-1])
        return "1", count, count, f"{by}_lpmf({{}} | {p.text})", 1
    if stan == "bernoulli" and "probs" in args:
        term = arg_term(env, args["probs"])
        p = env.printer.expr(term, ctx) if term is not None else None
        if p is None:
            return None
        if not p.value.scalar:
            env.no(args["probs"].span, "`probs` is not one number for each group")
            return None
        return "0", "1", "2", f"bernoulli_lpmf({{}} | {p.text})", 0
    env.no(span, f"summing out {site.family}; the export sums Categorical and Bernoulli values")
    return None


def _body(
    env: Env, node: Node, site: Site, ctx: Ctx, groups: str | None, slot: str, prior: str
) -> list[Statement] | None:
    """The statements run for one value of the coordinate: the scope's lets, its log
    prior and terms into `slot`, then the nested scopes and the rows of `via` maps."""
    k = env.lookup(site.name)
    assert k is not None
    lets: list[Statement] = []
    terms: list[str] = [prior.format(k.stan)]
    after: list[Statement] = []
    ok = True
    for child in node.body:
        step = child.step
        if isinstance(step, Let):
            if step.kind == "score":
                score(env, step, ctx, after, slot)
                continue
            declaration = declare_let(env, step, ctx, "local")
            ok &= declaration is not None
            lets += [declaration] if declaration is not None else []
            continue
        if step.kind == "marginalize" or child.summed:
            after += scope(env, child, ctx, groups, slot)
            continue
        if step.kind == "sample":
            env.no(
                step.step.span,
                "a `sample` inside `marginalize`; qvr does not run it either",
            )
            ok = False
            continue
        density = _density(env, step)
        if density is None:
            ok = False
            continue
        got = _observe(env, step, density, ctx, groups, slot)
        if got is None:
            ok = False
        elif isinstance(got, str):
            terms.append(got)
        else:
            after += got
    if not ok:
        return None
    return [*lets, Assign(slot, " + ".join(terms)), *after]


def _density(env: Env, site: Site) -> Density | None:
    """How an observation's log density is written at a context: its family's `_lpdf`,
    or, for a distribution built from distributions, one value at a time
    (`measures.scoped`); None, with the problem, where Stan has no such density."""
    if site.measure is not None:
        return lambda ctx: scoped(env, site, ctx)
    family = stan_family(env, site)
    if family is None:
        return None
    return lambda ctx: lpdf(env, site, family, ctx)


def _observe(
    env: Env, site: Site, density: Density, ctx: Ctx, groups: str | None, slot: str
) -> str | list[Statement] | None:
    """An observation inside a scope: its log density in the group (a term), or the
    statements adding each of its rows to the group its `via` map puts it in."""
    span = site.step.span
    if groups is None:
        return density(ctx)
    if site.via is None:
        if not site.plates or site.plates[0] != groups:
            env.no(
                span,
                f"an observation inside a scope grouped by {groups} that is not over "
                f"{groups}: give it that plate, or `[via=...]` mapping its rows to groups",
            )
            return None
        return density(ctx)
    via = env.lookup(site.via)
    if via is None or via.index is None or len(site.plates) != 1:
        env.no(span, "a `via` map the export cannot read")
        return None
    if via.value.axes != site.plates:
        env.no(span, f"`{site.via}` runs over other rows than the observation")
        return None
    rows, start = _via_rows(env, site.via, groups)
    env.active.append(set())
    try:
        j, r = env.fresh("j"), env.fresh("r")
        term = density({**ctx, site.plates[0]: r})
    finally:
        env.active.pop()
    if term is None:
        return None
    g = ctx[groups]
    body = (Declare(Type("int"), r, f"{rows}[{j}]"), Assign(slot, term, "+="))
    return [For(j, f"{start}[{g}]", f"({start}[{g} + 1] - 1)", body)]


def _via_rows(env: Env, via: str, groups: str) -> tuple[str, str]:
    """The rows of each group of a `via` map, in `transformed data`: the rows sorted
    by group, and where each group's rows start (`start[g]` to `start[g + 1] - 1`)."""
    if via in env.via_rows:
        return env.via_rows[via]
    b = env.names[via]
    assert b.index is not None
    n, m = env.size(b.value.axes[0]), env.size(groups)
    rows, start = env.fresh(f"{b.stan}_rows", True), env.fresh(f"{b.stan}_start", True)
    env.tdata += [
        Comment(f"the rows of each {groups}: {rows}[{start}[g]:({start}[g + 1] - 1)]"),
        Declare(Type("int", arrays=(n,)), rows, f"sort_indices_asc({b.stan})"),
        Declare(Type("int", arrays=(f"{m} + 1",)), start, f"rep_array(0, {m} + 1)"),
        Assign(f"{start}[1]", "1"),
        For("i", "1", n, (Assign(f"{start}[{b.index}[i] + 1]", "1", "+="),)),
        For("g", "1", m, (Assign(f"{start}[g + 1]", f"{start}[g]", "+="),)),
    ]
    env.via_rows[via] = (rows, start)
    return rows, start


__all__ = ["scope"]
