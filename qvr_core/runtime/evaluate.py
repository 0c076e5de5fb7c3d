"""The value of a checked term (`qvr_core.check.terms`) on tensors.

Numbers and tensors broadcast as in torch; indices and booleans count as numbers.
Names are read through `lookup`; functions and operators run from
`runtime.functions`, keyed by their registry names. A gather `alpha[group]` takes,
for each entry of the index value, that entry of `alpha` (a `None` index takes
every entry of that axis), checking every index against the axis it indexes. A
`factor` comprehension evaluates its body once per entry of its plates, as quivers'
comprehension does, and stacks the entries on leading axes. A `fold` is a loop over
its collection's first plate carrying the accumulator: one evaluation of its body per
entry, whatever the body reads.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

import torch

from qvr_core.check.model import Let
from qvr_core.check.terms import (
    Call,
    Comprehension,
    Fold,
    Gather,
    Num,
    Op,
    Ref,
    Stack,
    Term,
    Unary,
)
from qvr_core.runtime.deduction import goal_weight
from qvr_core.runtime.distributions import log_density
from qvr_core.runtime.errors import QvrRuntimeError, first_line
from qvr_core.runtime.functions import FUNCTION_IMPLEMENTATIONS, OPERATOR_FUNCTIONS
from qvr_core.runtime.numbers import number
from qvr_core.runtime.value_checks import check_values, check_within

#: Reads a name's value; the line is where the term reading it is written.
Lookup = Callable[[str, int], torch.Tensor]

EMPTY: Mapping[str, int] = MappingProxyType({})


def real(t: torch.Tensor) -> torch.Tensor:
    """Indices and booleans count as numbers in arithmetic."""
    return t if t.is_floating_point() else t.to(torch.get_default_dtype())


def evaluate_let(
    let: Let,
    lookup: Lookup,
    sizes: Mapping[str, int],
    value_of: Callable[[str], torch.Tensor | None],
    doing: str = "",
    site: str | None = None,
) -> torch.Tensor:
    """A `let`'s value; torch's error (shapes that do not broadcast) becomes one line at
    the let, with the shapes of the values it reads (`value_of`: None for a name not
    known yet), what the run was `doing` and the `site` the error is of, if any."""
    try:
        return evaluate(let.term, lookup, sizes)
    except RuntimeError as e:
        if isinstance(e, QvrRuntimeError):
            raise
        shapes = ", ".join(
            f"{n} {tuple(v.shape)}" for n in let.uses if (v := value_of(n)) is not None
        )
        raise QvrRuntimeError(
            f"line {let.line}: {doing}{first_line(e)} (shapes: {shapes or 'no named values'})",
            site=site,
        ) from None


def evaluate(term: Term, lookup: Lookup, sizes: Mapping[str, int] = EMPTY) -> torch.Tensor:
    """The value of `term`, its names read through `lookup`; `sizes` are the plates'
    (a gather over a one-entry plate reads no axis)."""
    match term:
        case Num(value=value):
            return number(value)
        case Ref(name=name, line=line):
            return real(lookup(name, line))
        case Unary(op=op, operand=operand):
            inner = evaluate(operand, lookup, sizes)
            return torch.logical_not(inner).to(inner.dtype) if op == "not" else -inner
        case Op():
            return _binary(term, lookup, sizes)
        case Call(
            fn=fn, args=args, axis=axis, function=function, deduction=deduction, density=density
        ):
            values = [evaluate(a, lookup, sizes) for a in args]
            if deduction is not None:  # `parse(D, sentence)`: D's goal weight
                return goal_weight(deduction, values[0])
            if density is not None:  # `log_prob(F(a, b), x)`: F's torch density at x
                return log_density(density.family, density.params, *values)
            impl = FUNCTION_IMPLEMENTATIONS[fn]
            if function is not None:  # a solver's right-hand side (`ode_rk45`), then values
                return impl(function, *values)
            return impl(*values) if axis is None else impl(*values, axis)
        case Gather(base=base, indices=indices, line=line, plates=plates):
            one = tuple(sizes.get(p) == 1 for p in plates)
            read = lookup(base, line)
            return real(gather(read, base, indices, lambda t: evaluate(t, lookup, sizes), one))
        case Stack(items=items):
            return torch.stack(
                torch.broadcast_tensors(*(evaluate(i, lookup, sizes) for i in items)), -1
            )
        case Comprehension():
            return _comprehension(term, lookup, sizes)
        case Fold():
            return _fold(term, lookup, sizes)


def _fold(term: Fold, lookup: Lookup, sizes: Mapping[str, int]) -> torch.Tensor:
    """`fold(xs, init, acc -> x -> body)`: the accumulator starts as init's value, and
    entry k of xs along its first plate gives the next one as the body's value with `acc`
    the accumulator and `x` that entry; the last accumulator is the value. A loop, so the
    body is evaluated once per entry (autograd follows the chain to init and xs; under
    vmap, as the samplers batch chains, each step is one batched evaluation). A one-entry
    plate lays out no axis (`check.model.axis_plates`): its one entry is xs itself."""
    items = real(evaluate(term.items, lookup, sizes))
    acc = real(evaluate(term.init, lookup, sizes))
    n = sizes.get(term.plate, term.size)
    if n < 0:  # a plate the checker could not size: the value's own axis says
        n = items.shape[0]

    for k in range(n):
        item = items if n == 1 else items[k]
        bound = {term.acc: acc, term.item: item}  # the entry shadows an `acc` of its name

        def read(name: str, line: int, bound: Mapping[str, torch.Tensor] = bound) -> torch.Tensor:
            value = bound.get(name)
            return lookup(name, line) if value is None else value

        acc = real(evaluate(term.body, read, sizes))
    return acc


def _comprehension(term: Comprehension, lookup: Lookup, sizes: Mapping[str, int]) -> torch.Tensor:
    """`factor v : V, c : C in body`: the body with each binder a whole number, once per
    entry, stacked with the first binder's axis outermost; `{0 -> a, 1 -> b}`: case k at
    entry k. A one-entry plate lays out no axis (`check.model.axis_plates`), so its one
    entry is the value. The binders shadow the program's names inside the body."""

    def entry(part: Term, bound: Mapping[str, torch.Tensor]) -> torch.Tensor:
        def read(name: str, line: int) -> torch.Tensor:
            value = bound.get(name)
            return lookup(name, line) if value is None else value

        return real(evaluate(part, read, sizes))

    def axis(entries: list[torch.Tensor]) -> torch.Tensor:
        if len(entries) == 1:
            return entries[0]
        return torch.stack(torch.broadcast_tensors(*entries), 0)

    if term.body is None:
        (binder,) = term.binders  # the checker admits one binder with cases
        return axis([entry(c, {binder: number(k)}) for k, c in enumerate(term.cases)])
    body = term.body

    def over(depth: int, bound: dict[str, torch.Tensor]) -> torch.Tensor:
        if depth == len(term.binders):
            return entry(body, bound)
        name = term.binders[depth]
        return axis([over(depth + 1, {**bound, name: number(k)}) for k in range(term.sizes[depth])])

    return over(0, {})


