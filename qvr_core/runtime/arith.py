"""Program `let` arithmetic: `+ - * /`, unary `-`, numbers and elementwise builtins.

The checker has already verified names and dimensions; this evaluates the
syntax tree on tensors. Numbers stay Python floats until they meet a tensor,
so they broadcast against any value.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import reduce

import torch
import torch.nn.functional as F

from qvr_core.runtime.errors import QvrError
from qvr_core.syntax import ast

Value = torch.Tensor | float

UNARY: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "sigmoid": torch.sigmoid,
    "tanh": torch.tanh,
    "exp": torch.exp,
    "log": torch.log,
    "softplus": F.softplus,
    "relu": torch.relu,
}
BINARY: dict[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = {
    "min": torch.minimum,
    "max": torch.maximum,
}


_OPS: dict[str, Callable[[Value, Value], Value]] = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "/": lambda a, b: a / b,
}


def evaluate(node: ast.Arith, env: Mapping[str, torch.Tensor]) -> torch.Tensor:
    """The value of an arithmetic expression as a tensor."""
    v = _eval(node, env)
    return v if isinstance(v, torch.Tensor) else torch.tensor(v)


def _eval(node: ast.Arith, env: Mapping[str, torch.Tensor]) -> Value:
    if isinstance(node, ast.Number):
        return float(node.value)
    if isinstance(node, ast.Var):
        return _float(env[node.name.text])
    if isinstance(node, ast.Unary):
        return -_eval(node.operand, env)
    if isinstance(node, ast.Binary):
        # a loop along the left spine: `a + b + c ...` does not recurse per operator
        spine = [node]
        while isinstance(spine[-1].left, ast.Binary):
            spine.append(spine[-1].left)
        value = _eval(spine[-1].left, env)
        for b in reversed(spine):
            value = _OPS[b.op](value, _eval(b.right, env))
        return value
    if not isinstance(node, ast.Apply):
        # the checker leaves programs with quivers' other values names-only: none runs
        raise QvrError(f"a {type(node).__name__} value cannot run")
    args = [_eval(a, env) for a in node.args]
    name = node.func.text
    if name in UNARY:
        return UNARY[name](_tensor(args[0], args[0]))
    op = BINARY[name]
    return reduce(lambda a, b: op(_tensor(a, b), _tensor(b, a)), args)


def _float(t: torch.Tensor) -> torch.Tensor:
    """FinSet indices used in arithmetic count as numbers."""
    return t if t.is_floating_point() else t.to(torch.get_default_dtype())


def _tensor(v: Value, like: Value) -> torch.Tensor:
    if isinstance(v, torch.Tensor):
        return v
    if isinstance(like, torch.Tensor):
        return torch.as_tensor(v, dtype=like.dtype, device=like.device)
    return torch.tensor(v)
