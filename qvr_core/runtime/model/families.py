"""The distribution of a family step: `Normal(theta, sigma)` with its plates and axes.

Arguments are bound to the family's parameters by the registry
(`qvr_core.builtins.bind`: by position, by keyword, the alternative
parameterisations, defaults), evaluated as tensors and handed to the registry's
torch factory (`runtime.distributions`). A vector family's parameter may be a
number (`Dirichlet(1.0)`) or spread over several arguments (`Dirichlet(1.0,
2.0, 3.0)`); a number is the symmetric value at the size the step's `over=`
axis, or else its plate annotation, gives.

Shapes: the plate annotation (`: School`) and `iid_over=` axes are batch axes
(independent draws), `over=` axes are the family's own event axes; an
annotation that names an `over` axis restates it. The distribution is
expanded to its batch axes broadcast with the arguments' own shapes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import cast

import torch
from torch import distributions as D

from qvr_core.builtins import FAMILIES, Family, bind
from qvr_core.runtime.distributions import make_distribution
from qvr_core.runtime.errors import QvrRuntimeError
from qvr_core.runtime.model.plates import object_names, option_axes, plate_shape
from qvr_core.runtime.model.values import gather, number, real
from qvr_core.syntax import ast

Lookup = Callable[[ast.Name], torch.Tensor]


@dataclass(frozen=True)
class StepShape:
    """What a step's options and annotation say about its axes."""

    batch: tuple[int, ...]  # independent draws (the plate and iid_over axes)
    event_size: int | None  # the size over= (or the annotation of a vector family) fixes


def family_of(call: ast.Expr) -> tuple[Family, ast.Call] | None:
    """The registry family a step's source calls, when it is a family call."""
    if isinstance(call, ast.Call) and call.callee.text in FAMILIES:
        return FAMILIES[call.callee.text], call
    return None


def options(step: object) -> dict[str, object]:
    return {o.key.text: o.value for o in getattr(step, "options", ())}


def distribution(
    step: ast.SampleStep | ast.ObserveStep | ast.MarginalizeStep,
    lookup: Lookup,
    sizes: Mapping[str, int],
    plate: ast.ObjectExpr | None,
    opts: Mapping[str, object] | None = None,
    cache: dict[object, object] | None = None,
) -> D.Distribution:
    """The torch distribution of one family step, expanded over its batch axes (`opts`
    replaces the step's own options: a marginalize's `over` names groups, not axes).

    `cache` (one per compiled program) keeps what depends only on the step and the
    number of axes of its arguments: the binding to parameters and the step's shape.
    NUTS evaluates the same steps thousands of times."""
    found = family_of(step.source)
    assert found is not None
    family, call = found
    where = _Where(step)
    if family.dirac:
        raise QvrRuntimeError(f"{where}: {family.name} is a morphism family; use `let` here")
    positional = [argument(a, lookup, sizes, where) for a in call.args]
    keywords = {k.key.text: argument(k.value, lookup, sizes, where) for k in call.kwargs}
    key = (
        step,
        tuple(t.dim() for t in positional),
        tuple((k, v.dim()) for k, v in keywords.items()),
    )
    known = cache.get(key) if cache is not None else None
    if known is None:
        bound = _bind(family, positional, keywords, where)
        names = (tuple(bound), len(positional))
        shape = step_shape(family, bound, options(step) if opts is None else opts, plate, sizes)
        if cache is not None:
            cache[key] = (names, shape)
    else:
        names, shape = known  # type: ignore[misc]  # the cache holds (names, shape) pairs
        bound = _rebind(names, positional, keywords)
    args = _complete(family, bound, shape.event_size)
    try:
        dist = make_distribution(family.name, args, shape.event_size)
        target = tuple(dist.batch_shape)
        if shape.batch and shape.batch != target:
            target = torch.broadcast_shapes(target, shape.batch)
    except (RuntimeError, ValueError) as e:
        shapes = ", ".join(f"{k} {tuple(v.shape)}" for k, v in args.items())
        raise QvrRuntimeError(
            f"{where}: the arguments of {family.name} do not fit together or with the plate "
            f"{shape.batch}: {shapes} ({_first_line(e)})",
            site=step.target.text,
        ) from None
    if target != tuple(dist.batch_shape):
        try:
            dist = dist.expand(torch.Size(target))
        except NotImplementedError:  # torch cannot expand some compositions: widen the arguments
            wide = {k: _widen(v, family, k, target) for k, v in args.items()}
            dist = make_distribution(family.name, wide, shape.event_size)
    return dist


def _widen(v: torch.Tensor, family: Family, name: str, batch: tuple[int, ...]) -> torch.Tensor:
    param = family.param(name)
    rank = param.rank if param is not None else 0
    event = tuple(v.shape[v.dim() - rank :]) if rank else ()
    return v.expand(*batch, *event)


def _rebind(
    names: tuple[tuple[str, ...], int],
    positional: list[torch.Tensor],
    keywords: dict[str, torch.Tensor],
) -> dict[str, torch.Tensor]:
    """The binding `_bind` found before for the same shapes of arguments."""
    order, count = names
    if len(order) == 1 and count > 1 and not keywords:  # a vector spread over arguments
        return {order[0]: torch.stack(torch.broadcast_tensors(*positional), -1)}
    bound = dict(zip(order, positional, strict=False))
    bound.update(keywords)
    return bound


