"""The potential of several chains at once: one evaluation for a batch of positions.

A NUTS step on a small model spends almost all its time interpreting the program
and dispatching its torch operations one by one, not computing them (eight schools:
about 1.2 ms of Python per potential-and-gradient for 10 numbers). So the potential
of a model is compiled once per run: `inference.record` records the aten operations
of `vmap(U)` and of its gradient (autograd's backward pass), batched over a leading
chain axis, into one graph, `inference.simplify` folds its constants, drops its
identities and joins what takes fewer operations to the same bits (each operation
costs its dispatch, not its arithmetic), and
`torch.jit.trace` and `torch.jit.freeze` hand that graph to TorchScript, whose
Static Runtime runs it without Python and without looking up a kernel per call
(torch's own recorder, `make_fx`, costs over a second of imports of its compiler
stack; see `inference.record`). Measured
on eight schools (`bench/inference_speed.py --model chains`): four chains'
potentials and gradients in about a fifth of the time of one eager evaluation.
torch.compile was not chosen: its first compile takes seconds to minutes on this
machine, which every edit of a model would pay again.

Recording freezes the program's Python control flow at the point recorded, and some
programs cannot be recorded at all (a value read back into Python, a random draw).
torch checks a distribution's arguments each time one is built, reading them back into
Python, so the potential is recorded with those checks off (`distributions.unvalidated`,
as the model runtime always runs); the eager potential at the starts keeps them.
So the compiled function is used only after it has agreed with the eager one at
each chain's start and at a point beside it (value and gradient); otherwise, and
for anything it fails on, each row is evaluated eagerly, one after another. A
model whose one evaluation is estimated at 50 ms or more is not recorded at all: its
time is arithmetic, and recording the seeds' networks took seconds (and some of them
read a value into Python, which cannot be recorded). The estimate is counted from the
model (`inference.work`), not timed, so a `--seed` run takes the same path, and draws
the same numbers, on a loaded machine as on an idle one.
"""

from __future__ import annotations

import logging
import math
import warnings
from collections.abc import Callable

import numpy as np
import torch
from torch.func import vmap

from qvr_core.inference.nuts import Potential
from qvr_core.inference.record import record
from qvr_core.inference.simplify import simplify
from qvr_core.inference.static import static_runtime
from qvr_core.inference.traceable import traceable
from qvr_core.inference.work import count_work
from qvr_core.runtime.distributions import unvalidated

log = logging.getLogger(__name__)

Batched = Callable[[torch.Tensor], tuple[torch.Tensor, ...]]  # Z -> (dU/dZ, U)

#: How close the compiled potential must be to the eager one to replace it: relative to
#: the value, and for a gradient to its largest element. A float32 model is held to
#: `ROUNDINGS` of its own rounding instead where that is looser: its gradients differ by
#: 1e-6 or so wherever the operations run in another order (vmap's batched kernels),
#: while a recording that froze the wrong branch is off by far more than that.
RTOL, ATOL = 1e-6, 1e-8
ROUNDINGS = 64
#: A model whose one eager evaluation is estimated longer is not compiled (`work.Work`).
COMPILE_SECONDS = 0.05


class RowError(Exception):
    """Evaluating row `row` of a batch raised `error` (the row names the chain)."""

    def __init__(self, row: int, error: BaseException) -> None:
        super().__init__(str(error))
        self.row, self.error = row, error


