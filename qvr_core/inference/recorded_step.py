"""An SVI step's loss and gradients, recorded once for a batch and replayed without Python.

A step of SVI on a network of small layers (the vanilla RNN LM: a guide draw, 32
recurrent steps forward and back) spends as much time in Python, dispatching
torch's operations one by one and walking autograd's graph, as in arithmetic: qvr's
step was 1.14-1.19x the same step written by hand in plain torch. The NUTS potential
already avoids that cost (`inference.many`); this module does the same for SVI. The
operations of one step (the guide's draw, the model's density, the ELBO and
autograd's backward pass) are recorded by `inference.record` with the parameters as
inputs and the draws recorded as draws, simplified (`inference.simplify`) and handed
to TorchScript, whose interpreter replays them, drawing fresh noise from torch's
generator in the order the eager step draws it. Adam then steps as before.

A recording holds for the batch it watched (its data are constants of the graph) and
the program's Python control flow at that point, so it is used only for that batch,
and only after the step after the recording has agreed with the eager step from the
same random state (loss and every gradient). A program that cannot be recorded (a
value read back into Python, an operation without a functional form) stays eager, as
does a step whose arithmetic dominates (`MAX_STEP_SECONDS`). Recording costs a few
eager steps, so it waits until the run's eager steps have taken `AFTER_SECONDS`:
short runs never pay it.

Both decisions read the step's work counted in the first step (`inference.work`), not
a clock: the replayed step rounds differently from the eager one in the last bits, so a
choice by measured time would give a `--seed` run other numbers on a loaded machine.
"""

from __future__ import annotations

import logging
import math
import warnings
from collections.abc import Callable, Sequence
from enum import Enum
from typing import Any

import torch

from qvr_core.inference.record import record_call
from qvr_core.inference.simplify import simplify
from qvr_core.inference.work import Work, counting

log = logging.getLogger(__name__)

#: Eager steps estimated to take this long in all (`Work.seconds`) come before a
#: recording is tried.
AFTER_SECONDS = 0.5
#: A step estimated slower than this is arithmetic: recording it would not pay.
MAX_STEP_SECONDS = 0.1
#: How close the replayed loss and gradients must be to the eager ones.
RTOL, ATOL = 1e-4, 1e-6

Grads = list[torch.Tensor | None]
Replay = Callable[..., tuple[torch.Tensor, ...]]


class _State(Enum):
    EAGER = "eager"  # not recorded yet: eager steps, timed
    CHECK = "check"  # recorded: the next step compares it with the eager step
    REPLAY = "replay"  # checked: replayed for its batch
    OFF = "off"  # cannot be recorded, or disagreed: eager for good


