"""Record the aten operations a function runs into an FX graph, without torch's compiler.

`inference.many` compiles a potential and its gradient by recording the operations
they run once and replaying them in TorchScript. torch's own recorder, `make_fx`,
imports torch's compiler stack (dynamo and inductor) on first use: 1.1-1.3 s of
every `qvr run` on this machine, for a model whose sampling takes a few seconds.
This recorder is a `TorchDispatchMode`, which sees each aten operation after
autograd and vmap have turned it into plain operations on plain tensors (the
backward pass included), and writes one graph node per operation: a tensor made
inside is the node that made it, any other tensor a constant of the graph. An
in-place operation (autograd's backward of a gather is `new_zeros` then
`index_put_`) is written as its out-of-place form, its tensor then standing for the
new node: the graph is functional, so later passes may fold a constant (the zeros)
or drop a copy without a replay writing into it. Mutating a view, a tensor a view
was taken of, or a tensor made outside cannot be written so and is not recorded.

As with `make_fx` in its "real" mode, the recording holds for the shapes and the
Python control flow of the call it watched. A value that depends on the input and is
read back into Python (`.item()`, a comparison in an `if`) cannot be recorded and
raises `NotRecordable`; so does a random draw, unless the caller asks for draws to be
recorded as draws (an SVI step's noise: each replay then draws afresh from torch's
generator, in the order the recorded call drew). A value read back that does not depend on the
input (an index's bounds check on the data, or on the values a `marginalize` sums
over) is the same in every replay, so the control flow it decides is recorded as
taken. A check declared with `runtime.value_checks.check_values` on values that do
depend on the input is kept when the caller asks for checks: its tensors become
outputs of the graph and the caller runs the check on each replay's values. The
caller checks the replayed graph against the function before it uses it.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import fx
from torch.utils._python_dispatch import TorchDispatchMode

from qvr_core.runtime.value_checks import Check, run_check, watching

aten = torch.ops.aten

#: Operations that answer about shapes only (fixed in a recording): not recorded.
METADATA = {aten.is_same_size.default}


class NotRecordable(Exception):
    """The function did something a fixed graph of operations cannot replay."""


class _Recorder(TorchDispatchMode):
    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        # torch otherwise wraps __torch_dispatch__ in dynamo's `disable`, importing
        # dynamo at the first operation: the very cost this module exists to avoid
        return False

    def __init__(self, graph: fx.Graph, root: torch.nn.Module, random: bool = False) -> None:
        super().__init__()
        self.graph, self.root, self.random = graph, root, random
        self.nodes: dict[int, fx.Node] = {}
        self.alive: list[torch.Tensor] = []  # keeps every seen tensor's id unique
        self.varying: set[int] = set()  # ids of the tensors computed from the input
        self.made: set[int] = set()  # ids of the tensors an operation here made
        self.viewed: set[int] = set()  # ids of the tensors a view was taken of
        self.checks: list[tuple[Check, list[torch.Tensor]]] | None = None  # kept, if asked
        self.checking = False  # a kept check reads its values: not a read to refuse

    def bind(self, tensor: torch.Tensor, node: fx.Node, varying: bool = False) -> None:
        self.nodes[id(tensor)] = node
        self.alive.append(tensor)
        if varying:
            self.varying.add(id(tensor))

    def _varies(self, value: Any) -> bool:
        if isinstance(value, torch.Tensor):
            return id(value) in self.varying
        if isinstance(value, (list, tuple)):
            return any(self._varies(v) for v in value)
        if isinstance(value, dict):
            return any(self._varies(v) for v in value.values())
        return False

    def node_of(self, tensor: torch.Tensor) -> fx.Node:
        node = self.nodes.get(id(tensor))
        if node is None:  # made outside the recording: the data, a prior's parameter
            name = f"_tensor_constant{len(self.alive)}"
            self.root.register_buffer(name, tensor.detach())
            node = self.graph.get_attr(name)
            self.bind(tensor, node)
        return node

    def __torch_dispatch__(
        self,
        func: Any,
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        kwargs = kwargs or {}
        seeded = torch.Tag.nondeterministic_seeded in func.tags
        if seeded and not self.random:
            raise NotRecordable(f"{func} draws random numbers")
        out = func(*args, **kwargs)
        if func in METADATA:
            return out
        # a draw varies from replay to replay, like a value computed from the input
        varies = seeded or self._varies(args) or self._varies(kwargs)
        if varies and self._shape_from_values(func, args):
            raise NotRecordable(f"{func} makes a shape from a value of the input")
        if func._schema.is_mutable:
            return self._in_place(func, args, kwargs, out, varies)
        if not _has_tensor(out):
            if varies and not self.checking:
                raise NotRecordable(f"{func} reads a value of the input back into Python")
            return out  # a constant read: every replay would read the same
        node = self.graph.call_function(func, self._args(args), self._args(kwargs))
        if _is_view(func):
            self.viewed.update(id(a) for a in args if isinstance(a, torch.Tensor))
        if isinstance(out, torch.Tensor):
            self.bind(out, node, varies)
            self.made.add(id(out))
        else:
            for i, item in enumerate(out):
                if isinstance(item, torch.Tensor):
                    item_node = self.graph.call_function(operator.getitem, (node, i))
                    self.bind(item, item_node, varies)
                    self.made.add(id(item))
        return out

    def watch(self, check: Check, tensors: tuple[torch.Tensor, ...]) -> None:
        """A `check_values` call: run now, and kept for every replay where its values
        vary (only if the caller asked for checks; else such a read is refused)."""
        if self.checks is not None and any(self._varies(t) for t in tensors):
            self.checks.append((check, list(tensors)))
            self.checking = True
            try:
                run_check(check, tensors)
            finally:
                self.checking = False
            return
        run_check(check, tensors)

    def _shape_from_values(self, func: Any, args: tuple[Any, ...]) -> bool:
        """Whether `func`'s result has a shape read from the values of an input that
        varies (`nonzero`, a boolean mask's selection): a later replay would make
        another shape than the operations recorded after it expect. An integer index's
        result has its index's shape."""
        if torch.Tag.dynamic_output_shape not in func.tags:
            return False
        if func is not aten.index.Tensor:
            return True
        indices = args[1] if len(args) > 1 else []
        return any(
            isinstance(i, torch.Tensor)
            and i.dtype in (torch.bool, torch.uint8)
            and id(i) in self.varying
            for i in indices
        )

    def _in_place(
        self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any, varies: bool
    ) -> Any:
        """Write `func` (already run) as its out-of-place form: its first argument, the
        tensor it changed, stands for the new node from here on."""
        target = args[0] if args else None
        functional = _out_of_place(func)
        if (
            functional is None
            or not isinstance(target, torch.Tensor)
            or out is not target
            or id(target) not in self.made
            or id(target) in self.viewed
            or target._base is not None
        ):
            raise NotRecordable(f"{func} changes a tensor in place that a graph cannot follow")
        node = self.graph.call_function(functional, self._args(args), self._args(kwargs))
        self.bind(target, node, varies)
        return out

    def _args(self, value: Any) -> Any:
        if isinstance(value, torch.Tensor):
            return self.node_of(value)
        if isinstance(value, (list, tuple)):
            return type(value)(self._args(v) for v in value)
        if isinstance(value, dict):
            return {k: self._args(v) for k, v in value.items()}
        return value


#: In-place operations whose out-of-place form has another name.
RENAMED = {aten.normal_.default: aten.normal_functional.default}  # a distribution's rsample


def _out_of_place(func: Any) -> Any:
    """`aten.add.Tensor` for `aten.add_.Tensor`; None for a mutation without that form
    (an `out=` overload)."""
    if func in RENAMED:
        return RENAMED[func]
    name = func._schema.name.split("::")[-1]
    if not name.endswith("_") or name.endswith("__"):
        return None
    packet = getattr(aten, name[:-1], None)
    functional = getattr(packet, func._overloadname, None) if packet is not None else None
    if functional is None or functional._schema.is_mutable:
        return None
    return functional


def _is_view(func: Any) -> bool:
    """Whether `func`'s result shares its input's memory (`view`, `expand`, `select`...)."""
    return any(r.alias_info is not None for r in func._schema.returns)


def _has_tensor(value: Any) -> bool:
    if isinstance(value, torch.Tensor):
        return True
    return isinstance(value, (list, tuple)) and any(isinstance(v, torch.Tensor) for v in value)


def record(
    fn: Callable[[torch.Tensor], tuple[torch.Tensor, ...]], example: torch.Tensor
) -> fx.GraphModule:
    """A graph module replaying the operations `fn(example)` ran, returning its tensors."""
    x = example.detach().clone()
    return record_call(lambda: fn(x), [x])


def record_call(
    fn: Callable[[], Sequence[torch.Tensor]],
    inputs: Sequence[torch.Tensor],
    *,
    random: bool = False,
    checks: list[tuple[Check, int]] | None = None,
) -> fx.GraphModule:
    """A graph module replaying the operations `fn()` ran, returning its tensors.

    `inputs` are the tensors `fn` reads (a model's parameters, say) that the replay
    takes as its arguments, in order; any other tensor it reads is a constant.
    `random`: record random draws as draws rather than refuse them. `checks`: a list
    to keep the `check_values` checks on values that vary in (each with its number of
    tensors, which the graph returns after `fn`'s, in order); without it such a check
    cannot be recorded."""
    graph = fx.Graph()
    root = torch.nn.Module()
    recorder = _Recorder(graph, root, random)
    if checks is not None:
        recorder.checks = []
    for i, tensor in enumerate(inputs):
        recorder.bind(tensor, graph.placeholder(f"x{i}"), varying=True)
    with recorder, watching(recorder.watch):
        outputs = list(fn())
    for check, tensors in recorder.checks or []:
        assert checks is not None
        checks.append((check, len(tensors)))
        outputs.extend(tensors)
    graph.output(tuple(recorder.node_of(t) for t in outputs))
    module = fx.GraphModule(root, graph)
    module.graph.eliminate_dead_code()
    module.recompile()
    return module
