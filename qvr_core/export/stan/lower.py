"""A plan lowered to a Stan program tree (`program.py`), or to the problems that stop it.

One pass, in the order the Stan program needs its names: the plates (a `transformed
data` int, or a `data` int where only the data knows the size), the data variables
(declared under their QVR names, with their sizes and the bounds their family gives
them), the 1-based copies of the data that indexes, then every step in source order
(`lower_lets.py`, `lower_sites.py`, `lower_scopes.py`). Every decision of what the Stan
program says, and every QVR701 problem, is made here and in those modules; what comes
out is either a whole program or the located problems, never both, so nothing is
written for a program Stan cannot say with qvr's meaning.
"""

from __future__ import annotations

from collections.abc import Iterator

from qvr_core.builtins import FAMILIES
from qvr_core.check.model import Let, Node, Site, walk
from qvr_core.check.terms import Call, Gather, Op, Ref, Stack, Term, Unary
from qvr_core.export.measures import leaf_site
from qvr_core.export.plan import Plan, Unsupported
from qvr_core.export.stan.families import FROM_ZERO, STAN_FAMILIES
from qvr_core.export.stan.lower_env import Env, declared
from qvr_core.export.stan.lower_lets import declare_let, let_blocks, let_by_entry, score
from qvr_core.export.stan.lower_scopes import scope
from qvr_core.export.stan.lower_sites import (
    draw,
    parameter,
    site_value,
    stan_family,
    value_support,
)
from qvr_core.export.stan.measures import (
    is_mixture,
    is_pushed,
    mixture,
    normal_scales,
    pushed,
    truncated_site,
)
from qvr_core.export.stan.program import (
    NO_BOUNDS,
    Assign,
    Bounds,
    Comment,
    Declare,
    For,
    Program,
    Type,
)
from qvr_core.export.stan.values import INT, Binding, Value, real_literal
from qvr_core.export.targets import TARGETS
from qvr_core.text.span import Span

_NOWHERE = Span(0, 0, 0, 0, 0, 0)


def lower(plan: Plan) -> Program | list[Unsupported]:
    """The Stan program of `plan`, or what in it Stan cannot say with qvr's meaning (each
    problem once, in the order found)."""
    env = Env(plan)
    # a discrete `sample` without data outside the scopes: qvr's NUTS sums it out
    # (`runtime/model/enumerate.py`), and so does the export
    tree = plan.model.summed_with_data(
        s.name for s in plan.model.sites if plan.datum(s.name) is not None
    )
    _plates(env)
    indexing = _indexing(env, tree)
    _data(env, indexing)
    _copies(env)
    kinds = let_blocks(env, tree)
    for node in tree:
        _top(env, node, kinds)
        if env.lookup(node.step.name) is None:
            env.failed.add(node.step.name)
    if env.problems:
        return list({(u.span, u.message): u for u in env.problems}.values())
    return Program(
        header=plan.header(TARGETS["stan"]),
        data=tuple(env.data),
        transformed_data=tuple(env.tdata),
        parameters=tuple(env.params),
        transformed_parameters=tuple(env.tparams),
        model=tuple(env.model),
    )


def _plates(env: Env) -> None:
    for plate in env.plan.plates.values():
        name = env.stan_name(plate.name, _NOWHERE)
        if name is None:
            continue
        env.names["#" + plate.name] = Binding(name, INT)
        if plate.size is None:  # qvr reads it off the data's arrays; Stan is told
            note = f"how many {plate.name}: add it to the data"
            env.data.append(Declare(Type("int", bounds=Bounds(lower="0")), name, note=note))
        else:
            env.tdata.append(Declare(Type("int"), name, str(plate.size)))


def _indexing(env: Env, tree: tuple[Node, ...]) -> set[str]:
    """Data names read as indices (by a gather, a `via`, or an observation from 0)."""
    out: set[str] = set()
    for node in walk(tree):
        s = node.step
        if isinstance(s, Let):
            for t in _terms(s.term):
                if isinstance(t, Gather):
                    out.update(i.name for i in t.indices if isinstance(i, Ref))
            continue
        for a in s.args:
            out.update(i for i in a.index if i not in env.plan.plates)
        if s.via is not None:
            out.add(s.via)
        observed = s.kind == "observe" and s.family in FAMILIES
        if observed and FAMILIES[str(s.family)].support.kind in FROM_ZERO:
            out.add(s.name)
        spec = STAN_FAMILIES.get(str(s.family))
        for a in s.args:
            if spec is not None and a.param in spec.ints and a.name and not a.index:
                env.counts.add(a.name)
    return {n for n in out if env.plan.datum(n) is not None}


def _data(env: Env, indexing: set[str]) -> None:
    for d in env.plan.data:
        env.failed.add(d.name)  # until declared
        site = env.plan.model.site(d.name) if d.observed else None
        value: Value | None
        bounds = NO_BOUNDS
        if site is not None and site.family is not None and site.family in FAMILIES:
            value = site_value(env, site)
            bounds = _data_bounds(env, site)
        else:
            value = _covariate(env, d.name, d.span)
            if value is not None and d.indexes is not None:
                bounds = Bounds("0", _minus_one(env.size(d.indexes, data=True)))
        if value is None:
            continue
        name = env.stan_name(d.name, d.span, fixed=True)
        if name is None:
            continue
        plates = " * ".join(value.plates)
        note = f"over {plates}" if plates else None
        env.data.append(
            Declare(declared(value, lambda a: env.size(a, True), bounds), name, note=note)
        )
        env.failed.discard(d.name)
        index = None
        if d.name in indexing:
            index = env.fresh(f"{name}_1", global_=True)
        env.names[d.name] = Binding(name, value, index=index, block="data")


