"""The `marginalize` scopes of a plan as PyMC statements: a mixture, or a Potential.

A scope is summed out exactly, as the runtime's enumeration does. A Categorical over
its groups whose one step is an observe on those groups is `pm.Mixture`, PyMC's own
exact sum. Any other scope is a `pm.Potential` of its log-sum-exp over its values,
computed by a function per scope that runs the scope's steps once per value; a nested
scope is a function of the enclosing values it reads, called from the outer one and
cached on them, so a chain of scopes (an HMM) costs what the forward algorithm costs.
"""

from __future__ import annotations

from qvr_core.builtins import FAMILIES
from qvr_core.check.model import Let, Node, Site
from qvr_core.export.pymc.context import Context, summed_name
from qvr_core.export.pymc.families import MIXTURE, PYMC_FAMILIES, keywords
from qvr_core.export.pymc.measures import scoped_term
from qvr_core.export.pymc.tree import (
    AddTerm,
    Assign,
    Blank,
    Call,
    Comment,
    Decorator,
    For,
    FunctionDef,
    KeywordCall,
    LogP,
    Return,
    Statement,
)

#: The module's helper that sums one term of a scope down to the scope's groups.
PER_GROUP = (
    "def per_group(term, groups, via=None):",
    '    """One log-density term of a `marginalize` scope summed down to the scope\'s groups,',
    "    as qvr's runtime does: over every axis when there are none, each row into the group",
    '    `via` names, else over the axes after the groups\'."""',
    "    term = pt.as_tensor(term)",
    "    if not groups:",
    "        return pt.sum(term)",
    "    if via is not None:",
    "        rows = pt.sum(term.reshape((term.shape[0], -1)), axis=-1) if term.ndim > 1 else term",
    "        return pt.inc_subtensor(pt.zeros(groups)[via], pt.broadcast_to(rows, via.shape))",
    "    return pt.sum(term, axis=tuple(range(len(groups), term.ndim)))",
)


def mixture(cx: Context, node: Node) -> Site | None:
    """The observe of a scope PyMC writes as `pm.Mixture`: a Categorical over its
    groups whose one step is an observe on exactly those groups, reading the summed
    coordinate only as the whole index of a value over its values."""
    site = node.step
    if not isinstance(site, Site) or site.family not in MIXTURE or not site.over:
        return None
    if len(node.body) != 1 or node.body[0].body:
        return None
    inner = node.body[0].step
    if not isinstance(inner, Site) or inner.kind != "observe" or inner.via is not None:
        return None
    if inner.measure is not None:  # its components are a distribution's: the Potential
        return None
    if inner.family not in PYMC_FAMILIES or FAMILIES[inner.family].event_rank:
        return None
    if not inner.annotated or inner.plates != site.plates or site.plates != site.over:
        return None
    if not cx.dims(site.plates):
        return None
    of = site.type.element.of if site.type is not None else None
    for a in inner.args:
        if a.name == site.name:
            return None
        if a.index == (site.name,):
            if a.name is None or cx.plan.axes(a.name) != (of,):
                return None
            t = a.type
            if t is not None and t.element.event:
                return None
        elif a.index or isinstance(a.literal, tuple) or not cx.scalar(a):
            return None
    prior = site.args[0] if site.args else None
    if prior is None or prior.index or prior.literal is not None or prior.type is None:
        return None
    plates = tuple(p.name for p in prior.type.plates)
    if prior.type.data_plates or plates not in ((), site.plates):
        return None
    return inner


def mixture_statements(cx: Context, node: Node) -> list[Statement]:
    """`pm.Mixture` of the scope's observe, the prior's probabilities its weights and the
    observe's family at each value its components (on the last axis)."""
    site = node.step
    assert isinstance(site, Site)
    inner = mixture(cx, node)
    assert inner is not None and inner.family is not None
    prior = site.args[0]
    assert prior.name is not None
    w = cx.py(prior.name)
    if prior.param == "logits":
        w = f"pt.special.softmax({w}, axis=-1)"
    elif prior.type is None or prior.type.element.kind != "simplex":
        w = f"{w} / pt.sum({w}, axis=-1, keepdims=True)"
    spec = PYMC_FAMILIES[inner.family]
    # each component's arguments: `mu[z]` is `mu`, its components on the last axis
    texts = {
        a.param: cx.py(a.name) if a.index and a.name else cx.argument(a)
        for a in inner.args
        if FAMILIES[inner.family].param(a.param) is not None
    }
    comps = Call(f"{spec.pm}.dist", tuple(keywords(inner.family, texts)))
    datum = cx.plan.datum(inner.name)
    integer = datum.integer if datum is not None else FAMILIES[inner.family].discrete
    args = (
        cx.variable(inner.name),
        f"w={w}",
        KeywordCall("comp_dists", comps),
        f"observed={cx.array(inner.name, integer)}",
    )
    groups = " * ".join(cx.dims(site.plates))
    return [
        Comment(f"marginalize {site.name}: one per {groups}, summed out by the mixture"),
        Assign(None, Call("pm.Mixture", args, tuple(cx.dims(inner.plates)))),
    ]


