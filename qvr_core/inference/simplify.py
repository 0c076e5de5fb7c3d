"""Fewer operations in a recorded potential: constants folded, identities removed.

A recorded potential (`inference.many`) is a graph of aten operations over a batch of
a few positions, so each operation costs its dispatch (about a microsecond in
TorchScript's interpreter), not its arithmetic. The recording keeps what the
program's Python did: operations on constants (a prior's `log(scale)`, the data
converted to float64, `zeros` to start a sum), and operations that change nothing
(`view`s and `unsqueeze`-then-`sum` back to the same shape, `pow(x, 1.0)` and
`mul(x, 1)` from the chain rule, `add(x, 0.0)`). This pass computes the first kind
once and replaces each of the second by its input, for a fixed batch shape; the
caller checks the result against the eager potential before it is used. Measured on
eight schools: 149 operations become about 100.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch.fx import GraphModule, Interpreter, Node

from qvr_core.inference import generators

aten = torch.ops.aten

#: Operations whose result depends only on the shapes of their inputs, which are fixed.
SHAPE_ONLY = {
    aten.new_zeros.default,
    aten.new_ones.default,
    aten.new_full.default,
    aten.new_empty.default,
    aten.zeros_like.default,
    aten.ones_like.default,
    aten.full_like.default,
    aten.zeros.default,
    aten.ones.default,
    aten.full.default,
    aten.scalar_tensor.default,
}
#: Operations that keep the elements in order and only change the shape. Not `clone`:
#: it also lays the elements out contiguously, and a `view` after it (autograd's
#: backward of a batch's column) fails on the strided tensor it was made from.
RESHAPES = {
    aten.view.default,
    aten._unsafe_view.default,
    aten.reshape.default,
    aten.unsqueeze.default,
    aten.squeeze.dim,
    aten.squeeze.dims,
    aten.squeeze.default,
    aten.alias.default,
    aten.detach.default,
    aten.lift_fresh_copy.default,
}
SUMS = {aten.sum.dim_IntList}
NO_OPS = {aten.expand.default, aten._to_copy.default}
NEUTRAL = {  # operation -> (neutral value, whether the constant may stand first)
    aten.add.Tensor: (0.0, True),
    aten.sub.Tensor: (0.0, False),
    aten.mul.Tensor: (1.0, True),
    aten.div.Tensor: (1.0, False),
    aten.pow.Tensor_Scalar: (1.0, False),
}


def simplify(module: GraphModule, *examples: torch.Tensor) -> GraphModule:
    """`module` with its constants folded and its identities removed, for inputs of
    the shapes and dtypes of `examples`, one for each placeholder in order (the result
    is for those shapes only). A random draw is never folded: each replay draws anew.
    Torch's random state is left as it was (the shapes are found by running the graph)."""
    with generators.forked(generators.devices_of(examples)):
        constants = _fold(module, examples)
        _ShapeOf(module).run(*examples)
    for node in list(module.graph.nodes):
        if node.op != "call_function":
            continue
        same = _identity_of(node, constants)
        if same is not None:
            node.replace_all_uses_with(same)
    module.graph.eliminate_dead_code()
    module.recompile()
    return module


def _fold(module: GraphModule, examples: tuple[torch.Tensor, ...]) -> dict[Node, torch.Tensor]:
    """Evaluate every operation that does not depend on the inputs' values once, and
    put its value in the graph as a constant; returns the constants by node."""
    values: dict[Node, Any] = {}
    constants: dict[Node, torch.Tensor] = {}
    shapes_of: dict[Node, Any] = {}
    placeholders = iter(examples)
    for node in list(module.graph.nodes):
        if node.op == "placeholder":
            shapes_of[node] = next(placeholders)
            continue
        if node.op == "get_attr":
            values[node] = _attribute(module, str(node.target))
            continue
        if node.op != "call_function":
            continue
        args, kwargs = node.args, node.kwargs
        if _draws(node):
            shaped = None
        elif node.target in SHAPE_ONLY:
            shaped = _substitute(args, kwargs, lambda n: values.get(n, shapes_of.get(n)))
        elif all(n in values for n in node.all_input_nodes):
            shaped = _substitute(args, kwargs, values.get)
        else:
            shaped = None
        if shaped is not None:
            call = node.target
            assert callable(call)
            result = call(*shaped[0], **shaped[1])
            if isinstance(result, torch.Tensor):
                values[node] = result
                continue
        # not constant: run it on the example's shapes for what follows
        shapes_of[node] = _run_on_shapes(node, values, shapes_of)
    for node, value in values.items():
        if node.op != "call_function" or all(user in values for user in node.users):
            continue  # an input, or used only by other constants
        name = f"_qvr_folded_{len(constants)}"
        module.register_buffer(name, value.detach().clone())
        with module.graph.inserting_before(node):
            constant = module.graph.get_attr(name)
        node.replace_all_uses_with(constant)
        constants[constant] = value
    for node in module.graph.nodes:
        if node.op == "get_attr" and node not in constants:
            value = _attribute(module, str(node.target))
            if isinstance(value, torch.Tensor):
                constants[node] = value
    module.graph.eliminate_dead_code()
    module.recompile()
    return constants