def _covariate(env: Env, name: str, span: Span) -> Value | None:
    d = env.plan.datum(name)
    assert d is not None
    dv = env.plan.model.data_variable(name)
    sized = dv is None or dv.type is None or dv.type.data_plates
    if sized and d.rows is None:
        env.no(
            span,
            f"the length of `{name}` is known only from the data (no observe over a "
            "plate reads it), and Stan declares it",
        )
        return None
    axes = d.axes
    if d.element.event:
        env.no(span, f"`{name}` holds vectors; the export reads numbers")
        return None
    if len(axes) > 2:
        env.no(span, f"`{name}` has {len(axes)} axes; Stan's export takes two at most")
        return None
    if d.integer or name in env.counts:
        return Value("ints", axes) if axes else INT
    return Value(("real", "vector", "matrix")[len(axes)], axes)


def _copies(env: Env) -> None:
    """The 1-based copies of the data that indexes."""
    for d in env.plan.data:
        b = env.names.get(d.name)
        if b is None or b.index is None:
            continue
        if b.value.kind == "int":
            env.tdata.append(Declare(Type("int"), b.index, f"{b.stan} + 1"))
            continue
        if len(b.value.axes) != 1 or b.value.kind != "ints":
            env.no(
                d.span,
                f"`{d.name}` indexes with {len(b.value.axes)} axes; the export takes one",
            )
            continue
        n = env.size(b.value.axes[0])
        note = f"{d.name}, counted from 1 as Stan indexes"
        env.tdata.append(Declare(Type("int", arrays=(n,)), b.index, note=note))
        env.tdata.append(For("i", "1", n, (Assign(f"{b.index}[i]", f"{b.stan}[i] + 1"),)))


def _data_bounds(env: Env, site: Site) -> Bounds:
    """Bounds that check observed data against the family's support (numbers only: a
    simplex of rounded numbers in a data file would be refused)."""
    c = value_support(site)
    match c.kind:
        case "boolean":
            return Bounds("0", "1")
        case "index":
            of = site.type.element.of if site.type is not None else None
            if of is not None and env.axis_known(of):
                return Bounds("0", _minus_one(env.size(of, data=True)))
            return Bounds(lower="0")
        case "nonnegative_integer" | "integer_interval" | "ordinal" | "positive" | "nonnegative":
            return Bounds(lower="0")
        case "unit_interval":
            return Bounds("0", "1")
        case "interval":
            return Bounds(_literal(site, c.low), _literal(site, c.high))
        case _:
            return NO_BOUNDS


def _literal(site: Site, param: object) -> str | None:
    for a in site.args:
        if a.param == param and isinstance(a.literal, float):
            return real_literal(a.literal)
    return None


def _top(env: Env, node: Node, kinds: dict[str, str]) -> None:
    step = node.step
    if isinstance(step, Let):
        if step.kind == "score":
            score(env, step, {}, env.model, "target")
            return
        block = kinds.get(step.name, "model")
        mark = len(env.problems)
        declaration = declare_let(env, step, {}, block)
        if declaration is None and block == "tdata":
            env.tdata.extend(let_by_entry(env, step, mark))
            return
        if declaration is not None:
            into = {"tdata": env.tdata, "tparam": env.tparams}.get(block, env.model)
            into.append(declaration)
        return
    if step.kind == "marginalize" or node.summed:
        if node.summed:
            env.model.append(
                Comment(
                    f"{step.name} (discrete) summed out, as qvr's NUTS sums it: Stan has no "
                    "discrete parameters"
                )
            )
        env.model.extend(scope(env, node, {}, None, "target"))
        return
    step = leaf_site(step) or step  # an Independent of one family: that family's site
    if step.family is not None and FAMILIES[step.family].normal_scales:  # the horseshoe
        if step.kind == "sample":
            parameter(env, step)
        env.model.extend(normal_scales(env, step))
        return
    if step.measure is not None and (is_mixture(step) or is_pushed(step)):  # measures.py
        if step.kind == "sample":
            parameter(env, step)
        env.model.extend(mixture(env, step) if is_mixture(step) else pushed(env, step))
        return
    if step.measure is not None:  # quivers' measure algebra: a truncation (measures.py)
        found = truncated_site(env, step)
        if found is None:
            return
        step, family = found
    else:
        written = stan_family(env, step)
        if written is None:
            return
        family = written
    if step.kind == "sample":
        parameter(env, step)
    env.model.extend(draw(env, step, family))


def _terms(term: Term) -> Iterator[Term]:
    yield term
    match term:
        case Unary(operand=o):
            yield from _terms(o)
        case Op(left=left, right=right):
            yield from _terms(left)
            yield from _terms(right)
        case Call(args=args) | Stack(items=args):
            for a in args:
                yield from _terms(a)
        case Gather(indices=indices):
            for i in indices:
                if i is not None:
                    yield from _terms(i)
        case _:
            pass


def _minus_one(size: str) -> str:
    return str(int(size) - 1) if size.isdigit() else f"{size} - 1"


__all__ = ["lower"]