class ManyPotential:
    """U and dU/dz for each row of a `(rows, D)` batch of positions.

    `eager` is one position's potential (`mcmc.ProgramPotential`), `log_density` the
    function of one position it differentiates; `starts` are the chains' first
    positions, at which the compiled form is recorded and checked. `compiled` says
    whether it is used."""

    def __init__(
        self,
        eager: Potential,
        log_density: Callable[[torch.Tensor], torch.Tensor],
        starts: torch.Tensor,
        *,
        compile: bool = True,
        recorded: Batched | None = None,
    ) -> None:
        """`recorded`: the batched potential already recorded for as many rows (by
        `chains.chosen_processes`, which timed it), used once it agrees at `starts`."""
        self.eager = eager
        self.rows = int(starts.shape[0])
        self.function: Batched | None = None
        self._buffer: torch.Tensor | None = None
        if not compile:
            return
        if recorded is not None and _agrees_beside(recorded, eager, starts):
            self.function = recorded
        elif count_work(lambda: eager(starts[0])).seconds < COMPILE_SECONDS:
            self.function = compiled_potential(eager, log_density, starts)

    @property
    def compiled(self) -> bool:
        return self.function is not None

    def _padded(self, positions: torch.Tensor) -> torch.Tensor:
        """`positions` as the `rows` the function was recorded for: chains that have
        finished wait, their rows repeating the first. Written into one buffer kept for
        the run, since a call per leapfrog step is cheap enough that a new tensor and a
        `torch.cat` showed in its time."""
        n = positions.shape[0]
        if n == self.rows:
            return positions
        if self._buffer is None or self._buffer.shape[1:] != positions.shape[1:]:
            self._buffer = positions.new_empty((self.rows, *positions.shape[1:]))
        self._buffer[:n] = positions
        self._buffer[n:] = positions[0]
        return self._buffer

    def __call__(self, positions: torch.Tensor) -> tuple[list[float], torch.Tensor]:
        """The potentials (floats) and gradients (rows of a tensor) of `positions`."""
        n = positions.shape[0]
        if self.function is not None and n > self.rows:  # more than recorded: in parts
            parts = [self(positions[i : i + self.rows]) for i in range(0, n, self.rows)]
            return [u for us, _ in parts for u in us], torch.cat([g for _, g in parts])
        if self.function is not None and n <= self.rows:
            try:
                grads, values = self.function(self._padded(positions))
                # a copy: the answer stays the caller's whatever the next call writes
                kept = np.negative(grads.detach().numpy()[:n])
                return [-v for v in values[:n].tolist()], torch.from_numpy(kept)
            except Exception as e:  # the eager rows below say which chain and why
                log.debug("the compiled potential failed (%s); evaluating row by row", e)
        answers = []
        for row in range(n):
            try:
                answers.append(self.eager(positions[row]))
            except Exception as e:
                raise RowError(row, e) from e
        return [u for u, _ in answers], torch.stack([g for _, g in answers])


def compiled_potential(
    eager: Potential,
    log_density: Callable[[torch.Tensor], torch.Tensor],
    starts: torch.Tensor,
    *,
    join: bool = True,
) -> Batched | None:
    """The recorded and traced batched potential, or None when it cannot be recorded or
    does not agree with `eager` at the starts and beside them; only on the CPU, where
    it is recorded. `join`: as `simplify` takes it."""
    if torch.get_default_device().type != "cpu":
        return None
    starts = starts.detach()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # TorchScript's notes on tracing; checked below

            def batched(zs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
                zs = zs.detach().requires_grad_(True)
                with unvalidated():  # each check reads a value into Python: no record
                    values = vmap(log_density)(zs)
                (grads,) = torch.autograd.grad(values.sum(), zs)
                return grads, values

            graph = traceable(simplify(record(batched, starts), starts.clone(), join=join))
            traced = torch.jit.freeze(
                torch.jit.trace(graph, (starts.clone(),), check_trace=False).eval()
            )
        static = static_runtime(traced)
        if static is not None and _agrees_beside(static, eager, starts):
            return static
        if not _agrees_beside(traced, eager, starts):
            return None
    except Exception as e:  # any model it cannot record runs eagerly
        log.debug("the potential runs eagerly: it cannot be compiled (%s)", e)
        return None
    return traced


def _agrees_beside(function: Batched, eager: Potential, starts: torch.Tensor) -> bool:
    """Whether `function` gives `eager`'s values and gradients at `starts` and beside."""
    beside = starts + 0.01 * torch.ones_like(starts)
    try:
        for points in (starts, beside):
            with torch.no_grad():
                grads, values = function(points)
            for row in range(points.shape[0]):
                u, g = eager(points[row])
                if not _close(-float(values[row]), u, g.dtype) or not _agree(-grads[row], g):
                    log.debug("the compiled potential disagrees at row %d; not used", row)
                    return False
    except Exception as e:
        log.debug("the compiled potential fails at the starts (%s); not used", e)
        return False
    return True


def _tolerance(dtype: torch.dtype) -> float:
    """The relative tolerance for a model computed in `dtype` (see `RTOL`)."""
    return max(RTOL, ROUNDINGS * torch.finfo(dtype).eps)


def _close(a: float, b: float, dtype: torch.dtype) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return math.isclose(a, b, rel_tol=_tolerance(dtype), abs_tol=ATOL) or a == b


def _agree(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether two gradients agree: elementwise relative to each element and, for the
    elements near zero, to the largest one."""
    if a.shape != b.shape:
        return False
    tolerance = _tolerance(b.dtype)
    finite = b[torch.isfinite(b)]
    scale = float(finite.abs().max()) if finite.numel() else 0.0
    return bool(
        torch.allclose(a, b, rtol=tolerance * 10, atol=max(ATOL, tolerance * scale), equal_nan=True)
    )
