"""Record the aten operations a function runs into an FX graph, without torch's compiler.

`inference.many` compiles a potential and its gradient by recording the operations
they run once and replaying them in TorchScript. torch's own recorder, `make_fx`,
imports torch's compiler stack (dynamo and inductor) on first use: 1.1-1.3 s of
every `qvr run` on this machine, for a model whose sampling takes a few seconds.
This recorder is a `TorchDispatchMode`, which sees each aten operation after
autograd and vmap have turned it into plain operations on plain tensors (the
backward pass included), and writes one graph node per operation: a tensor made
inside is the node that made it, any other tensor a constant of the graph.

As with `make_fx` in its "real" mode, the recording holds for the shapes and the
Python control flow of the call it watched. A value read back into Python (`.item()`,
a comparison in an `if`) or a random draw cannot be recorded and raises
`NotRecordable`; the caller checks the replayed graph against the function before it
uses it.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import torch
from torch import fx
from torch.utils._python_dispatch import TorchDispatchMode

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

    def __init__(self, graph: fx.Graph, root: torch.nn.Module) -> None:
        super().__init__()
        self.graph, self.root = graph, root
        self.nodes: dict[int, fx.Node] = {}
        self.alive: list[torch.Tensor] = []  # keeps every seen tensor's id unique

    def bind(self, tensor: torch.Tensor, node: fx.Node) -> None:
        self.nodes[id(tensor)] = node
        self.alive.append(tensor)

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
        if torch.Tag.nondeterministic_seeded in func.tags:
            raise NotRecordable(f"{func} draws random numbers")
        out = func(*args, **kwargs)
        if func in METADATA:
            return out
        if not _has_tensor(out):
            raise NotRecordable(f"{func} reads a value back into Python")
        node = self.graph.call_function(func, self._args(args), self._args(kwargs))
        if isinstance(out, torch.Tensor):
            self.bind(out, node)
        else:
            for i, item in enumerate(out):
                if isinstance(item, torch.Tensor):
                    self.bind(item, self.graph.call_function(operator.getitem, (node, i)))
        return out

    def _args(self, value: Any) -> Any:
        if isinstance(value, torch.Tensor):
            return self.node_of(value)
        if isinstance(value, (list, tuple)):
            return type(value)(self._args(v) for v in value)
        if isinstance(value, dict):
            return {k: self._args(v) for k, v in value.items()}
        return value


def _has_tensor(value: Any) -> bool:
    if isinstance(value, torch.Tensor):
        return True
    return isinstance(value, (list, tuple)) and any(isinstance(v, torch.Tensor) for v in value)


def record(
    fn: Callable[[torch.Tensor], tuple[torch.Tensor, ...]], example: torch.Tensor
) -> fx.GraphModule:
    """A graph module replaying the operations `fn(example)` ran, returning its tensors."""
    graph = fx.Graph()
    root = torch.nn.Module()
    recorder = _Recorder(graph, root)
    x = example.detach().clone()
    recorder.bind(x, graph.placeholder("x"))
    with recorder:
        outputs = fn(x)
    graph.output(tuple(recorder.node_of(t) for t in outputs))
    module = fx.GraphModule(root, graph)
    module.graph.eliminate_dead_code()
    module.recompile()
    return module
