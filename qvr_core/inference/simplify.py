"""Fewer operations in a recorded potential: constants folded, identities removed.

A recorded potential (`inference.many`) is a graph of aten operations over a batch of
a few positions, so each operation costs its dispatch (about a microsecond in
TorchScript's interpreter), not its arithmetic. The recording keeps what the
program's Python did: operations on constants (a prior's `log(scale)`, the data
converted to float64, `zeros` to start a sum), and operations that change nothing
(`view`s and `unsqueeze`-then-`sum` back to the same shape, `pow(x, 1.0)` and
`mul(x, 1)` from the chain rule, `add(x, 0.0)`). This pass computes the first kind
once and replaces each of the second by its input, for a fixed batch shape. Then it
joins what takes fewer operations to the same bits: in a run of operations by constants,
a negation into a product or quotient (a Normal's `-(x - m)^2 / (2 s^2)`) and a product
by a power of two into another (the chain rule's `-(c * (2 * x))`); a run of shape
changes into one `reshape`; and the gradient's pieces of the position, each put in
place by a `slice_backward` and added up, into one `cat`. The caller checks the result
against the eager potential before it is used. Measured on eight schools: 149
operations become about 100, then 70, then 59.
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
#: What changes only a tensor's shape (the elements kept in order): a run of these is one
#: `reshape` of the first one's input (`_join_reshapes`).
SHAPE_CHANGES = {
    aten.view.default,
    aten._unsafe_view.default,
    aten.reshape.default,
    aten.unsqueeze.default,
    aten.squeeze.dim,
    aten.squeeze.dims,
    aten.squeeze.default,
}
#: Operations that keep the elements in order and only change the shape, or nothing. Not
#: `clone`: it also lays the elements out contiguously, and a `view` after it (autograd's
#: backward of a batch's column) fails on the strided tensor it was made from.
RESHAPES = SHAPE_CHANGES | {
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


def simplify(module: GraphModule, *examples: torch.Tensor, join: bool = True) -> GraphModule:
    """`module` with its constants folded and its identities removed, for inputs of
    the shapes and dtypes of `examples`, one for each placeholder in order (the result
    is for those shapes only), and, with `join`, runs of operations joined where fewer
    give the same bits (`join=False`: what `bench/potential_operations.py` compares
    with). A random draw is never folded: each replay draws anew. Torch's random state
    is left as it was (the shapes are found by running the graph)."""
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
    if join:
        _join_affine_chains(module, constants)
        _join_reshapes(module)
        _join_slices(module)
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


#: Operations of one input `x` and a constant, as `_Stage`s (`_stages_of`).
_ADD = {aten.add.Tensor, aten.add.Scalar}
_SUB = {aten.sub.Tensor, aten.sub.Scalar}
_MUL = {aten.mul.Tensor, aten.mul.Scalar}
_DIV = {aten.div.Tensor, aten.div.Scalar}
_BY_CONSTANTS = _ADD | _SUB | _MUL | _DIV | {aten.neg.default}


@dataclass(frozen=True)
class _Stage:
    """One step of a run of operations by constants: `neg`, or `mul`, `div` or `add` of
    `value` (a number or a tensor)."""

    kind: str
    value: Any = None


def _constant(value: Any, constants: dict[Node, torch.Tensor]) -> Any:
    """The value of an argument that is a constant (a number or a folded tensor), or None."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, Node):
        return constants.get(value)
    return None


def _stages_of(node: Node, constants: dict[Node, torch.Tensor]) -> tuple[Node, list[_Stage]] | None:
    """(x, stages) where `node` is its stages applied to its one input `x` that is not a
    constant, each the same floating-point operation as written: `x - c` is `x + (-c)`
    and `c - x` is `(-x) + c`, to the last bit, since negation is exact."""
    target = node.target
    if node.op != "call_function" or target not in _BY_CONSTANTS or node.kwargs:
        return None
    if target is aten.neg.default:
        x = node.args[0]
        return (x, [_Stage("neg")]) if isinstance(x, Node) and x not in constants else None
    if len(node.args) != 2:
        return None
    first, second = node.args
    c_first, c_second = _constant(first, constants), _constant(second, constants)
    if (c_first is None) == (c_second is None):
        return None  # two inputs, or two constants (folded already)
    x = second if c_first is not None else first
    c = c_first if c_first is not None else c_second
    if not isinstance(x, Node):
        return None
    if target in _ADD:
        return x, [_Stage("add", c)]
    if target in _SUB:
        return (
            (x, [_Stage("add", -c)])
            if c_second is not None
            else (x, [_Stage("neg"), _Stage("add", c)])
        )
    if target in _MUL:
        return x, [_Stage("mul", c)]
    return (x, [_Stage("div", c)]) if c_second is not None else None  # c / x is not by a constant


