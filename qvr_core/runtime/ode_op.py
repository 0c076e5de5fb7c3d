"""The compiled ODE solvers (`runtime.ode_c`) as torch operations, `qvr::ode_rk45` and
`qvr::ode_bdf` (the stiff one), alike but for the C function they call.

As a custom operation of torch's dispatcher, the solve is one node wherever torch looks:
autograd differentiates it by the tangents it returns beside the solution (the backward
pass is a product of those with the incoming gradient), `torch.func.vmap` hands it a
whole batch of chains at once (its kernel loops over them in C), NUTS's recorder writes
it as one operation of the graph, and TorchScript and Static Runtime call it as one.
Measured on a toy of the same kind: 8 us per call of the recorded graph.

The kernel takes its body's compiled solver by a number (`register`), since an operation
takes tensors and numbers only: the body's place in this process's table, filled when a
model's let first calls the solver (a recording replays in the process that made it).
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from qvr_core.runtime.ode_c import Compiled

_SOLVERS: list[Compiled] = []


def register(solver: Compiled) -> int:
    """The number `ode_rk45` takes `solver` by (the same number for the same solver)."""
    for i, known in enumerate(_SOLVERS):
        if known is solver:
            return i
    _SOLVERS.append(solver)
    return len(_SOLVERS) - 1


def _solve(
    stiff: bool,
    z0: torch.Tensor,
    theta: torch.Tensor,
    ts: torch.Tensor,
    t0: float,
    rtol: float,
    atol: float,
    max_steps: int,
    h0: float,
    solver: int,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The kernel of both operations: `solver`'s Dormand-Prince or (`stiff`) ROS34PW2."""
    chosen = _SOLVERS[solver]
    z = np.ascontiguousarray(z0.detach().cpu().numpy(), dtype=np.float64)
    th = np.ascontiguousarray(theta.detach().cpu().numpy(), dtype=np.float64)
    times = np.ascontiguousarray(ts.detach().cpu().numpy(), dtype=np.float64)
    batch, count = z.shape[0], times.shape[0]
    out = np.empty((batch, count, chosen.n))
    sens = np.empty((batch, count, chosen.n, chosen.p))
    solve = chosen.solve_stiff if stiff else chosen.solve
    solve(
        batch, _pointer(z), _pointer(th), t0, count, _pointer(times), rtol, atol,
        max_steps, h0, _pointer(out), _pointer(sens),
    )  # fmt: skip
    return torch.from_numpy(out).to(z0.device), torch.from_numpy(sens).to(z0.device)


@torch.library.custom_op("qvr::ode_rk45", mutates_args=())
def ode_rk45(
    z0: torch.Tensor,
    theta: torch.Tensor,
    ts: torch.Tensor,
    t0: float,
    rtol: float,
    atol: float,
    max_steps: int,
    h0: float,
    solver: int,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The states at `ts` from `z0` (batch, N) with `theta` (batch, M), and their tangents
    along theta's entries then z0's: (batch, T, N) and (batch, T, N, M + N)."""
    return _solve(False, z0, theta, ts, t0, rtol, atol, max_steps, h0, solver)


@torch.library.custom_op("qvr::ode_bdf", mutates_args=())
def ode_bdf(
    z0: torch.Tensor,
    theta: torch.Tensor,
    ts: torch.Tensor,
    t0: float,
    rtol: float,
    atol: float,
    max_steps: int,
    h0: float,
    solver: int,
) -> tuple[torch.Tensor, torch.Tensor]:
    """`ode_rk45`'s operation by the stiff solver (ROS34PW2, `runtime.ode_rosenbrock`);
    h0 <= 0 lets each row choose its first step."""
    return _solve(True, z0, theta, ts, t0, rtol, atol, max_steps, h0, solver)


def _pointer(a: np.ndarray) -> Any:
    return a.ctypes.data_as(ctypes.POINTER(ctypes.c_double))


def _shapes(
    z0: torch.Tensor, theta: torch.Tensor, ts: torch.Tensor, *_numbers: Any
) -> tuple[torch.Tensor, torch.Tensor]:
    batch, n, count = z0.shape[0], z0.shape[1], ts.shape[0]
    p = n + theta.shape[1]
    return z0.new_empty((batch, count, n)), z0.new_empty((batch, count, n, p))


def _keep(ctx: Any, inputs: tuple[Any, ...], output: tuple[torch.Tensor, torch.Tensor]) -> None:
    ctx.m = inputs[1].shape[-1]
    ctx.save_for_backward(output[1])


def _backward(ctx: Any, grad: torch.Tensor, _grad_tangents: torch.Tensor) -> tuple[Any, ...]:
    (sens,) = ctx.saved_tensors
    total = (grad[..., None] * sens).sum(dim=(-3, -2))  # along theta's entries, then z0's
    m = ctx.m
    return total[..., m:], total[..., :m], None, None, None, None, None, None, None


def _batched_by(operation: Any) -> Callable[..., Any]:
    """The vmap rule of `operation`: vmap's batch as more rows of the operation's own batch
    (the times are data, the same for every row)."""

    def batched(
        info: Any,
        in_dims: tuple[int | None, ...],
        z0: torch.Tensor,
        theta: torch.Tensor,
        ts: torch.Tensor,
        *numbers: Any,
    ) -> tuple[tuple[torch.Tensor, torch.Tensor], tuple[int, int]]:
        size = info.batch_size
        z_dim, theta_dim, ts_dim = in_dims[0], in_dims[1], in_dims[2]
        if ts_dim is not None:
            raise ValueError("an ODE's output times are the same for every chain (data)")
        z = _rows(z0, z_dim, size)
        th = _rows(theta, theta_dim, size)
        inner = z.shape[1]
        out, sens = operation(z.flatten(0, 1), th.flatten(0, 1), ts, *numbers)
        return (out.unflatten(0, (size, inner)), sens.unflatten(0, (size, inner))), (0, 0)

    return batched


for _operation in (ode_rk45, ode_bdf):
    _operation.register_fake(_shapes)
    _operation.register_autograd(_backward, setup_context=_keep)
    _operation.register_vmap(_batched_by(_operation))


def _rows(x: torch.Tensor, dim: int | None, size: int) -> torch.Tensor:
    """`x` with vmap's batch as its first axis (repeated where it has none)."""
    if dim is None:
        return x.expand(size, *x.shape)
    return x.movedim(dim, 0)
