"""A site's arguments as its Stan distribution takes them.

A family's QVR parameters become Stan's in Stan's order (`StanFamily.params`), with
qvr's defaults filled in and the rewrites Stan's parameterisation needs (a
NegativeBinomial's `probs` as odds); each argument is then checked against the values
it is the distribution of: a number for all of them, a vector over the same plates, a
vector where Stan takes one per draw. An argument that fits none is a located problem:
Stan would broadcast it otherwise, or refuse it.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

from qvr_core.builtins import FAMILIES
from qvr_core.check.model import Argument, Let, Site
from qvr_core.check.terms import Call, Gather, Num, Op, Ref, Stack, Term, Unary
from qvr_core.export.stan.families import DERIVED_RANK, StanFamily
from qvr_core.export.stan.lower_env import Env
from qvr_core.export.stan.values import Ctx, Printed, Value, at, words


@dataclass(frozen=True)
class AtLeastZero(Argument):
    """An argument raised to 0 where it is below (`fmax(end, 0)`): a half family's lower
    end given as a value, since Stan writes |x| as its symmetric family from 0 on."""

    @classmethod
    def of(cls, a: Argument) -> AtLeastZero:
        return cls(**_fields(a))

    def end(self) -> Argument:
        """The end as given, before it is raised."""
        return Argument(**_fields(self))


def _fields(a: Argument) -> dict[str, Any]:
    return {f.name: getattr(a, f.name) for f in fields(Argument)}


def arg_term(env: Env, a: Argument) -> Term | None:
    if isinstance(a, AtLeastZero):
        inner = arg_term(env, a.end())
        return None if inner is None else Call("max", (inner, Num(0.0, a.span)), a.span)
    if isinstance(a.literal, float):
        return Num(a.literal, a.span)
    if isinstance(a.literal, tuple):
        return Stack(tuple(Num(v, a.span) for v in a.literal), a.span)
    if a.name is None:
        env.no(a.span, "an argument the export cannot read")
        return None
    if not a.index:
        return Ref(a.name, a.span)
    indices: tuple[Term | None, ...] = tuple(
        None if i in env.plan.plates or i in env.plan.module.objects else Ref(i, a.span)
        for i in a.index
    )
    return Gather(a.name, indices, a.span, a.index_plates)


#: The blocks a parameter's bounds may read: Stan declares them before the parameters,
#: or (a parameter) in source order with them.
EARLY = ("data", "tdata", "param")


def written_out(env: Env, term: Term) -> Term:
    """`term` with each `let` Stan computes after the parameters (a model local, a
    transformed parameter) replaced by its own expression, down to data and parameters.
    A parameter's bound may read only those, and a family's argument is a name, so
    `let beta_max = 1.0 - alpha1` then `BoundedFlat(0.0, beta_max)` is Stan's
    `real<upper=(1.0 - alpha1)>`: the same value, computed where Stan can read it. A let
    a gather reads stays a name (what reads it is refused where it is checked)."""
    lets = {s.name: s for s in env.plan.model.steps if isinstance(s, Let) and s.kind == "let"}

    def early(name: str) -> bool:
        b = env.lookup(name)
        return b is not None and b.block in EARLY

    def out(t: Term) -> Term:
        match t:
            case Ref(name=name) if name in lets and not early(name):
                return out(lets[name].term)
            case Unary(operand=o):
                return replace(t, operand=out(o))
            case Op(left=left, right=right):
                return replace(t, left=out(left), right=out(right))
            case Call(args=args):
                return replace(t, args=tuple(out(a) for a in args))
            case Stack(items=items):
                return replace(t, items=tuple(out(i) for i in items))
            case Gather(indices=indices):
                return replace(t, indices=tuple(None if i is None else out(i) for i in indices))
            case _:
                return t

    return out(term)


def arguments(env: Env, site: Site, family: StanFamily) -> dict[str, Term] | None:
    """The site's arguments by Stan's parameters, in Stan's order."""
    assert site.family is not None
    qvr = FAMILIES[site.family]
    span = site.step.span
    given: dict[str, Term] = {}
    for a in site.args:
        t = arg_term(env, a)
        if t is None:
            return None
        given[a.param] = t
    for p in qvr.params:
        if p.name not in given and p.default is not None:
            given[p.name] = Num(p.default, span)
    probs = given.get("probs")
    if family.stan == "categorical" and isinstance(probs, Stack):
        given["probs"] = _normalised(probs)
    if family.rewrite is not None:
        given.update(family.rewrite(given, span))
    out: dict[str, Term] = {}
    for name in family.params + (family.truncation or ()):
        if name in given:
            out[name] = given[name]
        elif name in (family.truncation or ()):
            continue  # an end left open: `T[low, ]`
        elif name.isdigit():
            out[name] = Num(float(name), span)
        else:
            env.no(span, f"{site.family} without `{name}`")
            return None
    return out