def _power_of_two(value: Any) -> bool:
    """Whether every element is +-2^k: a product by it is exact (short of overflow)."""
    v = torch.as_tensor(value, dtype=torch.float64)
    if v.numel() == 0 or not bool(torch.isfinite(v).all()) or bool((v == 0).any()):
        return False
    mantissa, _ = torch.frexp(v.abs())
    return bool((mantissa == 0.5).all())


def _folded(stages: list[_Stage]) -> list[_Stage]:
    """The stages with every pair whose one operation gives the same bits as the two
    joined: a negation into a product or quotient by a constant (its sign), two
    negations cancelled, products and quotients by constants where one of the two is a
    power of two; and a negation after a sum moved before it (`-(x + c)` is `(-c) - x`,
    one subtraction), where it may meet a product. Sums are never joined: `(x + a) + b`
    and `x + (a + b)` round apart. Negations only move towards the input, so it ends."""
    out = list(stages)
    changed = True
    while changed:
        changed = False
        for k in range(len(out) - 1):
            joined = _pair(out[k], out[k + 1])
            if joined is not None:
                out[k : k + 2] = joined
                changed = True
                break
    return out


def _pair(a: _Stage, b: _Stage) -> list[_Stage] | None:
    """`a` then `b` as fewer stages that round the same, or None. Two scalings join where
    one is by a power of two (exact), into the other's kind: `x * c / 2` is `x * (c / 2)`,
    `x / 2 * c` is `x * (c / 2)`, `x / c * 2` is `x / (c / 2)`."""
    if a.kind == "neg" and b.kind == "neg":
        return []
    if a.kind == "add" and b.kind == "neg":
        return [_Stage("neg"), _Stage("add", -a.value)]
    scaling = {"mul", "div"}
    if a.kind == "neg" and b.kind in scaling:
        return [_Stage(b.kind, -b.value)]
    if a.kind in scaling and b.kind == "neg":
        return [_Stage(a.kind, -a.value)]
    if a.kind not in scaling or b.kind not in scaling:
        return None
    if a.kind == b.kind:  # x * a * b, x / a / b
        exact = _power_of_two(a.value) or _power_of_two(b.value)
        return [_Stage(a.kind, a.value * b.value)] if exact else None
    power, other = (a, b) if _power_of_two(a.value) else (b, a)
    if not _power_of_two(power.value):
        return None
    # a product and a quotient, in either order: x * c / 2, x * 2 / c, x / c * 2 and
    # x / 2 * c are each the other's operation by its constant over the power of two
    return [_Stage(other.kind, other.value / power.value)]


def _plan(stages: list[_Stage]) -> list[tuple[Any, Any, bool]]:
    """The operations that apply `stages`: (aten operation, constant, constant first); a
    negation before a sum is one subtraction, `c - x`."""
    ops = {"neg": aten.neg.default, "mul": aten.mul.Tensor, "div": aten.div.Tensor}
    plan: list[tuple[Any, Any, bool]] = []
    k = 0
    while k < len(stages):
        stage = stages[k]
        if stage.kind == "neg" and k + 1 < len(stages) and stages[k + 1].kind == "add":
            plan.append((aten.sub.Tensor, stages[k + 1].value, True))
            k += 2
            continue
        plan.append((ops.get(stage.kind, aten.add.Tensor), stage.value, False))
        k += 1
    return plan


def _join_affine_chains(module: GraphModule, constants: dict[Node, torch.Tensor]) -> None:
    """Each run of operations by constants (`_BY_CONSTANTS`), each but the last used only
    by the next, in fewer operations where `_folded` finds pairs to join. The result is
    the run's to the last bit, so a recorded potential computes what the eager one does
    (NUTS's trajectories, which turn the last bit into other draws, stay the same)."""
    runs: dict[Node, tuple[Node, list[_Stage], int]] = {}  # node -> (input, stages, written)
    for node in module.graph.nodes:
        found = _stages_of(node, constants)
        if found is None:
            continue
        x, stages = found
        inner = runs.get(x)
        if inner is not None and len(x.users) == 1:
            runs[node] = (inner[0], inner[1] + stages, inner[2] + 1)
        else:
            runs[node] = (x, stages, 1)
    replaced: dict[Node, Node] = {}  # a rewritten end, which a later run may start from
    for node, (base, stages, written) in list(runs.items()):
        if any(user in runs and runs[user][2] > written for user in node.users):
            continue  # not the end of its run
        folded = _folded(stages)
        if len(_plan(folded)) >= written:
            continue
        new = _write_stages(module, node, replaced.get(base, base), folded)
        if new is not None:
            replaced[node] = new


