"""`ode_rk45`'s solvers (issue 49): adaptive Dormand-Prince steps compiled in C, one torch
operation (`runtime.ode_c`, `runtime.ode_op`), and the same steps in torch where there is
no C.

The values are held to scipy's solve_ivp at 1e-12 (Lotka-Volterra at posteriordb's
reference posterior, and at a warmup's far point of fast dynamics) and to the closed forms
of linear and time-driven ODEs; the gradients to the closed form, to the sensitivity
equations solved by scipy and (the torch solver's) to finite differences; a batched
evaluation, NUTS's, of the compiled solver records into a graph that replays the eager
values.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import torch
from scipy.integrate import solve_ivp
from torch.func import vmap

from qvr_core.check import check
from qvr_core.check.model import Let
from qvr_core.check.terms import Body, Call, subterms
from qvr_core.inference.record import record
from qvr_core.runtime import ode, ode_c
from qvr_core.runtime.functions import FUNCTION_IMPLEMENTATIONS, OPERATOR_FUNCTIONS
from tests.lotka_volterra import program

ode_rk45 = FUNCTION_IMPLEMENTATIONS["ode_rk45"]
ode_rk45_tol = FUNCTION_IMPLEMENTATIONS["ode_rk45_tol"]

F64 = torch.float64
BUILTINS = ode.Builtins(FUNCTION_IMPLEMENTATIONS, OPERATOR_FUNCTIONS)
# posteriordb's reference posterior means of hudson_lynx_hare-lotka_volterra
THETA = [0.5469, 0.02775, 0.8001, 0.02412]
Z_INIT = [34.04, 5.936]
TS = [float(t) for t in range(1, 21)]

LOTKA_VOLTERRA = program("    let z = ode_rk45(lv, z0, 0.0, ts, theta)")

DECAY = """\
object Year : FinSet 3

define decay(t : Real, z : Real, k : Real) : Real !{} =
    return -k * z

define driven(t : Real, z : Real, k : Real) : Real !{} =
    return k * cos(t)

program m : Year -> Year
    sample k <- HalfNormal(1.0)
    sample z0 <- HalfNormal(1.0)
    let z = ode_rk45(decay, z0, 0.5, ts, k)
    let w = ode_rk45(driven, z0, 0.5, ts, k)
    let mu = z + w
    observe y : Year <- Normal(mu, 1.0)
    return z

