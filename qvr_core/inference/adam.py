"""torch's Adam, without importing torch's compiler on the way.

`torch.optim.Adam` wraps its methods for `torch.compile`: `step` imports `torch._dynamo`
on every call (to mark a graph break), and `add_param_group` and `zero_grad` import it on
their first call (to exclude themselves from compilation). The first import costs 1.2 to
1.9 s of CPU, in every process that runs SVI: most of a short `qvr run`, and of the wait
after a click on Run. qvr never compiles an optimiser, so outside `torch.compile` those
wrappers only turn gradients off around the update. `Adam` here calls torch's own methods
beneath the wrappers and turns gradients off itself: the update is torch's, bit for bit
(tests/inference/test_adam.py compares every parameter and moment after several steps).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import torch
from torch.optim import Optimizer


def _unwrapped(method: Callable[..., Any]) -> Callable[..., Any]:
    return inspect.unwrap(method)


_ADD_PARAM_GROUP = _unwrapped(Optimizer.add_param_group)
_ZERO_GRAD = _unwrapped(Optimizer.zero_grad)
_STEP = _unwrapped(torch.optim.Adam.step)


class Adam(torch.optim.Adam):
    """`torch.optim.Adam` whose calls leave `torch._dynamo` unimported (module docstring)."""

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        _ADD_PARAM_GROUP(self, param_group)

    def zero_grad(self, set_to_none: bool = True) -> None:
        _ZERO_GRAD(self, set_to_none)

    def step(self, closure: Callable[[], float] | None = None) -> float | None:  # type: ignore[override]  # torch's stub overloads step on the closure; one form is enough here
        with torch.set_grad_enabled(bool(self.defaults["differentiable"])):
            out: float | None = _STEP(self, closure)
            return out
