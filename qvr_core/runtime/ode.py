"""`ode_rk45`: an ODE solved by adaptive Dormand-Prince 5(4) steps, as Stan's rk45 solves it;
`ode_bdf`: a stiff one, by adaptive ROS34PW2 steps (`runtime.ode_rosenbrock`), on the same
two paths.

Two solvers compute the same steps' method. Where there is a C compiler (nearly always: the
one PyStan builds with), the define's body is written in C with its tangents and solved
there (`runtime.ode_c`), one torch operation (`runtime.ode_op`) that NUTS batches over its
chains and records; its step-size control holds the tangents to the tolerance too, as
Stan's coupled system does, so the gradient is as accurate as the value. Without one, or
for a body the C writer does not write, the solver here runs the same adaptive steps with
torch operations and autograd's gradient through them, each step's error read back into
Python: a batched or recorded evaluation cannot read it, so NUTS evaluates such a model's
chains one by one (`inference.many`), slowly but as the same function of the point.

torchdiffeq, the maintained torch solver, was measured for this and not used: its adaptive
`dopri5` cannot run under vmap (it writes into a tensor in place), and any torch solver
spends its time dispatching some 300 operations on a few numbers per step and gradient
(14 ms per evaluation of four chains of posteriordb's Lotka-Volterra model, against Stan's
45 us per gradient), which is why the main path is compiled.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from qvr_core.check.terms import Body
from qvr_core.runtime.errors import QvrRuntimeError
from qvr_core.runtime.ode_c import Compiled, compiled, reads
from qvr_core.runtime.ode_op import register
from qvr_core.runtime.ode_rhs import Builtins, Rhs, right_hand_side
from qvr_core.runtime.ode_rosenbrock import Tolerance, rosenbrock

# The Dormand-Prince 5(4) tableau (Dormand and Prince 1980; Hairer, Norsett and Wanner,
# Solving ODEs I, table 5.2): the stage times, each stage's weights of the stages before
# it; the last stage's are the 5th-order solution's (first same as last: its derivative is
# the next step's first stage), and ERROR the 5th less the 4th-order weights.
NODES = (0.0, 1 / 5, 3 / 10, 4 / 5, 8 / 9, 1.0, 1.0)
WEIGHTS: tuple[tuple[float, ...], ...] = (
    (),
    (1 / 5,),
    (3 / 40, 9 / 40),
    (44 / 45, -56 / 15, 32 / 9),
    (19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729),
    (9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656),
    (35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84),
)
ERROR = (71 / 57600, 0.0, -71 / 16695, 71 / 1920, -17253 / 339200, 22 / 525, -1 / 40)


#: Stan's defaults: `ode_rk45`'s, and its stiff solvers' (CVODES's, which `ode_bdf` keeps).
RK45_DEFAULTS = Tolerance(1e-6, 1e-6, 10**6)
BDF_DEFAULTS = Tolerance(1e-10, 1e-10, 10**8)


def first_steps(rtol: float) -> int:
    """Into how many steps the first output interval is split for the first step's size (the
    controller then finds its own): a step's error goes as h^5, so a tenth of the tolerance
    takes 10^(1/5) times the steps; 4 at posteriordb's lynx and hares' 1e-5, 7 at 1e-6."""
    return max(2, math.ceil(round(0.4 * rtol ** (-1 / 5), 9)))  # 1e-5 gives 4, not 4.0000001


def ode_rk45(
    body: Body,
    z0: torch.Tensor,
    t0: torch.Tensor,
    ts: torch.Tensor,
    theta: torch.Tensor,
    builtins: Builtins,
    tolerance: Tolerance,
) -> torch.Tensor:
    """The state at each of the times `ts` (rows), from `z0` at `t0`: a `(T, N)` value for
    a state of N entries (`(T,)` for a number), any axes before z0's and theta's entries
    carried along."""
    return _solve(body, z0, t0, ts, theta, builtins, tolerance, stiff=False)


def ode_bdf(
    body: Body,
    z0: torch.Tensor,
    t0: torch.Tensor,
    ts: torch.Tensor,
    theta: torch.Tensor,
    builtins: Builtins,
    tolerance: Tolerance,
) -> torch.Tensor:
    """`ode_rk45`'s value by the stiff solver, ROS34PW2 (`runtime.ode_rosenbrock` says why
    that method): compiled where the body is (`qvr::ode_bdf`, batched over chains), else
    in torch with autograd through the kept steps."""
    return _solve(body, z0, t0, ts, theta, builtins, tolerance, stiff=True)


def _solve(
    body: Body,
    z0: torch.Tensor,
    t0: torch.Tensor,
    ts: torch.Tensor,
    theta: torch.Tensor,
    builtins: Builtins,
    tolerance: Tolerance,
    stiff: bool,
) -> torch.Tensor:
    """Either solver: the compiled one where the body compiles, else the torch one; not a
    number where an interval needs more than max_num_steps steps (the point a sampler
    rejects, as Stan's)."""
    start, times = _times(t0, ts, "ode_bdf" if stiff else "ode_rk45")
    vector = body.sizes[1] > 0
    state = z0 if vector else z0[..., None]
    solver = compiled(body)
    if solver is not None:
        # the stiff controller picks its own first step (h0 = 0)
        h0 = 0.0 if stiff else (times[0] - start) / first_steps(tolerance.rtol)
        solution = _in_c(solver, body, state, theta, ts, start, h0, tolerance, stiff=stiff)
    else:
        rhs = right_hand_side(body, theta, vector, builtins)
        z = list(state.unbind(-1))
        outputs = (
            rosenbrock(rhs, z, start, times, tolerance, reads(body, body.params[0]))
            if stiff
            else adaptive(rhs, z, start, times, tolerance)
        )
        if outputs is None:
            shape = (*torch.broadcast_shapes(state.shape[:-1], theta.shape[:-1]), len(times))
            solution = torch.full((*shape, state.shape[-1]), torch.nan, dtype=state.dtype)
        else:
            solution = _solution(outputs)
    return solution if vector else solution[..., 0]


def _in_c(
    solver: Compiled,
    body: Body,
    state: torch.Tensor,
    theta: torch.Tensor,
    ts: torch.Tensor,
    t0: float,
    h0: float,
    tolerance: Tolerance,
    stiff: bool = False,
) -> torch.Tensor:
    """The compiled solver (`runtime.ode_c`) as one operation (`runtime.ode_op`), its
    rows the axes before z0's and theta's entries, broadcast together."""
    params = theta if body.sizes[2] else theta[..., None]
    dtype = torch.float64
    batch = torch.broadcast_shapes(state.shape[:-1], params.shape[:-1])
    z = state.to(dtype).expand(*batch, state.shape[-1]).reshape(-1, state.shape[-1])
    th = params.to(dtype).expand(*batch, params.shape[-1]).reshape(-1, params.shape[-1])
    times = ts.to(dtype)
    operation = torch.ops.qvr.ode_bdf if stiff else torch.ops.qvr.ode_rk45
    out, _ = operation(
        z, th, times, t0, tolerance.rtol, tolerance.atol, tolerance.max_steps, h0,
        register(solver),
    )  # fmt: skip
    return out.reshape(*batch, *out.shape[1:]).to(state.dtype)


def tolerance_of(
    rtol: torch.Tensor, atol: torch.Tensor, max_steps: torch.Tensor, name: str = "ode_rk45_tol"
) -> Tolerance:
    """`ode_rk45_tol`'s (or `name`'s) tolerances, data the checker admitted: numbers read
    once."""
    r, a, m = float(rtol), float(atol), float(max_steps)
    if not (r > 0 and a > 0 and m >= 1 and m == int(m)):
        raise QvrRuntimeError(
            f"{name}: rtol and atol are positive and max_num_steps a whole number, 1 or "
            f"more, not {r}, {a} and {m}"
        )
    return Tolerance(r, a, int(m))


def _times(t0: torch.Tensor, ts: torch.Tensor, name: str) -> tuple[float, list[float]]:
    """The start and the output times as numbers: data, the same in every evaluation, so
    read once per evaluation (the checker admits only data here)."""
    if ts.dim() != 1 or t0.dim() != 0:
        raise QvrRuntimeError(
            f"{name}: the start is one number and the output times a vector, not shapes "
            f"{tuple(t0.shape)} and {tuple(ts.shape)}"
        )
    start = float(t0)
    times = [float(t) for t in ts.tolist()]
    before = start
    for t in times:
        if not t > before:
            raise QvrRuntimeError(
                f"{name}: the output times increase from the start {start}, but {t} comes "
                f"at or before {before}"
            )
        before = t
    return start, times


State = list[torch.Tensor]  # a state's entries, each over the batch


def _solution(outputs: list[State]) -> torch.Tensor:
    """The states at the output times as one tensor: times, then the state's entries."""
    entries = len(outputs[0])
    return torch.stack([torch.stack([o[i] for o in outputs], -1) for i in range(entries)], -1)


def adaptive(
    rhs: Rhs, z0: State, t0: float, ts: Sequence[float], tolerance: Tolerance
) -> list[State] | None:
    """Adaptive Dormand-Prince steps (one size for the whole batch), each kept when its
    error estimate is within the tolerance, the next one's size from the standard
    controller (0.9 err^(-1/5), between a fifth and 5 times); each output time is stepped
    to exactly. None when an interval needs more than `max_steps` steps kept, or a step
    shrinks to nothing (a solution that blows up is rejected until it does), as the
    compiled solver (`runtime.ode_c`), whose steps these are."""
    z = z0
    k1 = rhs(t0, z)
    t = t0
    h = (ts[0] - t0) / first_steps(tolerance.rtol)
    outputs = []
    for end in ts:
        taken = 0
        while t < end:
            tiny = 1e-12 * max(1.0, abs(end))
            if taken >= tolerance.max_steps or h < tiny:
                return None
            last = end - (t + h) <= tiny  # this step lands on the output time
            size = end - t if last else h
            x, k, error = _step(rhs, t, z, k1, size)
            with torch.no_grad():
                each = [
                    _ratios(a, b, e, tolerance).max() for a, b, e in zip(z, x, error, strict=True)
                ]
                ratio = float(torch.stack(each).max())  # NaN when any is: never within
            grow = 0.2 if not math.isfinite(ratio) else 5.0 if ratio == 0 else 0.9 * ratio**-0.2
            proposal = size * min(5.0, max(0.2, grow))
            if ratio <= 1.0:
                t, z, k1 = (end if last else t + size), x, k
                taken += 1
                h = max(h, proposal) if last else proposal  # a shortened last step: keep h
            else:
                h = proposal
        outputs.append(z)
    return outputs


def _step(rhs: Rhs, t: float, z: State, k1: State, h: float) -> tuple[State, State, State]:
    """One Dormand-Prince step of size h from (t, z), whose derivative there is k1: the
    5th-order state, its derivative (the next step's k1) and the error estimate."""
    stages = [k1]
    x = z
    for node, row in zip(NODES[1:], WEIGHTS[1:], strict=True):
        x = [_combination(z_i, [k[i] for k in stages], row, h) for i, z_i in enumerate(z)]
        stages.append(rhs(t + node * h, x))
    with torch.no_grad():
        error = [_combination(None, [k[i] for k in stages], ERROR, h) for i in range(len(z))]
    return x, stages[-1], error


def _combination(
    start: torch.Tensor | None, stages: list[torch.Tensor], weights: Sequence[float], h: float
) -> torch.Tensor:
    """`start` plus h times the weighted sum of the stages (those of weight not 0), one
    operation per stage read (`torch.add`'s alpha)."""
    out = start
    for weight, k in zip(weights, stages, strict=False):
        if weight:
            out = k * (h * weight) if out is None else torch.add(out, k, alpha=h * weight)
    assert out is not None
    return out


def _ratios(
    before: torch.Tensor, after: torch.Tensor, error: torch.Tensor, tolerance: Tolerance
) -> torch.Tensor:
    """Each error estimate over its tolerance, atol + rtol * the larger |z| of the step's
    two ends (at most 1: within)."""
    size = torch.maximum(before.abs(), after.abs())
    return error.abs() / (tolerance.atol + tolerance.rtol * size)