export m
"""


def _bodies(text: str) -> dict[str, Body]:
    """The right-hand side of each solver call of the program's lets, by the let's name."""
    module = check(text)
    assert not [d for d in module.diagnostics if d.severity.name == "ERROR"]
    (model,) = module.models.values()
    out = {}
    for step in model.steps:
        if isinstance(step, Let):
            for t in subterms(step.term):
                if isinstance(t, Call) and t.function is not None:
                    out[step.name] = t.function
    return out


def _lv_scipy(theta: list[float], z0: list[float], ts: list[float]) -> np.ndarray:
    a, b, c, d = theta

    def f(_t: float, z: np.ndarray) -> list[float]:
        return [(a - b * z[1]) * z[0], (-c + d * z[0]) * z[1]]

    sol = solve_ivp(f, (0.0, ts[-1]), z0, t_eval=ts, method="DOP853", rtol=1e-12, atol=1e-12)
    return np.asarray(sol.y.T)


def _t(values: list[float]) -> torch.Tensor:
    return torch.tensor(values, dtype=F64)


@pytest.fixture
def torch_solver(monkeypatch: pytest.MonkeyPatch) -> None:
    """The torch solver, as where there is no C compiler."""
    monkeypatch.setattr(ode, "compiled", lambda _body: None)


def _lv_sensitivities(theta: list[float], z0: list[float], ts: list[float]) -> np.ndarray:
    """d z(t) / d (theta, z0) at each time, from the sensitivity equations (scipy, 1e-12):
    (T, 2, 6)."""
    a, b, c, d = theta

    def f(_t: float, y: np.ndarray) -> np.ndarray:
        u, v, s = y[0], y[1], y[2:].reshape(2, 6)
        jz = np.array([[a - b * v, -b * u], [d * v, -c + d * u]])
        jt = np.array([[u, -u * v, 0.0, 0.0], [0.0, 0.0, -v, u * v]])
        ds = jz @ s + np.hstack([jt, np.zeros((2, 2))])
        return np.concatenate([[(a - b * v) * u, (-c + d * u) * v], ds.reshape(-1)])

    s0 = np.hstack([np.zeros((2, 4)), np.eye(2)]).reshape(-1)
    sol = solve_ivp(
        f, (0.0, ts[-1]), [*z0, *s0], t_eval=ts, method="DOP853", rtol=1e-12, atol=1e-12
    )
    return np.asarray(sol.y.T[:, 2:]).reshape(len(ts), 2, 6)


def _tolerances(rtol: float, atol: float, steps: float) -> list[torch.Tensor]:
    return [torch.tensor(v, dtype=F64) for v in (rtol, atol, steps)]


ZERO = torch.tensor(0.0, dtype=F64)


def test_the_body_is_compiled_where_there_is_a_c_compiler() -> None:
    body = _bodies(LOTKA_VOLTERRA)["z"]
    assert "double v1 = (th[1]) * (z[1]);" in ode_c.source(body)  # theta[1] * v, in C
    assert ode_c.compiled(body) is not None


@pytest.mark.parametrize(("theta", "z0"), [(THETA, Z_INIT), ([4.0, 0.5, 3.0, 0.4], [3.0, 1.0])])
def test_lotka_volterra_is_scipy_s_solution_at_every_time(
    theta: list[float], z0: list[float]
) -> None:
    """At the reference posterior, and at a warmup's far point whose spikes of 10^2 a fixed
    grid would not follow."""
    body = _bodies(LOTKA_VOLTERRA)["z"]
    want = _lv_scipy(theta, z0, TS)
    got = ode_rk45(body, _t(z0), ZERO, _t(TS), _t(theta))
    assert got.shape == (20, 2)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-4)  # Stan's defaults, 1e-6 a step
    tight = ode_rk45_tol(body, _t(z0), ZERO, _t(TS), *_tolerances(1e-11, 1e-11, 1e6), _t(theta))
    np.testing.assert_allclose(tight.numpy(), want, rtol=1e-8)


def test_the_gradient_is_the_sensitivity_equations_one() -> None:
    body = _bodies(LOTKA_VOLTERRA)["z"]
    theta = _t(THETA).requires_grad_(True)
    z0 = _t(Z_INIT).requires_grad_(True)
    got = ode_rk45_tol(body, z0, ZERO, _t(TS), *_tolerances(1e-11, 1e-11, 1e6), theta)
    weights = torch.linspace(0.5, 1.5, 40, dtype=F64).reshape(20, 2)
    grad_theta, grad_z0 = torch.autograd.grad((weights * got).sum(), (theta, z0))
    want = np.einsum("tn,tnp->p", weights.numpy(), _lv_sensitivities(THETA, Z_INIT, TS))
    np.testing.assert_allclose(grad_theta.numpy(), want[:4], rtol=1e-6)
    np.testing.assert_allclose(grad_z0.numpy(), want[4:], rtol=1e-6)


def test_more_steps_than_max_num_steps_is_not_a_number() -> None:
    body = _bodies(LOTKA_VOLTERRA)["z"]
    tol = _tolerances(1e-8, 1e-8, 5.0)
    got = ode_rk45_tol(body, _t([3.0, 1.0]), ZERO, _t(TS), *tol, _t([4.0, 0.5, 3.0, 0.4]))
    assert bool(got.isnan().all())


@pytest.mark.parametrize("solver", ["c", "torch"])
def test_linear_decay_and_its_gradient_are_the_closed_form(
    solver: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if solver == "torch":
        monkeypatch.setattr(ode, "compiled", lambda _body: None)
    body = _bodies(DECAY)["z"]
    k = torch.tensor(0.7, dtype=F64, requires_grad=True)
    z0 = torch.tensor(2.0, dtype=F64, requires_grad=True)
    ts = _t([1.0, 2.5, 4.0])
    got = ode_rk45_tol(
        body, z0, torch.tensor(0.5, dtype=F64), ts, *_tolerances(1e-10, 1e-12, 1e6), k
    )
    dt = ts - 0.5
    want = 2.0 * torch.exp(-0.7 * dt)
    torch.testing.assert_close(got.detach(), want, rtol=1e-8, atol=0.0)
    grad_k, grad_z0 = torch.autograd.grad(got.sum(), (k, z0))
    torch.testing.assert_close(grad_k, (-dt * want).sum(), rtol=1e-7, atol=0.0)
    torch.testing.assert_close(grad_z0, (want / 2.0).sum(), rtol=1e-7, atol=0.0)


@pytest.mark.parametrize("solver", ["c", "torch"])
def test_a_right_hand_side_of_the_time_alone(solver: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """dz/dt = k cos(t): z = z0 + k (sin t - sin t0), the time read at each stage."""
    if solver == "torch":
        monkeypatch.setattr(ode, "compiled", lambda _body: None)
    body = _bodies(DECAY)["w"]
    ts = _t([1.0, 2.5, 4.0])
    got = ode_rk45(body, _t([2.0])[0], torch.tensor(0.5, dtype=F64), ts, _t([0.7])[0])
    want = 2.0 + 0.7 * (torch.sin(ts) - np.sin(0.5))
    torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-8)


@pytest.mark.usefixtures("torch_solver")
def test_the_torch_solver_follows_fast_dynamics_to_the_tolerance() -> None:
    """A warmup's far point: spikes that a few steps a year would miss."""
    body = _bodies(LOTKA_VOLTERRA)["z"]
    theta, z0 = [4.0, 0.5, 3.0, 0.4], [3.0, 1.0]
    got = ode_rk45(body, _t(z0), ZERO, _t(TS), _t(theta))
    np.testing.assert_allclose(got.numpy(), _lv_scipy(theta, z0, TS), rtol=1e-4)
    calm = ode_rk45(body, _t(Z_INIT), ZERO, _t(TS), _t(THETA))
    np.testing.assert_allclose(calm.numpy(), _lv_scipy(THETA, Z_INIT, TS), rtol=1e-5)