def potential(cx: Context, node: Node) -> list[Statement]:
    """The scope's function (and its nested scopes'), then `pm.Potential` of its sum."""
    site = node.step
    assert isinstance(site, Site)
    out: list[Statement] = [Blank()]
    _scope_function(cx, node, [], out)
    sums = f"pt.sum({_function_name(cx, site.name)}())"
    out.append(Assign(None, f"pm.Potential({cx.variable(site.name)}, {sums})"))
    return out


def _function_name(cx: Context, name: str) -> str:
    """`sum_out_z`, kept from every Python name the module binds."""
    fn = f"sum_out_{name}"
    while fn in cx.names.values():
        fn += "_"
    return fn


def _scope_function(cx: Context, node: Node, enclosing: list[str], out: list[Statement]) -> None:
    """`def sum_out_z(...)`: the scope's log-sum-exp over the values of `z`, one per
    group; its parameters are the names bound in enclosing scopes it reads. The nested
    scopes' functions follow it."""
    site = node.step
    assert isinstance(site, Site) and site.family is not None
    reads = node.outside
    params = [cx.py(n) for n in enclosing if n in reads]
    groups = cx.shape(site.plates)
    summed = summed_name(site)
    z = cx.py(site.name)
    plates = cx.dims(site.plates)
    where = f"one per {' * '.join(plates)}" if plates else "in all"
    given = f" given {', '.join(params)}" if params else ""
    prior = Call(f"{PYMC_FAMILIES[summed].pm}.dist", tuple(cx.family_args(site, summed)))
    body: list[Statement] = [Assign("lp", LogP(prior, z))]
    bound = [*enclosing, site.name]
    nested: list[tuple[Node, list[str]]] = []
    for child in node.body:
        step = child.step
        if isinstance(step, Let):
            value = cx.printer(step.term)
            body.append(
                AddTerm(value, groups) if step.kind == "score" else Assign(cx.py(step.name), value)
            )
        elif child.scope:
            nested.append((child, list(bound)))
            call_params = [cx.py(n) for n in bound if n in child.outside]
            body.append(
                AddTerm(f"{_function_name(cx, step.name)}({', '.join(call_params)})", groups)
            )
        else:
            assert step.family is not None
            via = cx.py(step.via) if step.via is not None else None
            if step.measure is not None:  # quivers' measure algebra: measures.py
                body.append(AddTerm(scoped_term(cx, step), groups, via))
            else:
                dist = Call(f"{PYMC_FAMILIES[step.family].pm}.dist", tuple(cx.family_args(step)))
                body.append(AddTerm(LogP(dist, cx.py(step.name)), groups, via))
        bound.append(step.name)
    body.append(Assign(None, "per_value.append(lp)"))
    # a nested scope: its sum once for each values of what it reads
    cached = Decorator("functools.cache", "the same sum for the same values it reads")
    out.append(
        FunctionDef(
            _function_name(cx, site.name),
            tuple(params),
            None,
            cached if enclosing else None,
            f"Sum out {site.name}{given}: its scope's log density, {where}.",
            (
                Assign("per_value", "[]"),
                For(z, f"range({cx.values(site)})", tuple(body)),
                Return("pm.math.logsumexp(pt.stack(pt.broadcast_arrays(*per_value)), axis=0)"),
            ),
        )
    )
    out.append(Blank())
    for child, outside in nested:
        _scope_function(cx, child, outside, out)


__all__ = ["PER_GROUP", "mixture", "mixture_statements", "potential"]
