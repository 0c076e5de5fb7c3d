"""Several chains advanced together: each asks for potentials, one batch answers all.

Each chain is a generator of requests (`nuts.Requests`): it yields a position and is
sent that position's potential and gradient. `run_together` collects the position
every unfinished chain is waiting on, evaluates them in one `ManyPotential` call and
sends each its answer. A chain never waits for another to finish an iteration or a
tree: whichever chains are waiting are evaluated together, so chains with short
trees simply go on to their next iteration. Each chain keeps its own step size, mass
matrix, tree, divergences and random stream; only the evaluations are shared.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

import numpy as np
import torch

from qvr_core.inference.many import RowError
from qvr_core.inference.nuts import Requests, Vector, quiet_overflow

T = TypeVar("T")


class TaskError(Exception):
    """Task `index` failed with `error` (raised by it, or by its potential)."""

    def __init__(self, index: int, error: BaseException) -> None:
        super().__init__(str(error))
        self.index, self.error = index, error


#: U and dU/dz of a batch of positions (`many.ManyPotential`), raising `RowError` for a row
BatchPotential = Callable[[torch.Tensor], tuple[list[float], torch.Tensor]]


def run_together(tasks: Sequence[Requests[T]], potential: BatchPotential) -> list[T]:
    """Run every task to its end, answering the positions they wait on together."""
    results: list[T | None] = [None] * len(tasks)
    waiting: dict[int, Vector] = {}
    with quiet_overflow():
        for i, task in enumerate(tasks):
            _resume(i, task, None, waiting, results)
        while waiting:
            order = list(waiting)
            # np.array, not np.stack: the same rows, in a sixth of the time (a call per
            # leapfrog step of every chain)
            positions = torch.from_numpy(np.array([waiting[i] for i in order]))
            try:
                values, grads = potential(positions)
            except RowError as e:
                raise TaskError(order[e.row], e.error) from e.error
            rows = grads.detach().numpy()
            for row, i in enumerate(order):
                _resume(i, tasks[i], (values[row], rows[row]), waiting, results)
    return results  # type: ignore[return-value]  # every task ended with its value


def _resume(
    i: int,
    task: Requests[T],
    answer: tuple[float, Vector] | None,
    waiting: dict[int, Vector],
    results: list[T | None],
) -> None:
    try:
        waiting[i] = next(task) if answer is None else task.send(answer)
    except StopIteration as done:
        waiting.pop(i, None)
        results[i] = done.value
    except Exception as e:
        raise TaskError(i, e) from e
