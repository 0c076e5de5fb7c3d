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

A recording holds for the program's Python control flow at the point it watched.
It first tries to take the batch's tensors as inputs, like the parameters: it then
holds for every batch of the same shapes and dtypes (a minibatch loop, the gallery's
networks), unless the step reads a value of the data back into Python or makes a
shape from it (an index's bounds check, a boolean mask), which it refuses. Then it
records again with the data as constants, for the batch it watched only (a loop over
one full batch). Either is used only after a step has agreed with the eager step from
the same random state (loss and every gradient); one taking the batch as input is
checked again at the first other batch it meets (a value the program derived from the
data before the step, and kept, would be a constant of the recording). A program that
cannot be recorded (a value read back into Python, an operation without a functional
form) stays eager, as does a step whose arithmetic dominates (`MAX_STEP_SECONDS`).
Recording costs a few eager steps, so it waits until the run's eager steps have taken
`AFTER_SECONDS`: short runs never pay it.

On a GPU the recording is made and replayed the same way, on the device: its draws
come from that device's generator, which the checks save and restore with the CPU's
(`inference.generators`).

Both decisions read the step's work counted in the first step (`inference.work`), not
a clock: the replayed step rounds differently from the eager one in the last bits, so a
choice by measured time would give a `--seed` run other numbers on a loaded machine.
"""

from __future__ import annotations

import logging
import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import fields, is_dataclass
from enum import Enum
from typing import Any

import torch

from qvr_core.inference import generators
from qvr_core.inference.record import record_call
from qvr_core.inference.simplify import simplify
from qvr_core.inference.traceable import traceable
from qvr_core.inference.work import Work, counting
from qvr_core.runtime.value_checks import Check, run_check

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
    REPLAY = "replay"  # checked: replayed for its batch (or any laid out alike, once proven)
    OFF = "off"  # cannot be recorded, or disagreed: eager for good


class RecordedStep:
    """Each step's loss and the gradients of `params`, eager or replayed (see the module)."""

    def __init__(self, after_seconds: float = AFTER_SECONDS) -> None:
        self.after_seconds = after_seconds
        self.state = _State.EAGER
        self.eager_steps = 0  # eager steps so far
        self.work: Work | None = None  # one eager step's, counted in the first
        self.function: Replay | None = None
        self.batch: tuple[Any, ...] = ()  # what the recording read
        self.versions: list[int] = []  # and its tensors' writes so far
        self.layout: Layout | None = None  # a recording taking any batch laid out so
        self.proven = False  # and checked on a batch other than the one it watched
        self.used: list[bool] = []  # which parameters the loss reaches
        self.checks: list[tuple[Check, int]] = []  # the data's checks each replay runs
        self.devices: tuple[torch.device, ...] = ()  # the accelerators whose noise it draws

    @property
    def replaying(self) -> bool:
        return self.state is _State.REPLAY

    @property
    def for_any_batch(self) -> bool:
        """Whether the replay takes the batch as input (and has been checked on a batch
        other than the one it watched)."""
        return self.state is _State.REPLAY and self.layout is not None and self.proven

    def __call__(
        self,
        loss: Callable[[], torch.Tensor],
        params: Sequence[torch.Tensor],
        batch: tuple[Any, ...],
    ) -> tuple[torch.Tensor, Grads]:
        """The loss (detached) and each parameter's gradient (None where unused)."""
        if self.function is not None and self.state in (_State.CHECK, _State.REPLAY):
            watched = _same(batch, self.batch) and _versions(batch) == self.versions
            fits = watched or (self.layout is not None and self.layout == _layout(batch))
            if fits and self.state is _State.REPLAY and (watched or self.proven):
                return self._replay_or_eager(loss, params, batch)
            if fits:  # the recording's first step, or the first other batch it meets
                return self._check(loss, params, batch, proves=not watched)
        work = self.work
        if (
            self.state is _State.EAGER
            and work is not None
            and self.eager_steps * work.seconds >= self.after_seconds
        ):
            if _step_seconds(work, params) <= MAX_STEP_SECONDS:
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
        self.devices = generators.devices_of([*params, *_tensors(batch)])
        if len(self.devices) > 1:  # one replay draws on one device's generator
            return _eager(loss, params)
        before = generators.save(self.devices)
        outputs: list[torch.Tensor] = []

        def step() -> list[torch.Tensor]:
            value, grads = _eager(loss, params, detach=False)
            self.used = [g is not None for g in grads]
            outputs[:] = [value, *(g for g in grads if g is not None)]
            return outputs

        attempts: list[tuple[Layout | None, list[torch.Tensor]]] = [(None, list(params))]
        layout = _layout(batch)
        if layout is not None:
            attempts.insert(0, (layout, [*params, *_tensors(batch)]))
        graph = None
        for layout, inputs in attempts:
            checks: list[tuple[Check, int]] = []
            try:
                graph = record_call(step, inputs, random=True, checks=checks)
            except Exception as e:  # any program it cannot record stays eager
                log.debug("the SVI step cannot be recorded with %s (%s)", _takes(layout), e)
                generators.restore(before)
                continue
            self.layout, self.checks = layout, checks
            break
        if graph is None:
            return _eager(loss, params)
        answer = outputs[0].detach(), self._grads([o.detach() for o in outputs[1:]])
        try:
            with generators.forked(self.devices), warnings.catch_warnings():
                warnings.simplefilter("ignore")  # TorchScript's notes on tracing; checked next step
                examples = self._inputs(params, batch)
                graph = traceable(simplify(graph, *examples))
                traced = torch.jit.trace(graph, examples, check_trace=False)
                self.function = torch.jit.freeze(traced.eval())
        except Exception as e:
            log.debug("the recorded SVI step cannot be traced (%s); eager", e)
            return answer
        self.batch, self.versions = batch, _versions(batch)
        self.state = _State.CHECK
        return answer

    def _check(
        self,
        loss: Callable[[], torch.Tensor],
        params: Sequence[torch.Tensor],
        batch: tuple[Any, ...],
        proves: bool,
    ) -> tuple[torch.Tensor, Grads]:
        """An eager step, and the replay from the same random state compared with it;
        `proves`: the batch is not the one recorded, so agreeing proves the recording
        holds for any batch laid out alike."""
        before = generators.save(self.devices)
        value, grads = _eager(loss, params)
        after = generators.save(self.devices)
        generators.restore(before)
        try:
            replayed, replayed_grads = self._replay(params, batch)
            agrees = _close(replayed, value) and all(
                _close(r, g) if r is not None and g is not None else r is None and g is None
                for r, g in zip(replayed_grads, grads, strict=True)
            )
        except Exception as e:
            log.debug("the recorded SVI step fails (%s); eager", e)
            agrees = False
        generators.restore(after)
        self.state = _State.REPLAY if agrees else _State.OFF
        self.proven = self.proven or (agrees and proves)
        if not agrees:
            self.function = None
            log.debug("the recorded SVI step disagrees with the eager one; eager")
        return value, grads

    def _replay_or_eager(
        self,
        loss: Callable[[], torch.Tensor],
        params: Sequence[torch.Tensor],
        batch: tuple[Any, ...],
    ) -> tuple[torch.Tensor, Grads]:
        """The replay; where an operation of it fails (an index out of range fails in
        the graph before the data's checks run), the eager step from the same random
        state, which raises its own error for a bad batch, or else answers in its place
        from here on."""
        before = generators.save(self.devices)
        try:
            outputs = self._run(params, batch)
        except Exception as e:
            generators.restore(before)
            answer = _eager(loss, params)  # a bad batch raises here, as without a recording
            log.debug("the recorded SVI step fails where the eager one does not (%s); eager", e)
            self.state, self.function = _State.OFF, None
            return answer
        return self._answer(outputs)

    def _inputs(self, params: Sequence[torch.Tensor], batch: tuple[Any, ...]) -> tuple[Any, ...]:
        data = _tensors(batch) if self.layout is not None else []
        return (*(p.detach() for p in params), *(t.detach() for t in data))

    def _replay(
        self, params: Sequence[torch.Tensor], batch: tuple[Any, ...]
    ) -> tuple[torch.Tensor, Grads]:
        return self._answer(self._run(params, batch))

    def _run(self, params: Sequence[torch.Tensor], batch: tuple[Any, ...]) -> list[torch.Tensor]:
        assert self.function is not None
        with torch.no_grad():
            return list(self.function(*self._inputs(params, batch)))

    def _answer(self, outputs: list[torch.Tensor]) -> tuple[torch.Tensor, Grads]:
        """The loss and gradients of a replay's outputs, once the data's checks pass."""
        value, *rest = outputs
        grads, read = rest[: sum(self.used)], rest[sum(self.used) :]
        for check, count in self.checks:  # the eager step's checks of the data, in order
            run_check(check, read[:count])
            read = read[count:]
        return value, self._grads(list(grads))

    def _grads(self, grads: list[torch.Tensor]) -> Grads:
        """The gradients of the used parameters spread back over all of them."""
        given = iter(grads)
        return [next(given) if used else None for used in self.used]


def _step_seconds(work: Work, params: Sequence[torch.Tensor]) -> float:
    """What recording a step would leave to weigh against its gain: on the CPU the whole
    step, arithmetic included; on a GPU the interpreter's part only, since the device does
    the arithmetic while Python goes on queueing operations, so a recording removes the
    step's time unless the device is the one waiting."""
    if generators.devices_of(params):
        return work.interpreter_seconds
    return work.seconds


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
    return [t._version for t in _tensors(batch)]


def _close(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.shape != b.shape:
        return False
    if a.numel() == 1 and not math.isfinite(float(b)):
        return False
    return bool(torch.allclose(a, b, rtol=RTOL, atol=ATOL))


#: A batch's shape as a recording taking it as input sees it: its nesting, each
#: tensor's shape, dtype and device (and which leaves are one tensor), and every other
#: leaf itself (an observation's name).
Layout = tuple[Any, ...]


def _leaves(value: Any) -> list[Any]:
    """The batch's leaves in order: tuples, lists, dicts (by key) and dataclasses (a
    `Masked` observation) opened, anything else a leaf."""
    if isinstance(value, (tuple, list)):
        return [("open", type(value).__name__, len(value))] + [
            leaf for v in value for leaf in _leaves(v)
        ]
    if isinstance(value, dict):
        keys = sorted(value, key=repr)
        return [("open", "dict", tuple(keys))] + [leaf for k in keys for leaf in _leaves(value[k])]
    if is_dataclass(value) and not isinstance(value, type):
        names = [f.name for f in fields(value)]
        return [("open", type(value).__qualname__, tuple(names))] + [
            leaf for n in names for leaf in _leaves(getattr(value, n))
        ]
    return [value]


def _tensors(batch: tuple[Any, ...]) -> list[torch.Tensor]:
    """The batch's tensors, each once, in the order first met."""
    seen: dict[int, torch.Tensor] = {}
    for leaf in _leaves(batch):
        if isinstance(leaf, torch.Tensor):
            seen.setdefault(id(leaf), leaf)
    return list(seen.values())


def _layout(batch: tuple[Any, ...]) -> Layout | None:
    """What a batch must share with the recorded one for a replay taking the batch as
    input to hold; None where a leaf is neither a tensor nor a plain value (a recording
    cannot say how such an object reaches the step)."""
    order: dict[int, int] = {}
    out: list[Any] = []
    for leaf in _leaves(batch):
        if isinstance(leaf, torch.Tensor):
            index = order.setdefault(id(leaf), len(order))
            out.append(("tensor", index, tuple(leaf.shape), leaf.dtype, leaf.device))
        elif leaf is None or isinstance(leaf, (str, int, float, bool, tuple)):
            out.append(leaf)
        else:
            return None
    return tuple(out)


def _takes(layout: Layout | None) -> str:
    return "the batch as input" if layout is not None else "the batch as constants"