@pytest.mark.usefixtures("torch_solver")
def test_the_torch_solver_s_gradient_against_finite_differences() -> None:
    body = _bodies(LOTKA_VOLTERRA)["z"]
    ts = _t(TS[:8])
    weights = torch.linspace(0.5, 1.5, 16, dtype=F64).reshape(8, 2)

    def value(theta: torch.Tensor, z0: torch.Tensor) -> torch.Tensor:
        return (weights * torch.log(ode_rk45(body, z0, ZERO, ts, theta))).sum()

    theta = _t(THETA).requires_grad_(True)
    z0 = _t(Z_INIT).requires_grad_(True)
    assert torch.autograd.gradcheck(value, (theta, z0), eps=1e-7, atol=1e-6, rtol=1e-5)


def test_the_batched_solve_records_and_replays() -> None:
    body = _bodies(LOTKA_VOLTERRA)["z"]
    ts = _t(TS)

    def potential(x: torch.Tensor) -> torch.Tensor:
        z = ode_rk45(body, torch.exp(x[4:]), ZERO, ts, torch.exp(x[:4]))
        return torch.log(z).sum()

    def batched(xs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        xs = xs.detach().requires_grad_(True)
        values = vmap(potential)(xs)
        (grads,) = torch.autograd.grad(values.sum(), xs)
        return grads, values

    start = torch.log(_t([*THETA, *Z_INIT]))
    xs = torch.stack([start, start + 0.01])
    graph = record(batched, xs)
    for got, want in zip(graph(xs + 0.02), batched(xs + 0.02), strict=True):
        torch.testing.assert_close(got, want)
    # the whole solve is one operation of the graph
    assert sum("ode_rk45" in str(n.target) for n in graph.graph.nodes) == 1


@pytest.mark.parametrize(("rtol", "steps"), [(1e-3, 2), (1e-5, 4), (1e-6, 7)])
def test_the_first_step_follows_the_tolerance(rtol: float, steps: int) -> None:
    assert ode.first_steps(rtol) == steps


def test_at_stan_s_tolerances_the_gradient_keeps_them_too() -> None:
    """The tangents are held to the step-size control, as Stan's coupled system is: at
    posteriordb's tolerances (1e-5, 1e-3) the gradient is within a few of them of the
    sensitivity equations' (a control of the state alone left it 0.4% off)."""
    body = _bodies(LOTKA_VOLTERRA)["z"]
    theta = _t(THETA).requires_grad_(True)
    z0 = _t(Z_INIT).requires_grad_(True)
    got = ode_rk45_tol(body, z0, ZERO, _t(TS), *_tolerances(1e-5, 1e-3, 500), theta)
    weights = torch.linspace(0.5, 1.5, 40, dtype=F64).reshape(20, 2)
    grads = torch.autograd.grad((weights * torch.log(got)).sum(), (theta, z0))
    exact = _lv_scipy(THETA, Z_INIT, TS)
    chain = weights.numpy() / exact  # d log z / dz
    want = np.einsum("tn,tnp->p", chain, _lv_sensitivities(THETA, Z_INIT, TS))
    np.testing.assert_allclose(torch.cat(grads).numpy(), want, rtol=1e-4)


def test_a_cache_folder_others_may_write_to_is_not_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A library planted in a shared folder under the expected name would run in this
    process: the solver is then compiled into a private folder of its own."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    own = ode_c._cache_folder()
    assert own == str(tmp_path / "qvr" / "ode") and (os.stat(own).st_mode & 0o777) == 0o700
    os.chmod(own, 0o777)
    other = ode_c._cache_folder()
    assert other != own and (os.stat(other).st_mode & 0o077) == 0
    body = _bodies(LOTKA_VOLTERRA)["z"]
    ode_c.compiled.cache_clear()  # compiled again, not this process's earlier library
    assert ode_c.compiled(body) is not None
    assert [p.suffix for p in Path(other).iterdir()] == [".so"]
    assert not list(Path(own).iterdir())  # nothing written to, or read from, the shared one