def param_rank(site: Site, name: str) -> int:
    assert site.family is not None
    p = FAMILIES[site.family].param(name)
    return p.rank if p is not None else DERIVED_RANK.get(name, 0)


def dist(
    env: Env, site: Site, family: StanFamily, target: Printed, ctx: Ctx
) -> tuple[str, str, tuple[str, str] | None] | None:
    """(distribution, its arguments, its truncation's bounds) for `target` read in `ctx`; None
    (with the problem) where an argument does not fit the values."""
    args = arguments(env, site, family)
    if args is None:
        return None
    texts: dict[str, str] = {}
    for name, term in args.items():
        text = _arg(env, site, family, name, term, target, ctx)
        if text is None:
            return None
        texts[name] = text
    main = ", ".join(texts[n] for n in family.params)
    bounds = None
    if family.truncation is not None:  # an end not given is left open: `T[0.0, ]`
        bounds = (texts.get(family.truncation[0], ""), texts.get(family.truncation[1], ""))
    return family.stan, main, bounds


def _arg(
    env: Env, site: Site, family: StanFamily, name: str, term: Term, target: Printed, ctx: Ctx
) -> str | None:
    span = term.span
    if name in family.ints:
        return _int_arg(env, term, ctx, target)
    p = env.printer.expr(term, ctx)
    if p is None:
        return None
    rank = param_rank(site, name)
    v = p.value
    if rank == 0:
        if v.scalar:
            return p.text
        if (
            v.kind in ("vector", "matrix", "row_vector")
            and not v.event
            and v.plates == target.value.plates
        ):
            return flat(p, target.value)
        if _entry_per_value(env, v, target.value):
            return p.text
        env.no(
            span,
            f"`{name}` over {words(v.plates)} for values over {words(target.value.plates)}",
        )
        return None
    if rank == 1:
        if v.scalar and target.value.event:
            return f"rep_vector({p.text}, {env.size(target.value.axes[-1])})"
        if v.kind == "vector":
            return p.text
        env.no(span, f"`{name}` is not one vector where Stan takes one")
        return None
    if v.kind == "matrix":
        return p.text
    env.no(span, f"`{name}` is not a matrix where Stan takes one")
    return None


def _entry_per_value(env: Env, v: Value, target: Value) -> bool:
    """A vector of numbers without plates (`let mu_loc = [3.0, 10.0]`) for values that are
    one vector over a plate of as many entries: Stan's vectorised statement pairs them
    entry by entry, as qvr's broadcast does (the checker holds the lengths equal)."""
    if v.kind != "vector" or v.plates or target.kind != "vector" or len(target.plates) != 1:
        return False
    return env.size(v.axes[-1], data=True) == env.size(target.plates[0], data=True)


def _int_arg(env: Env, term: Term, ctx: Ctx, target: Printed) -> str | None:
    if isinstance(term, Num) and float(term.value).is_integer():
        return str(int(term.value))
    if isinstance(term, Ref):
        b = env.lookup(term.name)
        if b is not None and b.value.kind in ("int", "ints") and b.offset is None:
            p = at(Printed(b.stan, b.value), ctx)
            if p.value.kind == "int" or p.value.axes == target.value.axes:
                return p.text
    env.no(
        term.span,
        "Stan takes this count as a whole number: give it as one, or as whole-number data",
    )
    return None


def flat(p: Printed, target: Value) -> str:
    """A value over two plates as one vector, in the order its target is flattened
    (a matrix column by column, an array of integers row by row)."""
    if len(p.value.plates) < 2:
        return p.text
    if target.kind == "ints":
        return f"to_array_1d({p.text})" if p.value.kind == "ints" else f"to_vector({p.text}')"
    return f"to_vector({p.text})"


def _normalised(probs: Stack) -> Stack:
    """Literal probabilities divided by their sum, as torch's Categorical reads them (Stan's
    refuses a vector that is not a simplex)."""
    values = [i.value for i in probs.items if isinstance(i, Num)]
    total = sum(values)
    if len(values) != len(probs.items) or total <= 0 or total == 1.0:
        return probs
    return Stack(
        tuple(Num(v / total, i.span) for v, i in zip(values, probs.items, strict=True)), probs.span
    )


__all__ = ["EARLY", "arg_term", "arguments", "dist", "flat", "param_rank", "written_out"]