def _write_stages(module: GraphModule, end: Node, base: Node, stages: list[_Stage]) -> Node | None:
    """`end` replaced by `stages` applied to `base`: the new node, or None where the
    stages would give another shape or dtype (checked on zeros of the input's)."""
    meta, base_meta = _meta(end), _meta(base)
    if meta is None or base_meta is None:
        return None
    plan = _plan(stages)
    probe: Any = torch.zeros(base_meta.shape, dtype=base_meta.dtype)
    for op, value, first in plan:
        probe = op(probe) if value is None else op(value, probe) if first else op(probe, value)
    if tuple(probe.shape) != tuple(meta.shape) or probe.dtype != meta.dtype:
        return None
    node = base
    with module.graph.inserting_before(end):
        for op, value, first in plan:
            if value is None:
                node = module.graph.call_function(op, (node,))
                continue
            if isinstance(value, torch.Tensor):
                name = f"_qvr_joined_{sum(1 for _ in module.buffers())}"
                module.register_buffer(name, value.detach().clone())
                value = module.graph.get_attr(name)
            node = module.graph.call_function(op, (value, node) if first else (node, value))
    node.meta[META] = meta
    end.replace_all_uses_with(node)
    return node


def _join_reshapes(module: GraphModule) -> None:
    """Each run of two or more shape changes (`SHAPE_CHANGES`), each but the last used only by
    the next, as one `reshape` to the last one's shape (autograd's backward unsqueezes
    twice, and squeezes back twice)."""
    starts: dict[Node, tuple[Node, int]] = {}  # node -> (the run's input, its length)
    for node in module.graph.nodes:
        if node.op != "call_function" or node.target not in SHAPE_CHANGES:
            continue
        x = node.args[0]
        if not isinstance(x, Node):
            continue
        inner = starts.get(x)
        starts[node] = (inner[0], inner[1] + 1) if inner and len(x.users) == 1 else (x, 1)
    for node, (base, length) in starts.items():
        meta = _meta(node)
        extended = any(user in starts and starts[user][1] > length for user in node.users)
        if length < 2 or meta is None or extended:
            continue
        with module.graph.inserting_before(node):
            joined = module.graph.call_function(aten.reshape.default, (base, list(meta.shape)))
        joined.meta[META] = meta
        node.replace_all_uses_with(joined)


@dataclass(frozen=True)
class _Slice:
    """A `slice_backward`: `grad` put at `start:stop` of dimension `dim` of zeros `sizes`."""

    grad: Node
    sizes: tuple[int, ...]
    dim: int
    start: int
    stop: int


def _slice_of(node: Node) -> _Slice | None:
    """`node` as a `_Slice` where it is a step-1 `slice_backward` of numbers used once."""
    if node.target is not aten.slice_backward.default or len(node.users) != 1:
        return None
    grad, sizes, dim, start, stop, step = node.args
    if not isinstance(grad, Node) or not isinstance(sizes, (list, tuple)):
        return None
    if not (isinstance(dim, int) and isinstance(start, int) and isinstance(stop, int)):
        return None  # a size that is not a number (a symbolic one): left as it is
    shape = tuple(v for v in sizes if isinstance(v, int) and not isinstance(v, bool))
    if step != 1 or len(shape) != len(sizes):
        return None
    return _Slice(grad, shape, dim % len(shape), start, stop)


def _join_slices(module: GraphModule) -> None:
    """A sum of `slice_backward`s, each used only there, whose slices of one dimension lay
    side by side over all of it (the gradient of a position read a slice per latent), as
    one `cat` of their inputs in order."""
    for node in list(module.graph.nodes):
        if node.target is not aten.add.Tensor or node.kwargs or _is_part_of_sum(node):
            continue
        terms = _summands(node)
        if terms is None or len(terms) < 2:
            continue
        found = [_slice_of(t) for t in terms]
        slices = sorted((f for f in found if f is not None), key=lambda f: f.start)
        if len(slices) != len(terms):
            continue
        first = slices[0]
        if any(f.sizes != first.sizes or f.dim != first.dim for f in slices):
            continue
        ends = [0] + [f.stop for f in slices]
        if [f.start for f in slices] != ends[:-1] or ends[-1] != first.sizes[first.dim]:
            continue
        with module.graph.inserting_before(node):
            joined = module.graph.call_function(
                aten.cat.default, ([f.grad for f in slices], first.dim)
            )
        joined.meta.update(node.meta)
        node.replace_all_uses_with(joined)


def _summands(node: Node) -> list[Node] | None:
    """The terms of a tree of plain `add`s under `node` (inner adds used only there)."""
    terms: list[Node] = []
    for arg in node.args[:2]:
        if not isinstance(arg, Node):
            return None
        if arg.target is aten.add.Tensor and not arg.kwargs and len(arg.users) == 1:
            inner = _summands(arg)
            if inner is None:
                return None
            terms.extend(inner)
        else:
            terms.append(arg)
    return terms


def _is_part_of_sum(node: Node) -> bool:
    """Whether `node` is an inner add of a larger sum (its one user is a plain add)."""
    return (
        len(node.users) == 1
        and next(iter(node.users)).target is aten.add.Tensor
        and not next(iter(node.users)).kwargs
    )
