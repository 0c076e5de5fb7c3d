"""The values of a model program's arithmetic: `let`, `score`, family arguments, gathers.

Numbers and tensors broadcast as in torch; a plate-shaped value (`theta : School`,
shape `(8,)`) combines with a number or another value of the same plate. The
builtin functions are quivers' checked primitives that have one obvious torch
meaning; reductions act on the whole value, the rowwise ones on its last axis.
A gather `alpha[group]` takes, for each entry of the index value, that entry of
`alpha` (an index naming a plate object, `sigma[School]`, takes them all).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F

from qvr_core.runtime.errors import QvrRuntimeError
from qvr_core.syntax import ast

Lookup = Callable[[ast.Name], torch.Tensor]

UNARY: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "sigmoid": torch.sigmoid,
    "tanh": torch.tanh,
    "exp": torch.exp,
    "expm1": torch.expm1,
    "log": torch.log,
    "log1p": torch.log1p,
    "log2": torch.log2,
    "log10": torch.log10,
    "sqrt": torch.sqrt,
    "rsqrt": torch.rsqrt,
    "square": torch.square,
    "abs": torch.abs,
    "sign": torch.sign,
    "reciprocal": torch.reciprocal,
    "sin": torch.sin,
    "cos": torch.cos,
    "tan": torch.tan,
    "asin": torch.asin,
    "acos": torch.acos,
    "atan": torch.atan,
    "sinh": torch.sinh,
    "cosh": torch.cosh,
    "asinh": torch.asinh,
    "acosh": torch.acosh,
    "atanh": torch.atanh,
    "floor": torch.floor,
    "ceil": torch.ceil,
    "round": torch.round,
    "trunc": torch.trunc,
    "erf": torch.erf,
    "erfc": torch.erfc,
    "erfinv": torch.erfinv,
    "lgamma": torch.lgamma,
    "digamma": torch.digamma,
    "relu": torch.relu,
    "softplus": F.softplus,
    "logsigmoid": F.logsigmoid,
    "softsign": F.softsign,
    "gelu": F.gelu,
    "silu": F.silu,
    "elu": F.elu,
    "selu": F.selu,
    "mish": F.mish,
    "relu6": F.relu6,
    # reductions over the whole value
    "sum": torch.sum,
    "mean": torch.mean,
    "prod": torch.prod,
    "logsumexp": lambda t: torch.logsumexp(t.reshape(-1), 0),
    # rowwise (the last axis)
    "softmax": lambda t: torch.softmax(t, -1),
    "log_softmax": lambda t: torch.log_softmax(t, -1),
    "cumsum": lambda t: torch.cumsum(t, -1),
    "sort": lambda t: torch.sort(t, -1).values,
    "normalize": lambda t: t / t.sum(-1, keepdim=True),
}
BINARY: dict[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = {
    "min": torch.minimum,
    "max": torch.maximum,
    "pow": torch.pow,
}
#: One-argument `min(x)` / `max(x)` reduce, like quivers' tensor reductions.
_REDUCE = {"min": torch.amin, "max": torch.amax}
_OPS: dict[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = {
    "+": torch.add,
    "-": torch.sub,
    "*": torch.mul,
    "/": torch.div,
    "%": torch.remainder,
    "==": torch.eq,
    "!=": torch.ne,
    "<": torch.lt,
    "<=": torch.le,
    ">": torch.gt,
    ">=": torch.ge,
    "&&": torch.logical_and,
    "||": torch.logical_or,
}
METHODS = {"sum", "mean", "prod", "exp", "log", "abs", "sqrt", "square", "sigmoid", "tanh"}


def real(t: torch.Tensor) -> torch.Tensor:
    """Indices and booleans count as numbers in arithmetic."""
    return t if t.is_floating_point() else t.to(torch.get_default_dtype())


def number(v: float) -> torch.Tensor:
    """A number as a tensor; the same one each time (nothing writes into them)."""
    return _number(float(v), torch.get_default_dtype())


@functools.lru_cache(maxsize=4096)
def _number(v: float, dtype: torch.dtype) -> torch.Tensor:
    return torch.tensor(v, dtype=dtype)


def evaluate(node: ast.Arith, lookup: Lookup, plates: frozenset[str] = frozenset()) -> torch.Tensor:
    """The value of an arithmetic expression (names read through `lookup`)."""
    return _Evaluator(lookup, plates).eval(node)


class _Evaluator:
    def __init__(self, lookup: Lookup, plates: frozenset[str]) -> None:
        self.lookup = lookup
        self.plates = plates

    def eval(self, node: ast.Arith) -> torch.Tensor:
        if isinstance(node, ast.Number):
            return number(node.value)
        if isinstance(node, ast.Literal):
            if node.kind in ("int", "float", "bool"):
                return number(float(node.value))
            raise QvrRuntimeError(f"{node.raw} is not a number")
        if isinstance(node, ast.Var):
            return real(self.lookup(node.name))
        if isinstance(node, ast.Unary):
            value = self.eval(node.operand)
            return torch.logical_not(value).to(value.dtype) if node.op == "not" else -value
        if isinstance(node, ast.Binary):
            return self._binary(node)
        if isinstance(node, ast.Apply):
            return self._apply(node)
        if isinstance(node, ast.Index):
            return real(
                gather(self.lookup(node.base.name), node.base.name.text, node.indices, self._index)
            )
        if isinstance(node, ast.MethodCall):
            name = node.method.text
            if name not in METHODS:
                raise QvrRuntimeError(f"line {node.span.start_line + 1}: no method '.{name}()'")
            value = real(self.lookup(node.receiver.name))
            if name in ("sum", "mean", "prod") and node.args:
                dim = int(self.eval(node.args[0]))
                return getattr(torch, name)(value, dim)
            return UNARY[name](value)
        if isinstance(node, ast.ListExpr):
            items = torch.broadcast_tensors(*(self.eval(i) for i in node.items))
            return torch.stack(items, -1)
        raise QvrRuntimeError(
            f"line {node.span.start_line + 1}: qvr cannot run {type(node).__name__.lower()} "
            "expressions yet"
        )

    def _binary(self, node: ast.Binary) -> torch.Tensor:
        spine = [node]  # along the left spine: a long chain does not recurse per operator
        while isinstance(spine[-1].left, ast.Binary):
            spine.append(spine[-1].left)
        value = self.eval(spine[-1].left)
        for b in reversed(spine):
            value = real(_OPS[b.op](value, self.eval(b.right)))
        return value

    def _apply(self, node: ast.Apply) -> torch.Tensor:
        name = node.func.text
        args = [self.eval(a) for a in node.args]
        if len(args) == 1 and name in _REDUCE:
            dims = tuple(range(args[0].dim())) or None  # None: a 0-d tensor, reduce it whole
            return _REDUCE[name](args[0], dim=dims)  # type: ignore[arg-type]  # why: torch takes None; its stub does not say so
        if len(args) == 1 and name in UNARY:
            return UNARY[name](args[0])
        if len(args) == 2 and name in BINARY:
            return BINARY[name](*torch.broadcast_tensors(*args))
        raise QvrRuntimeError(
            f"line {node.span.start_line + 1}: no builtin function {name} of {len(args)} "
            "argument(s)"
        )

    def _index(self, node: ast.Arith) -> torch.Tensor | None:
        if isinstance(node, ast.Var) and node.name.text in self.plates:
            return None
        if isinstance(node, ast.Var):
            return self.lookup(node.name)
        return self.eval(node)


def gather(
    base: torch.Tensor,
    base_name: str,
    indices: tuple[object, ...],
    index_value: Callable[[Any], torch.Tensor | None],
) -> torch.Tensor:
    """`base[i, j, ...]`: entry-wise gather along the leading axes, checking every index."""
    keys: list[Any] = []
    for axis, node in enumerate(indices):
        value = index_value(node)
        if value is None:  # a plate name: every entry along this axis
            keys.append(slice(None))
            continue
        label = _label(node)
        if axis >= base.dim():
            raise QvrRuntimeError(
                f"'{base_name}' has {base.dim()} axes; it cannot take index {axis + 1} ({label})",
                site=base_name,
            )
        if value.is_floating_point():
            if not bool((value == value.round()).all()):
                raise QvrRuntimeError(
                    f"index '{label}' of '{base_name}' must hold whole numbers", site=label
                )
            value = value.long()
        size = base.shape[axis]
        if value.numel() and (int(value.min()) < 0 or int(value.max()) >= size):
            bad = int(value[(value < 0) | (value >= size)].reshape(-1)[0])
            raise QvrRuntimeError(
                f"index '{label}' holds {bad}, outside 0..{size - 1} for '{base_name}' "
                f"({size} entries along axis {axis + 1})",
                site=label,
            )
        keys.append(value.long())
    return base[tuple(keys)]


def _label(node: object) -> str:
    if isinstance(node, ast.Var):
        return node.name.text
    if isinstance(node, ast.Name):
        return node.text
    return type(node).__name__