def _draws(node: Node) -> bool:
    """Whether the node draws random numbers (its value differs from call to call)."""
    tags = getattr(node.target, "tags", ())
    return torch.Tag.nondeterministic_seeded in tags


def _run_on_shapes(node: Node, values: dict[Node, Any], shapes_of: dict[Node, Any]) -> Any:
    """The node's value on the example input (only its shape matters to what follows)."""

    def lookup(n: Node) -> Any:
        return values[n] if n in values else shapes_of.get(n)

    shaped = _substitute(node.args, node.kwargs, lookup)
    if shaped is None:
        return None
    call = node.target
    assert callable(call)
    try:
        return call(*shaped[0], **shaped[1])
    except Exception:  # an operation the example cannot run: nothing after it folds
        return None


def _substitute(
    args: Any, kwargs: Any, lookup: Callable[[Node], Any]
) -> tuple[tuple[Any, ...], dict[str, Any]] | None:
    missing = False

    def swap(a: Any) -> Any:
        nonlocal missing
        if isinstance(a, Node):
            v = lookup(a)
            if v is None:
                missing = True
            return v
        if isinstance(a, (list, tuple)):
            return type(a)(swap(x) for x in a)
        return a

    new_args = tuple(swap(a) for a in args)
    new_kwargs = {k: swap(v) for k, v in kwargs.items()}
    return None if missing else (new_args, new_kwargs)


def _attribute(module: GraphModule, target: str) -> Any:
    value: Any = module
    for part in target.split("."):
        value = getattr(value, part)
    return value


class _ShapeOf(Interpreter):
    """Runs the graph on the example, noting each tensor's shape and dtype on its node
    (what fx's `ShapeProp` notes, without its import of sympy: 0.3-0.5 s of a run)."""

    def run_node(self, n: Node) -> Any:
        result = super().run_node(n)
        if isinstance(result, torch.Tensor):
            n.meta[META] = _TensorMeta(tuple(result.shape), result.dtype)
        return result


@dataclass(frozen=True)
class _TensorMeta:
    shape: tuple[int, ...]
    dtype: torch.dtype


META = "qvr_tensor_meta"  # the key of a node's `_TensorMeta`


def _meta(node: Any) -> Any:
    return node.meta.get(META) if isinstance(node, Node) else None


def _same_kind(a: Node, b: Node) -> bool:
    ma, mb = _meta(a), _meta(b)
    return (
        ma is not None
        and mb is not None
        and tuple(ma.shape) == tuple(mb.shape)
        and ma.dtype == mb.dtype
    )


def _identity_of(node: Node, constants: dict[Node, torch.Tensor]) -> Node | None:
    """The node `node` equals element for element (same shape and dtype), if any."""
    target = node.target
    if target in RESHAPES or target in NO_OPS or _sums_unit_dims(node):
        source = node.args[0]
        while isinstance(source, Node):  # the farthest reshape of the same elements
            if _same_kind(source, node):
                return source
            if not _reshapes(source):
                return None
            source = source.args[0]
        return None
    if target in NEUTRAL:
        neutral, either = NEUTRAL[target]
        x, c = node.args[0], node.args[1] if len(node.args) > 1 else None
        if _is(c, neutral, constants) and isinstance(x, Node) and _same_kind(x, node):
            return x
        plain = node.kwargs.get("alpha", 1) == 1
        if (
            either
            and plain
            and _is(x, neutral, constants)
            and isinstance(c, Node)
            and _same_kind(c, node)
        ):
            return c
    return None


def _reshapes(node: Node) -> bool:
    if node.op != "call_function":
        return False
    if node.target in RESHAPES or _sums_unit_dims(node):
        return True
    if node.target is aten.expand.default:  # an expand that adds no elements
        source, meta = node.args[0], _meta(node)
        return (
            isinstance(source, Node)
            and meta is not None
            and _meta(source) is not None
            and _numel(meta.shape) == _numel(_meta(source).shape)
        )
    return False


def _sums_unit_dims(node: Node) -> bool:
    """A sum over dimensions that all have size 1: the same elements, reshaped."""
    if node.target not in SUMS or len(node.args) < 2:
        return False
    source = node.args[0]
    meta = _meta(source)
    if meta is None or node.kwargs.get("dtype") is not None:
        return False
    dims = node.args[1]
    if not isinstance(dims, (list, tuple)) or not dims:
        return False
    shape = tuple(meta.shape)
    return all(shape[d] == 1 for d in dims if isinstance(d, int))


def _numel(shape: Any) -> int:
    n = 1
    for s in shape:
        n *= int(s)
    return n


def _is(value: Any, neutral: float, constants: dict[Node, torch.Tensor]) -> bool:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value) == neutral
    if isinstance(value, Node) and value in constants:
        c = constants[value]
        return bool(c.numel() > 0 and (c == neutral).all())
    return False