def _binary(term: Op, lookup: Lookup, sizes: Mapping[str, int]) -> torch.Tensor:
    spine = [term]  # along the left spine: a long chain does not recurse per operator
    while isinstance(spine[-1].left, Op):
        spine.append(spine[-1].left)
    value = evaluate(spine[-1].left, lookup, sizes)
    for b in reversed(spine):
        value = real(OPERATOR_FUNCTIONS[b.op](value, evaluate(b.right, lookup, sizes)))
    return value


def gather(
    base: torch.Tensor,
    base_name: str,
    indices: tuple[Any, ...],
    index_value: Callable[[Any], torch.Tensor],
    one_entry: tuple[bool, ...] = (),
) -> torch.Tensor:
    """`base[i, j, ...]`: entry-wise along the leading axes; a None index takes the axis.

    `one_entry[k]` says that the k-th index reads a one-entry plate, which has no tensor
    axis: a plate name there takes nothing, and a value is gathered from the axis put
    back (so its entries are checked and its shape kept)."""
    keys: list[Any] = []
    for k, node in enumerate(indices):
        axis = len(keys)
        if k < len(one_entry) and one_entry[k]:
            if node is None:
                continue
            base = base.unsqueeze(axis)
        if node is None:  # a plate name: every entry along this axis
            keys.append(slice(None))
            continue
        value = index_value(node)
        label = _label(node)
        if axis >= base.dim():
            raise QvrRuntimeError(
                f"'{base_name}' has {base.dim()} axes; it cannot take index {axis + 1} ({label})",
                site=base_name,
            )
        if value.is_floating_point():
            whole = functools.partial(_whole, label, base_name)
            check_values(whole, (value == value.round()).all())
            value = value.long()
        size = base.shape[axis]
        bad = functools.partial(_bad_index, label, base_name, size, axis)
        check_within(value, 0, size - 1, bad)
        keys.append(value.long())
    return base[tuple(keys)]


def _whole(label: str, base_name: str, whole: int) -> None:
    if not whole:
        raise QvrRuntimeError(
            f"index '{label}' of '{base_name}' must hold whole numbers", site=label
        )


def _bad_index(label: str, base_name: str, size: int, axis: int, bad: int) -> QvrRuntimeError:
    return QvrRuntimeError(
        f"index '{label}' holds {bad}, outside 0..{size - 1} for '{base_name}' "
        f"({size} entries along axis {axis + 1})",
        site=label,
    )


def _label(node: object) -> str:
    if isinstance(node, Ref):
        return node.name
    return type(node).__name__.lower()
