"""A frozen traced graph run by torch's Static Runtime rather than TorchScript's interpreter.

The recorded NUTS potential (`inference.many`) of a model program is small: tens to
hundreds of aten operations on small tensors, where the time is each operation's
dispatch, not its arithmetic. TorchScript's
interpreter looks every operation's kernel up again on each call; Static Runtime, its
executor for frozen inference graphs, resolves them once, when the module is made. On
the potentials of model programs that is most of the remaining time: kidiq's 76
operations (4 chains x 434 rows) take 99 us rather than 134, eight schools' 70 take
52 us rather than 83, with the same kernels and so the same numbers, bit for bit.

It is reached through `torch._C`, which may change between torch releases: where this
torch has none, or it refuses a graph, `static_runtime` gives None and the caller keeps
the traced module. Callers still check what it computes against the eager path.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import torch

log = logging.getLogger(__name__)


class StaticGraph:
    """A frozen traced module run by Static Runtime; called as the module is.
    `operations`: how many aten operations a call runs (what its time is made of)."""

    def __init__(self, module: Callable[..., tuple[torch.Tensor, ...]], operations: int) -> None:
        self.module = module
        self.operations = operations

    def __call__(self, *inputs: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return tuple(self.module(*inputs))


def available() -> bool:
    """Whether this torch has Static Runtime."""
    return hasattr(torch._C, "_jit_to_static_module")


def static_runtime(frozen: torch.jit.ScriptModule) -> StaticGraph | None:
    """`frozen` (a module from `torch.jit.freeze`) under Static Runtime, or None."""
    if not available():
        return None
    try:
        operations = sum(1 for n in frozen.graph.nodes() if n.kind().startswith("aten::"))
        return StaticGraph(torch._C._jit_to_static_module(frozen._c), operations)
    except Exception as e:  # a graph it does not take stays with the interpreter
        log.debug("Static Runtime does not take the graph (%s)", e)
        return None
