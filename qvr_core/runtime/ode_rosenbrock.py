"""`ode_bdf`'s method: ROS34PW2, an adaptive L-stable Rosenbrock-W method, in torch.

Why a Rosenbrock method, and why this one. Stan's `ode_bdf` is CVODES's variable-order
BDF with Newton iterations; what a model asks of it is a stiff solve (a decay a million
times faster than the dynamics it fits, as in chemical kinetics or pharmacokinetics) to a
tolerance, with its gradient. A Rosenbrock method is linearly implicit: each step factors
one N x N matrix, W = I - h gamma J, and solves a few linear systems with it, no Newton
iteration and so no convergence test, no history of past steps and no order selection:
a fixed amount of arithmetic per step, simple to write in C beside the Dormand-Prince
solver (`runtime.ode_c`) and in torch here, deterministic, and L-stable, so a step may be
as long as the slow dynamics allow however stiff the fast ones.

ROS34PW2 (Rang and Angermann, BIT 45 (2005) 761-787) is of order 3 with an embedded
solution of order 2 for the error estimate, four stages, stiffly accurate and L-stable
(R(inf) = 0), and it is a W-method: its order holds with any matrix in place of the
Jacobian. That property is what makes the gradient simple and accurate. The step's
derivative along a parameter, with W held fixed, is the same method applied to the
sensitivity equations dS/dt = J S + df/dtheta with the block-diagonal matrix (W, W), an
order-3 solution of them, so neither path needs second derivatives of the right-hand
side: the compiled path carries the tangents through the stages (forward sensitivities,
the same W for the state and every tangent, held to the tolerance as the state is, as
Stan's coupled CVODES system is), and this torch path lets autograd differentiate the
accepted steps with W detached. Rodas4/Rodas5 are of higher order but not W-methods: with
W held fixed their derivative would be only first-order accurate, and differentiating W
needs the Hessian of the right-hand side.

The coefficients are the paper's (gamma = 0.4358665215084590, the L-stable root of the
SDIRK3 polynomial); tests/runtime/test_ode_bdf.py checks the order conditions and R(inf).

torchdiffeq (0.2.5, installable here) was considered: it has no stiff adaptive method
(its implicit Adams is fixed-grid; `scipy_solver` calls scipy without gradients), and its
adaptive solvers cannot run under vmap (`runtime.ode`'s docstring).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from qvr_core.runtime.ode_rhs import Rhs

GAMMA = 0.43586652150845900
#: The stage weights alpha_ij (the state a stage reads), gamma_ij (the Jacobian's
#: coupling of earlier stages), the solution's weights b and the embedded one's.
ALPHA: tuple[tuple[float, ...], ...] = (
    (),
    (0.87173304301691801,),
    (0.84457060015369423, -0.11299064236484185),
    (0.0, 0.0, 1.0),
)
COUPLING: tuple[tuple[float, ...], ...] = (
    (),
    (-0.87173304301691801,),
    (-0.90338057013044082, 0.054180672388095326),
    (0.24212380706095346, -1.2232505839045147, 0.54526025533510214),
)
B = (0.24212380706095346, -1.2232505839045147, 1.5452602553351023, 0.43586652150845900)
B_EMBEDDED = (0.37810903145819369, -0.096042292212423178, 0.5, 0.21793326075422950)
#: Each stage's time (sum of its alphas) and its weight of df/dt (gamma + its gammas).
NODES = tuple(sum(row) for row in ALPHA)
TIME_WEIGHTS = tuple(GAMMA + sum(row) for row in COUPLING)
ERROR = tuple(b - e for b, e in zip(B, B_EMBEDDED, strict=True))
#: The error estimate is of the embedded order-2 solution: it goes as h^3.
ERROR_ORDER = 3
EXPONENT = 1 / ERROR_ORDER
#: The forward difference df/dt is taken with, relative to max(1, |t|): sqrt of float64's
#: epsilon (only a right-hand side that reads t needs it).
TIME_STEP = 1.4901161193847656e-08


@dataclass(frozen=True)
class Tolerance:
    """How accurate a solution is, for either solver (`runtime.ode` holds each one's
    defaults, Stan's): each step's error estimate within `atol + rtol * |z|`, at most
    `max_steps` steps kept between two output times."""

    rtol: float
    atol: float
    max_steps: int


State = list[torch.Tensor]


def rosenbrock(
    rhs: Rhs,
    z0: State,
    t0: float,
    ts: Sequence[float],
    tolerance: Tolerance,
    reads_time: bool,
) -> list[State] | None:
    """The states at `ts` by adaptive ROS34PW2 steps of one size for the whole batch (as
    `runtime.ode.adaptive` steps Dormand-Prince), the compiled solver's steps and
    controller: a step kept when its error estimate is within the tolerance, the next
    size 0.9 err^(-1/3) times this one, between a fifth and 5 times. None when an interval
    needs more than `max_steps` steps kept, or a step shrinks to nothing (a singular W or a
    solution that blows up is rejected until it does). The Jacobian enters as W, detached
    (the module's docstring says why that is the gradient of an order-3 method)."""
    f = _stacked(rhs)
    z = torch.stack(torch.broadcast_tensors(*z0), -1)
    with torch.no_grad():
        batch = torch.broadcast_shapes(z.shape, f(t0, z).shape)  # theta's rows too
    z = z.expand(batch)
    n = z.shape[-1]
    t = t0
    h = _first_step(f, z, t0, ts[0] - t0, tolerance)
    eye = torch.eye(n, dtype=z.dtype, device=z.device)
    outputs = []
    for end in ts:
        taken = 0
        while t < end:
            tiny = 1e-12 * max(1.0, abs(end))
            if taken >= tolerance.max_steps or h < tiny or not math.isfinite(h):
                return None
            last = end - (t + h) <= tiny
            size = end - t if last else h
            x, ratio = _step(f, t, z, size, eye, reads_time, tolerance)
            grow = (
                0.2 if not math.isfinite(ratio) else 5.0 if ratio == 0 else 0.9 * ratio**-EXPONENT
            )
            proposal = size * min(5.0, max(0.2, grow))
            if ratio <= 1.0:
                t, z = (end if last else t + size), x
                taken += 1
                h = max(h, proposal) if last else proposal
            else:
                h = proposal
        outputs.append(list(z.unbind(-1)))
    return outputs


Field = Callable[[float, torch.Tensor], torch.Tensor]


def _stacked(rhs: Rhs) -> Field:
    """dz/dt with the state as one tensor, its entries last (rows broadcast together)."""

    def f(t: float, z: torch.Tensor) -> torch.Tensor:
        return torch.stack(torch.broadcast_tensors(*rhs(t, list(z.unbind(-1)))), -1)

    return f


def _first_step(f: Field, z: torch.Tensor, t0: float, span: float, tolerance: Tolerance) -> float:
    """The first step's size (Hairer and Wanner's rule, as the compiled solver's): a
    hundredth of the state over its derivative, each over its tolerance; 10^-6 of the first
    interval where either is negligible. The controller finds its own sizes after it."""
    with torch.no_grad():
        slope = f(t0, z)
        scale = tolerance.atol + tolerance.rtol * z.abs()
        d0, d1 = float((z.abs() / scale).max()), float((slope.abs() / scale).max())
    h = 0.01 * d0 / d1 if d0 > 1e-5 and d1 > 1e-5 else 1e-6 * span
    return min(h, span) if math.isfinite(h) else 1e-6 * span


def _step(
    f: Field,
    t: float,
    z: torch.Tensor,
    h: float,
    eye: torch.Tensor,
    reads_time: bool,
    tolerance: Tolerance,
) -> tuple[torch.Tensor, float]:
    """One ROS34PW2 step of size h from (t, z): the new state and the largest error
    estimate over its tolerance (NaN where W is singular or a value is not finite)."""
    f0 = f(t, z)
    jacobian = _jacobian(f, t, z)
    w = eye - (h * GAMMA) * jacobian
    factors, pivots, info = torch.linalg.lu_factor_ex(w)
    if bool((info != 0).any()):
        return z, math.nan
    slope = (f(t + TIME_STEP * max(1.0, abs(t)), z) - f0) / (TIME_STEP * max(1.0, abs(t)))
    stages: list[torch.Tensor] = []
    for i in range(len(B)):
        x = z
        for a, k in zip(ALPHA[i], stages, strict=False):
            if a:
                x = x + a * k
        value = f0 if i == 0 else f(t + NODES[i] * h, x)
        right = h * value
        coupled = None
        for g, k in zip(COUPLING[i], stages, strict=False):
            coupled = g * k if coupled is None else coupled + g * k
        if coupled is not None:
            right = right + h * (jacobian @ coupled[..., None])[..., 0]
        if reads_time:
            right = right + (h * h * TIME_WEIGHTS[i]) * slope
        stages.append(torch.linalg.lu_solve(factors, pivots, right[..., None])[..., 0])
    x = z
    for b, k in zip(B, stages, strict=True):
        x = x + b * k
    with torch.no_grad():
        error = sum(e * k for e, k in zip(ERROR, stages, strict=True))
        assert isinstance(error, torch.Tensor)
        scale = tolerance.atol + tolerance.rtol * torch.maximum(z.abs(), x.abs())
        ratios = error.abs() / scale
        ratio = math.nan if bool(ratios.isnan().any()) else float(ratios.max())
    return x, ratio


def _jacobian(f: Field, t: float, z: torch.Tensor) -> torch.Tensor:
    """df/dz at (t, z) for each row of the batch, detached (W's matrix): one forward-mode
    product per entry of the state, the unit vector of that entry on every row."""
    base = z.detach()
    columns = []
    for entry in range(base.shape[-1]):
        unit = torch.zeros_like(base)
        unit[..., entry] = 1.0
        products = torch.func.jvp(lambda s: f(t, s), (base,), (unit,))
        columns.append(products[1].detach())
    return torch.stack(columns, -1)
