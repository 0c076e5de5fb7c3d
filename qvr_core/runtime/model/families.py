"""The distribution of a checked family site: `Normal(theta, sigma)` with its plates and axes.

The checker has bound each argument to its family parameter (`check.model.Argument`)
and worked out the site's plates and the event axes of one draw; this evaluates the
arguments as tensors and hands them to the registry's torch factory
(`runtime.distributions`). A vector parameter given as a number
(`Dirichlet(1.0)`) is the symmetric value at the size of one draw.

Shapes: the site's plates are batch axes (independent draws, a size-1 object adds
none), `over=` axes of a vector family its event; a `marginalize`'s batch axes are
its groups (`over=G`). The distribution is expanded to its batch axes broadcast
with the arguments' own shapes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import torch
from torch import distributions as D

from qvr_core.builtins import FAMILIES, Family
from qvr_core.check.model import Argument, Site, axis_plates, axis_sizes
from qvr_core.check.terms import Ref
from qvr_core.runtime.distributions import (
    Ordered,
    completed,
    make_distribution,
    torch_constraint,
)
from qvr_core.runtime.errors import QvrRuntimeError, first_line
from qvr_core.runtime.evaluate import Lookup, gather, real
from qvr_core.runtime.measures import measure_distribution
from qvr_core.runtime.numbers import number
from qvr_core.runtime.tensors import broadcast_shape


class LeftTheFloats(QvrRuntimeError):
    """An argument or a draw that left float64's range (inf or NaN where the model means a
    finite number: `exp(0.5 * h)` past h = 1419). A forward run is drawn again instead
    while such runs are rare (`program.RARE`): a draw off the floats is no draw of the model."""


def where(site: Site) -> str:
    """`line 9, observe y`: where a site is, for messages."""
    return f"line {site.line}, {site.kind} {site.name}"


def batch_shape(site: Site, sizes: Mapping[str, int]) -> tuple[int, ...]:
    """Independent draws: the site's plates (a marginalize's groups: `over=G`, or the
    annotation of a family whose values it does not name, `z : Resp <-
    ContinuousBernoulli(p)`, one z per Resp, as quivers replicates it)."""
    return axis_sizes(site.plates, sizes)


def event_size(site: Site, family: Family, sizes: Mapping[str, int]) -> int | None:
    """The size of one draw of a vector family, when its `over=` axes or its type fix it."""
    if not family.event_rank:
        return None
    if site.over and site.kind != "marginalize":
        n = 1
        for o in site.over:
            n *= sizes[o]
        return n
    event = site.type.element.event if site.type is not None else ()
    return event[-1] if event and event[-1] >= 0 else None


def argument(a: Argument, lookup: Lookup, sizes: Mapping[str, int], line: int) -> torch.Tensor:
    """One bound argument as a tensor: a number, a list, a name, or a gather by plates
    (every entry) and values (the entries they hold)."""
    if isinstance(a.literal, float):
        return number(a.literal)
    if isinstance(a.literal, tuple):
        return torch.tensor(a.literal, dtype=torch.get_default_dtype())
    assert a.name is not None  # the checker binds a literal or a name
    if not a.index:
        return real(lookup(a.name, line))
    indices = tuple(None if i in sizes else Ref(i, a.span) for i in a.index)
    kept = axis_plates(a.index_plates, sizes)
    one = tuple(p not in kept for p in a.index_plates)
    return real(gather(lookup(a.name, line), a.name, indices, lambda r: lookup(r.name, line), one))


def distribution(
    site: Site,
    lookup: Lookup,
    sizes: Mapping[str, int],
    cache: dict[object, object],
    family: Family | None = None,
) -> D.Distribution:
    """The torch distribution of one family site, expanded over its batch axes; with
    `family`, that family's at the site's arguments it has (`Site.summed_family`).

    `cache` (one per compiled program and template call) keeps what depends only on
    the site: its batch shape and event size. NUTS evaluates the same sites
    thousands of times."""
    assert site.family is not None
    line = site.line
    if site.measure is not None:  # quivers' measure algebra: runtime/measures.py
        values = {id(a): argument(a, lookup, sizes, line) for _, a in site.measure.arguments()}
        return measure_distribution(
            site, site.measure, values, batch_shape(site, sizes), where(site)
        )
    family = family or FAMILIES[site.family]
    if family.dirac:
        raise QvrRuntimeError(f"{where(site)}: {family.name} is a morphism family; use `let`")
    args = {
        a.param: argument(a, lookup, sizes, line)
        for a in site.args
        if family.param(a.param) is not None
    }
    key = (id(site), family.name)  # the site lives as long as the compiled program
    known = cache.get(key)
    if known is None:
        known = cache[key] = (batch_shape(site, sizes), event_size(site, family, sizes))
    batch: tuple[int, ...]
    size: int | None
    batch, size = known  # type: ignore[misc]  # why: the cache holds (batch, event size) pairs
    args = completed(family, args, size)
    try:
        dist = make_distribution(family.name, args, size)
        target = tuple(dist.batch_shape)
        if batch and batch != target:
            target = broadcast_shape(target, batch)
    except (RuntimeError, ValueError, IndexError) as e:  # torch says a shape is off in all three
        outside = _argument_outside(site, family, args, e)
        if outside is not None:
            raise outside from None
        shapes = ", ".join(f"{k} {tuple(v.shape)}" for k, v in args.items())
        raise QvrRuntimeError(
            f"{where(site)}: the arguments of {family.name} do not fit together or with the "
            f"plates {batch}: {shapes} ({first_line(e)})",
            site=site.name,
        ) from None
    if target != tuple(dist.batch_shape):
        try:
            dist = dist.expand(torch.Size(target))
        except NotImplementedError:  # torch cannot expand some compositions: widen the arguments
            wide = {k: _widen(v, family, k, target) for k, v in args.items()}
            dist = make_distribution(family.name, wide, size)
    if site.constraint is not None:
        return _held(site, dist, sizes)
    return dist


def _held(site: Site, dist: D.Distribution, sizes: Mapping[str, int]) -> D.Distribution:
    """`dist` held to the site's `[constraint=ordered]`: its last batch axis, the site's
    last plate, becomes one ordered vector. A plate a template's caller binds to one entry
    lays out no axis (`axis_plates`), which would order another axis: refused instead."""
    assert site.constraint is not None
    if not site.plates or sizes.get(site.plates[-1]) == 1 or not dist.batch_shape:
        raise QvrRuntimeError(
            f"{where(site)}: constraint={site.constraint.kind} orders '{site.name}' along its "
            "last plate, which has one entry here: there is nothing to order",
            site=site.name,
        )
    return Ordered(dist, torch_constraint(site.constraint))


def _widen(v: torch.Tensor, family: Family, name: str, batch: tuple[int, ...]) -> torch.Tensor:
    param = family.param(name)
    rank = param.rank if param is not None else 0
    event = tuple(v.shape[v.dim() - rank :]) if rank else ()
    return v.expand(*batch, *event)


_OUTSIDE = re.compile(
    r"Expected parameter (?P<param>\w+) .*? to satisfy the constraint (?P<constraint>.+?), "
    r"but found invalid values",
    re.DOTALL,
)


def _argument_outside(
    site: Site, family: Family, args: Mapping[str, torch.Tensor], e: Exception
) -> QvrRuntimeError | None:
    """`line 7, sample x: the scale of LogNormal is 0, outside what it allows (...)` when
    torch refused an argument's value (a drawn scale of 0, a probability below 0), else
    None; `LeftTheFloats` where the value is inf or NaN (a number past float64)."""
    match = _OUTSIDE.search(str(e)) if isinstance(e, ValueError) else None
    if match is None:
        return None
    param, constraint = match["param"], match["constraint"]
    value = args.get(param)
    shown = ""
    if value is not None and value.numel():
        f = value.detach().to(torch.float64)
        shown = (
            f" is {float(f.reshape(-1)[0]):g}"
            if f.numel() == 1
            else f" ranges over [{float(f.min()):g}, {float(f.max()):g}]"
        )
    message = (
        f"{where(site)}: the {param} of {family.name}{shown}, outside what it allows ({constraint})"
    )
    if value is not None and not bool(torch.isfinite(value.detach()).all()):
        return LeftTheFloats(f"{message}: {_PAST_FLOATS}", site=site.name)
    return QvrRuntimeError(message, site=site.name)


#: What a number past float64 says: where it comes from and what keeps it finite.
_PAST_FLOATS = (
    "its numbers passed float64's range. A heavy-tailed prior above it (HalfCauchy, "
    "StudentT, Cauchy), or `exp` of a widely spread value, sends them there; a lighter-tailed "
    "prior (HalfNormal, Exponential) or a bound on the scale keeps them finite"
)