def step_shape(
    family: Family,
    bound: Mapping[str, torch.Tensor],
    opts: Mapping[str, object],
    plate: ast.ObjectExpr | None,
    sizes: Mapping[str, int],
) -> StepShape:
    over = option_axes(opts.get("over"), sizes)
    iid = option_axes(opts.get("iid_over"), sizes)
    annotated = [n.text for n in object_names(plate)]
    over_names = {n for n, _ in over}
    if over:
        event = 1
        for _, n in over:
            event *= n
        iid_names = {n for n, _ in iid}
        rest = [n for n in annotated if n not in over_names and n not in iid_names]
        batch = tuple(n for _, n in iid) + _sizes(rest, sizes)
        return StepShape(batch, event)
    needs = any(
        p.rank >= 1 and p.name in bound and bound[p.name].dim() < p.rank for p in family.params
    ) or _needs_space(family, bound)
    if family.event_rank >= 1 and needs and annotated:
        return StepShape(
            tuple(n for _, n in iid) + _sizes(annotated[1:], sizes), sizes[annotated[0]]
        )
    return StepShape(tuple(n for _, n in iid) + plate_shape(plate, sizes), None)


def _needs_space(family: Family, bound: Mapping[str, torch.Tensor]) -> bool:
    """True when the size of a draw is the object's (`LKJCholesky`): no argument gives it."""
    if not family.event:
        return False
    try:
        family.event_shape({k: tuple(v.shape) for k, v in bound.items()})
    except ValueError:
        return True
    return False


def _sizes(names: list[str], sizes: Mapping[str, int]) -> tuple[int, ...]:
    return tuple(sizes[n] for n in names if sizes[n] != 1)


def argument(node: object, lookup: Lookup, sizes: Mapping[str, int], where: object) -> torch.Tensor:
    if isinstance(node, ast.Literal):
        if node.kind in ("int", "float", "bool"):
            return number(float(node.value))
        if node.kind != "name":
            raise QvrRuntimeError(f"{where}: {node.raw} is not a number")
        node = ast.NameRef(ast.Name(str(node.value), node.span), node.span)
    if isinstance(node, ast.NameRef):
        if node.name.text in sizes:
            raise QvrRuntimeError(
                f"{where}: '{node.name.text}' is an object, not a value; a family argument is a "
                "number or a bound name"
            )
        return real(lookup(node.name))
    if isinstance(node, ast.IndexArg):
        indices = object_names(node.index)

        def index(name: object) -> torch.Tensor | None:
            assert isinstance(name, ast.Name)
            return None if name.text in sizes else lookup(name)

        return real(gather(lookup(node.name), node.name.text, indices, index))
    if isinstance(node, ast.ListArg):
        items = [argument(i, lookup, sizes, where) for i in node.items]
        return torch.stack(torch.broadcast_tensors(*items), -1)
    raise QvrRuntimeError(
        f"{where}: a family argument is a number, a name, a list or a gather like "
        "`alpha[group]`; bind other expressions with `let` first"
    )


def _bind(
    family: Family,
    positional: list[torch.Tensor],
    keywords: dict[str, torch.Tensor],
    where: object,
) -> dict[str, torch.Tensor]:
    result = bind(family, positional, keywords)
    if isinstance(result, str):
        first = family.params[0] if family.params else None
        if first is not None and first.rank == 1 and len(positional) > 1 and not keywords:
            return {first.name: torch.stack(torch.broadcast_tensors(*positional), -1)}
        raise QvrRuntimeError(f"{where}: {result}")
    return dict(cast("dict[str, torch.Tensor]", result[1]))  # bind returns the tensors given


def _complete(
    family: Family, bound: dict[str, torch.Tensor], event_size: int | None
) -> dict[str, torch.Tensor]:
    """Defaults filled in; a number given for a vector parameter spread to the event size."""
    schema = next((s for s in family.schemas if set(bound) <= {p.name for p in s}), family.params)
    out = dict(bound)
    for p in schema:
        if p.name not in out and p.default is not None:
            out[p.name] = number(p.default)
    for p in schema:
        v = out.get(p.name)
        if v is not None and p.rank == 1 and v.dim() == 0 and event_size is not None:
            out[p.name] = v.expand(event_size)
    return out


class _Where:
    """`line 9, observe y`: where a step is, for messages (formatted only when one is)."""

    def __init__(self, step: object) -> None:
        self.step = step

    def __str__(self) -> str:
        step = self.step
        kind = type(step).__name__.removesuffix("Step").lower()
        line = step.span.start_line + 1  # type: ignore[attr-defined]  # every step node has a span
        return f"line {line}, {kind} {step.target.text}"  # type: ignore[attr-defined]  # a family step names its target


def _first_line(e: Exception) -> str:
    lines = str(e).strip().splitlines()
    return lines[0] if lines else type(e).__name__
