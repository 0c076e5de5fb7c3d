"""A pure `define` as a torch function: the right-hand side of an ODE (`runtime.ode`).

The body (`terms.Body`, which check/define_values.py typed) is evaluated entry by entry: a
vector parameter is the list of its entries (`z[0]` is one of them, a list `[du, dv]` the
result), and the solver keeps the state as that list too, so a stage of a step costs the
body's arithmetic on whole batches of numbers and no indexing or stacking (under
`torch.func.vmap` each of those is an operation or two more, for every stage, in the
gradient too). What reads neither the time nor the state (`theta[0]`, `-theta[2]`, a
line of the parameters alone) is evaluated once per solve, not once per stage; numbers
the body writes stay Python numbers until they meet a tensor.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import torch

from qvr_core.check.terms import (
    Body,
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
    refs,
)

Number = float | torch.Tensor
Value = Number | list[Number]
#: dz/dt at (t, z), the state as the list of its entries (one for a number).
Rhs = Callable[[float, list[torch.Tensor]], list[torch.Tensor]]


@dataclass(frozen=True)
class Builtins:
    """The torch meaning of the builtin functions and operators a body may use, by name
    (`runtime.functions`, which calls the solver: handed over, not imported)."""

    functions: Mapping[str, Callable[..., torch.Tensor]]
    operators: Mapping[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]]


def right_hand_side(body: Body, theta: torch.Tensor, vector: bool, builtins: Builtins) -> Rhs:
    """dz/dt as a function of the time and the state's entries, with theta bound: what
    reads neither t nor z evaluated here, once (`_Folding`)."""
    t_name, z_name, theta_name = body.params
    run = _Evaluator(builtins)
    fixed: dict[str, Value] = {theta_name: list(theta.unbind(-1)) if body.sizes[2] else theta}
    folding = _Folding(run, fixed, {t_name, z_name})
    lines = [(name, folding.term(term, name)) for name, term in body.lines]
    lines = [(name, term) for name, term in lines if name not in fixed]
    result = folding.term(body.result)

    def rhs(t: float, z: list[torch.Tensor]) -> list[torch.Tensor]:
        env = dict(fixed)
        env[t_name] = t
        env[z_name] = list[Number](z) if vector else z[0]
        for name, term in lines:
            env[name] = run.value(term, env)
        out = run.value(result, env)
        return [_over(p, z[0]) for p in (out if isinstance(out, list) else [out])]

    return rhs


class _Folding:
    """Evaluates once what reads neither the time nor the state: a line of the body that
    reads neither is bound in `fixed`; in one that does, each largest part that does not
    is replaced by a name bound to its value (`-theta[2]` in `(-theta[2] + theta[3] * u)
    * v`). A name, a number and an entry of a parameter cost nothing to read: left."""

    def __init__(self, run: _Evaluator, fixed: dict[str, Value], moving: set[str]) -> None:
        self.run, self.fixed, self.moving = run, fixed, moving

    def term(self, term: Term, binds: str | None = None) -> Term:
        """`term` with its fixed parts folded; a line (`binds` its name) that is fixed
        whole is bound in `fixed` (and its term returned as it is, not to be run)."""
        if self.moving.intersection(refs(term)):
            if binds is not None:
                self.moving.add(binds)
            return self._fold(term)
        if binds is not None:
            self.fixed[binds] = self.run.value(term, self.fixed)
        return term

    def _fold(self, term: Term) -> Term:
        if not self.moving.intersection(refs(term)):
            if isinstance(term, Num | Ref | Gather):
                return term
            name = f"#{len(self.fixed)}"  # no name of a program: `#` is not a name's letter
            self.fixed[name] = self.run.value(term, self.fixed)
            return Ref(name, term.span)
        match term:
            case Unary(op=op, operand=operand, span=span):
                return Unary(op, self._fold(operand), span)
            case Op(op=op, left=left, right=right, span=span):
                return Op(op, self._fold(left), self._fold(right), span)
            case Call(fn=fn, args=args, span=span, axis=axis):
                return Call(fn, tuple(self._fold(a) for a in args), span, axis)
            case Stack(items=items, span=span):
                return Stack(tuple(self._fold(i) for i in items), span)
            case Num() | Ref() | Gather():  # read as they are
                return term
            case Comprehension():
                raise AssertionError("define_values: a define's body has no factor")
            case Fold():
                raise AssertionError("define_values: a define's body has no fold")


def _over(entry: Number, like: torch.Tensor) -> torch.Tensor:
    """An entry of dz/dt over the state's batch (the body may give a constant, or a value
    of theta alone); one that already is, as it is."""
    if isinstance(entry, torch.Tensor) and entry.shape == like.shape:
        return entry
    value = entry if isinstance(entry, torch.Tensor) else _constant(entry, like)
    return value.expand(torch.broadcast_shapes(value.shape, like.shape))


def _constant(v: float, like: torch.Tensor) -> torch.Tensor:
    """A number as a tensor of `like`'s dtype and device, the same one each time (a
    recording holds it once, as one constant)."""
    return _cached(float(v), like.dtype, like.device)


@functools.lru_cache(maxsize=1024)
def _cached(v: float, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    return torch.tensor(v, dtype=dtype, device=device)


class _Evaluator:
    """Terms of a body on numbers (Python's, or tensors over the batch) and on lists of
    them, a vector's entries (define_values.py types what reaches here)."""

    def __init__(self, builtins: Builtins) -> None:
        self.builtins = builtins

    def value(self, term: Term, env: Mapping[str, Value]) -> Value:
        match term:
            case Num(value=value):
                return value
            case Ref(name=name):
                return env[name]
            case Unary(op=op, operand=operand):
                inner = self.value(operand, env)
                if isinstance(inner, list):
                    return [self._unary(op, x) for x in inner]
                return self._unary(op, inner)
            case Op(op=op, left=left, right=right):
                return self._entrywise(
                    self.builtins.operators[op], [self.value(left, env), self.value(right, env)]
                )
            case Call(fn=fn, args=args):
                values = [self.value(a, env) for a in args]
                return self._entrywise(self.builtins.functions[fn], values)
            case Gather(base=base, indices=(Num(value=index),)):
                entries = env[base]
                assert isinstance(entries, list)
                return entries[int(index)]
            case Stack(items=items):
                out: list[Number] = []
                for item in items:
                    v = self.value(item, env)
                    assert not isinstance(v, list)  # define_values: a list of numbers
                    out.append(v)
                return out
            case Gather():
                raise AssertionError("define_values: an entry is picked by a number")
            case Comprehension():
                raise AssertionError("define_values: a define's body has no factor")
            case Fold():
                raise AssertionError("define_values: a define's body has no fold")

    def _unary(self, op: str, x: Number) -> Number:
        if op == "-":
            return -x
        t = x if isinstance(x, torch.Tensor) else torch.tensor(x)
        return torch.logical_not(t).to(torch.get_default_dtype())

    def _entrywise(self, fn: Callable[..., torch.Tensor], args: list[Value]) -> Value:
        """`fn` of the arguments, entry by entry over those that are lists (a number
        broadcasts against a list)."""
        lists = [a for a in args if isinstance(a, list)]
        if not lists:
            return _apply(fn, args)  # type: ignore[arg-type]  # numbers only here
        rows = [a if isinstance(a, list) else [a] * len(lists[0]) for a in args]
        return [_apply(fn, list(entry)) for entry in zip(*rows, strict=True)]


def _apply(fn: Callable[..., torch.Tensor], args: list[Number]) -> Number:
    """`fn` of numbers: a Python number where all are (the body's constants, folded once),
    else a tensor, comparisons counted as numbers."""
    like = next((a for a in args if isinstance(a, torch.Tensor)), None)
    if like is None:
        dtype = torch.get_default_dtype()
        return float(fn(*(torch.tensor(a, dtype=dtype) for a in args)))
    out = fn(*(a if isinstance(a, torch.Tensor) else _constant(a, like) for a in args))
    return out if out.is_floating_point() else out.to(like.dtype)
