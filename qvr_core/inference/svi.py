"""SVI: one optimiser step on an objective, with the model's and the guide's parameters.

The optimiser is an ordinary `torch.optim` optimiser built by the caller. A loss
that becomes NaN or infinite raises `NonFiniteLossError` naming the step, before
any parameter is touched, so the model is left at its last good values.

A step's loss and gradients are recorded once the run has taken a moment and then
replayed by TorchScript for the same batch (`inference.recorded_step` says when and
why); outside a minibatch or a split run's share, the replay draws the same noise.

Performance note: the loss is a mean over the batch, and gradients that flow
back through a long saturated recurrence can become denormal floats, which
make CPU matrix products several times slower. `torch.set_flush_denormal(True)`
avoids that (`qvr run` and the editor's runs turn it on).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Protocol

import torch
from torch import nn

from qvr_core.inference.elbo import ELBO
from qvr_core.inference.errors import NonFiniteLossError
from qvr_core.inference.recorded_step import AFTER_SECONDS, RecordedStep
from qvr_core.inference.sites import ProgramLike
from qvr_core.runtime.program import Observed
from qvr_core.runtime.share import current_share


def _params(obj: Any) -> list[nn.Parameter]:
    return list(obj.parameters()) if isinstance(obj, nn.Module) else []


class Reducer(Protocol):
    """Adds up the processes' parts of one step (`qvr_core.runs.distributed`): every
    process computes its rows' part of the loss and of its gradient."""

    def total(self, value: float) -> float:
        """The loss: the sum of every process's part (the same in all of them)."""
        ...

    def gradients(self, params: list[nn.Parameter]) -> None:
        """Each parameter's gradient replaced by the sum over the processes."""
        ...


class SVI:
    """Stochastic variational inference: `step(x, observations) -> float` loss."""

    def __init__(
        self,
        model: ProgramLike,
        guide: Any,
        optim: torch.optim.Optimizer,
        objective: ELBO | None = None,
        reducer: Reducer | None = None,
        record_after: float | None = AFTER_SECONDS,
    ) -> None:
        """`record_after`: seconds of eager steps, as counted (`inference.work`), before
        the step is recorded and replayed (`inference.recorded_step`); None keeps every
        step eager."""
        self.model = model
        self.reducer = reducer
        self.guide = guide
        self.optim = optim
        self.objective = objective if objective is not None else ELBO()
        self.num_steps = 0
        self._guide_params = -1  # how many the guide had when last adopted
        self._stray: list[nn.Parameter] | None = None  # parameters outside the optimiser
        self._recorded = RecordedStep(record_after) if record_after is not None else None

    @property
    def replaying(self) -> bool:
        """Whether steps are replayed from a recording (`inference.recorded_step`)."""
        return self._recorded is not None and self._recorded.replaying

    @property
    def stepping(self) -> str:
        """How steps run now, in words, for a bench or a log: "replayed for any batch",
        "replayed for one batch" or "eager"."""
        if not self.replaying:
            return "eager"
        assert self._recorded is not None
        return "replayed for " + ("any batch" if self._recorded.for_any_batch else "one batch")

    def _adopt_new_parameters(self) -> None:
        """Give the optimiser guide parameters created lazily on the first call."""
        params = _params(self.guide)
        if len(params) == self._guide_params:
            return  # none created since the last look (the common case: checked per step)
        self._guide_params = len(params)
        known = {id(p) for group in self.optim.param_groups for p in group["params"]}
        new = [p for p in params if id(p) not in known and p.requires_grad]
        if new:
            self.optim.add_param_group({"params": new})
        self._stray = None

    def _zero_grad(self) -> None:
        """Clear every gradient: the optimiser's, and those of parameters it does not hold
        (a model parameter left out of it would otherwise accumulate across steps)."""
        self.optim.zero_grad(set_to_none=True)
        if self._stray is None:
            known = {id(p) for group in self.optim.param_groups for p in group["params"]}
            self._stray = [
                p for p in _params(self.model) + _params(self.guide) if id(p) not in known
            ]
        for p in self._stray:
            p.grad = None

    def step(self, x: Any, observations: Mapping[str, Observed] | None = None) -> float:
        """Zero the gradients, compute the loss, back-propagate, step; return the loss."""
        self.num_steps += 1
        self._zero_grad()
        if self._recorded is not None and self.num_steps > 1 and current_share() is None:
            return self._recorded_step(x, observations)
        loss = self.objective.loss(self.model, self.guide, x, observations)
        value = float(loss.detach())
        if self.reducer is not None:  # every process decides on the same total
            value = self.reducer.total(value)
        if not math.isfinite(value):
            raise NonFiniteLossError(self.num_steps, value)
        self._adopt_new_parameters()
        loss.backward()
        if self.reducer is not None:
            self.reducer.gradients(
                [p for group in self.optim.param_groups for p in group["params"]]
            )
        self.optim.step()
        return value

    def _recorded_step(self, x: Any, observations: Mapping[str, Observed] | None) -> float:
        """A step whose loss and gradients come from `RecordedStep` (eager or replayed);
        the guide's parameters exist by now (the first step is always eager)."""
        assert self._recorded is not None
        params = [p for group in self.optim.param_groups for p in group["params"]]
        obs = dict(observations or {})
        batch = (x, *sorted(obs), *(obs[k] for k in sorted(obs)))  # read: the same objects
        value_tensor, grads = self._recorded(
            lambda: self.objective.loss(self.model, self.guide, x, obs), params, batch
        )
        value = float(value_tensor)
        if self.reducer is not None:
            value = self.reducer.total(value)
        if not math.isfinite(value):
            raise NonFiniteLossError(self.num_steps, value)
        self._adopt_new_parameters()
        for p, g in zip(params, grads, strict=True):
            p.grad = g
        if self.reducer is not None:
            self.reducer.gradients(params)
        self.optim.step()
        return value

    @torch.no_grad()
    def evaluate_loss(self, x: Any, observations: Mapping[str, Observed] | None = None) -> float:
        """The loss at the current parameters, without a step."""
        return float(self.objective.loss(self.model, self.guide, x, observations))