class RecordedStep:
    """Each step's loss and the gradients of `params`, eager or replayed (see the module)."""

    def __init__(self, after_seconds: float = AFTER_SECONDS) -> None:
        self.after_seconds = after_seconds
        self.state = _State.EAGER
        self.eager_steps = 0  # eager steps so far
        self.work: Work | None = None  # one eager step's, counted in the first
        self.function: Replay | None = None
        self.batch: tuple[Any, ...] = ()  # what the recording read: same objects only
        self.versions: list[int] = []  # and their tensors not written since
        self.used: list[bool] = []  # which parameters the loss reaches

    @property
    def replaying(self) -> bool:
        return self.state is _State.REPLAY

    def __call__(
        self,
        loss: Callable[[], torch.Tensor],
        params: Sequence[torch.Tensor],
        batch: tuple[Any, ...],
    ) -> tuple[torch.Tensor, Grads]:
        """The loss (detached) and each parameter's gradient (None where unused)."""
        same = (
            self.function is not None
            and _same(batch, self.batch)
            and _versions(batch) == self.versions
        )
        if self.state is _State.REPLAY and same:
            return self._replay(params)
        if self.state is _State.CHECK and same:
            return self._check(loss, params)
        work = self.work
        if (
            self.state is _State.EAGER
            and work is not None
            and self.eager_steps * work.seconds >= self.after_seconds
        ):
            if work.seconds <= MAX_STEP_SECONDS:
                return self._record(loss, params, batch)
            self.state = _State.OFF
        self.eager_steps += 1
        if work is not None:
            return _eager(loss, params)
        with counting() as counter:
            answer = _eager(loss, params)
        self.work = counter.work
        return answer

    def _record(
        self,
        loss: Callable[[], torch.Tensor],
        params: Sequence[torch.Tensor],
        batch: tuple[Any, ...],
    ) -> tuple[torch.Tensor, Grads]:
        self.state = _State.OFF  # unless everything below succeeds
        if torch.get_default_device().type != "cpu" or any(p.device.type != "cpu" for p in params):
            return _eager(loss, params)
        before = torch.random.get_rng_state()
        outputs: list[torch.Tensor] = []

        def step() -> list[torch.Tensor]:
            value, grads = _eager(loss, params, detach=False)
            self.used = [g is not None for g in grads]
            outputs[:] = [value, *(g for g in grads if g is not None)]
            return outputs

        try:
            graph = record_call(step, params, random=True)
        except Exception as e:  # any program it cannot record stays eager
            log.debug("the SVI step runs eagerly: it cannot be recorded (%s)", e)
            torch.random.set_rng_state(before)
            return _eager(loss, params)
        answer = outputs[0].detach(), self._grads([o.detach() for o in outputs[1:]])
        try:
            with torch.random.fork_rng(devices=[]), warnings.catch_warnings():
                warnings.simplefilter("ignore")  # TorchScript's notes on tracing; checked next step
                inputs = tuple(p.detach() for p in params)
                graph = simplify(graph, *inputs)
                traced = torch.jit.trace(graph, inputs, check_trace=False)
                self.function = torch.jit.freeze(traced.eval())
        except Exception as e:
            log.debug("the recorded SVI step cannot be traced (%s); eager", e)
            return answer
        self.batch, self.versions = batch, _versions(batch)
        self.state = _State.CHECK
        return answer

    def _check(
        self, loss: Callable[[], torch.Tensor], params: Sequence[torch.Tensor]
    ) -> tuple[torch.Tensor, Grads]:
        before = torch.random.get_rng_state()
        value, grads = _eager(loss, params)
        after = torch.random.get_rng_state()
        torch.random.set_rng_state(before)
        try:
            replayed, replayed_grads = self._replay(params)
            agrees = _close(replayed, value) and all(
                _close(r, g) if r is not None and g is not None else r is None and g is None
                for r, g in zip(replayed_grads, grads, strict=True)
            )
        except Exception as e:
            log.debug("the recorded SVI step fails (%s); eager", e)
            agrees = False
        torch.random.set_rng_state(after)
        self.state = _State.REPLAY if agrees else _State.OFF
        if not agrees:
            self.function = None
            log.debug("the recorded SVI step disagrees with the eager one; eager")
        return value, grads

    def _replay(self, params: Sequence[torch.Tensor]) -> tuple[torch.Tensor, Grads]:
        assert self.function is not None
        with torch.no_grad():
            value, *grads = self.function(*(p.detach() for p in params))
        return value, self._grads(list(grads))

    def _grads(self, grads: list[torch.Tensor]) -> Grads:
        """The gradients of the used parameters spread back over all of them."""
        given = iter(grads)
        return [next(given) if used else None for used in self.used]


def _eager(
    loss: Callable[[], torch.Tensor], params: Sequence[torch.Tensor], detach: bool = True
) -> tuple[torch.Tensor, Grads]:
    value = loss()
    wanted = [p for p in params if p.requires_grad]
    found = iter(
        torch.autograd.grad(value, wanted, allow_unused=True) if value.requires_grad else []
    )
    grads: Grads = [next(found, None) if p.requires_grad else None for p in params]
    return (value.detach() if detach else value), grads


def _same(batch: tuple[Any, ...], recorded: tuple[Any, ...]) -> bool:
    return len(batch) == len(recorded) and all(a is b for a, b in zip(batch, recorded, strict=True))


def _versions(batch: tuple[Any, ...]) -> list[int]:
    """Each tensor's count of in-place writes (a loop refilling its batch in place)."""
    return [t._version for t in batch if isinstance(t, torch.Tensor)]


def _close(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.shape != b.shape:
        return False
    if a.numel() == 1 and not math.isfinite(float(b)):
        return False
    return bool(torch.allclose(a, b, rtol=RTOL, atol=ATOL))
