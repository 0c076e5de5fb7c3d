"""How much one evaluation costs, counted from the model rather than timed by the clock.

A run chooses some paths by the cost of one evaluation: whether the NUTS potential is
recorded (`inference.many`), whether chains go to processes (`inference.chains`),
whether the SVI step is recorded (`inference.recorded_step`). Those paths round
differently in the last bits, and a NUTS trajectory turns that into other draws. Had
the choice come from a stopwatch, the same `--seed` would give other draws on a loaded
machine than on an idle one. So the cost is counted instead: the torch operations one
evaluation calls and the elements they produce, which depend on the model, its data and
the point evaluated, never on the load. `Work.seconds` turns the counts into a rough
time with two constants of the kind of CPU these runs are for; the thresholds that read
it were set from it, so only the ratio between the two matters for the choices.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_leaves

#: What the interpreter costs per torch operation in an eager evaluation: Python's call,
#: torch's dispatch and autograd's record, and its share of the backward pass (about
#: 10 us on a 3 GHz core, measured over the example models' potentials).
OPERATION_SECONDS = 10e-6
#: What arithmetic costs per element an operation produces, forward and backward: about
#: a nanosecond per element on one core (as `runs.device.AUTO_THRESHOLD` assumes).
ELEMENT_SECONDS = 1e-9
#: The fewest elements an operation must produce for torch to split it over its intra-op
#: threads (ATen's `at::internal::GRAIN_SIZE`): a smaller one runs on one thread whatever
#: `torch.get_num_threads()` says.
GRAIN_ELEMENTS = 32_768


@dataclass(frozen=True)
class Work:
    """The torch operations one evaluation called and the elements they produced;
    `split_elements` are those of the operations of `GRAIN_ELEMENTS` or more, the only
    ones torch shares out over its threads."""

    operations: int
    elements: int
    split_elements: int

    @property
    def interpreter_seconds(self) -> float:
        """The part of an eager evaluation spent in the interpreter, which recording
        removes."""
        return self.operations * OPERATION_SECONDS

    @property
    def arithmetic_seconds(self) -> float:
        """The part spent on arithmetic, which recording keeps and processes share out."""
        return self.elements * ELEMENT_SECONDS

    @property
    def split_seconds(self) -> float:
        """The part of the arithmetic in operations large enough for torch's threads to
        share (`GRAIN_ELEMENTS`)."""
        return self.split_elements * ELEMENT_SECONDS

    @property
    def seconds(self) -> float:
        """A rough eager time, the same on every machine and under any load."""
        return self.interpreter_seconds + self.arithmetic_seconds


class _Counter(TorchFunctionMode):
    """Counts the torch functions called under it that return tensors, and their size."""

    def __init__(self) -> None:
        super().__init__()
        self.operations = 0
        self.elements = 0
        self.split_elements = 0

    def __torch_function__(
        self,
        func: Callable[..., Any],
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        out = func(*args, **(kwargs or {}))
        sizes = [t.numel() for t in tree_leaves(out) if isinstance(t, torch.Tensor)]
        if sizes:  # attribute reads (`.shape`, `.dtype`) return no tensor: not operations
            self.operations += 1
            self.elements += sum(sizes)
            self.split_elements += sum(n for n in sizes if n >= GRAIN_ELEMENTS)
        return out

    @property
    def work(self) -> Work:
        return Work(self.operations, self.elements, self.split_elements)


@contextmanager
def counting() -> Iterator[_Counter]:
    """Counts the work done in the block (`.work` once it ends); errors pass through."""
    counter = _Counter()
    with warnings.catch_warnings(), counter:
        # torch warns of `float(t)` on a tensor that needs grad only when the call passes
        # through a mode like this one; the evaluation without it says nothing
        warnings.filterwarnings("ignore", message="Converting a tensor with requires_grad")
        yield counter


def count_work(call: Callable[[], object]) -> Work:
    """The work of `call()`; an error it raises is left for the caller's own evaluation to
    meet, and the work counted until then stands (a start that fails is reported by the
    chain that starts there)."""
    with counting() as counter, contextlib.suppress(Exception):  # the run reports it
        call()
    return counter.work
