"""`ode_bdf`'s stiff solver (issue 49): adaptive ROS34PW2 steps compiled in C, one torch
operation batched over chains (`qvr::ode_bdf`), and the same method in torch where there
is no C (`runtime.ode_rosenbrock`).

Every answer is held to an independent one: the tableau to the order conditions and
L-stability, the values to scipy's Radau at 1e-12 on the classic stiff problems
(Robertson's chemical kinetics, van der Pol at mu = 1000) and, on a problem that is not
stiff, to `ode_rk45`; the gradients to central finite differences of scipy's solutions;
the work to Dormand-Prince's on the same stiff problem; a pharmacokinetic model written as
a user would (posteriordb's one_comp_mm_elim_abs) to its log density computed with scipy.
"""

from __future__ import annotations

import functools
import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from scipy import stats
from scipy.integrate import solve_ivp
from torch.func import vmap

from qvr_core.check import check
from qvr_core.check.model import Let
from qvr_core.check.terms import Body, Call, subterms
from qvr_core.inference.record import record
from qvr_core.runs.run import run_inference
from qvr_core.runtime import ode, ode_c
from qvr_core.runtime import ode_rosenbrock as ros
from qvr_core.runtime.functions import FUNCTION_IMPLEMENTATIONS
from qvr_core.runtime.model import compile_model
from tests.lotka_volterra import program

pytestmark = pytest.mark.timeout(600)

ode_bdf = FUNCTION_IMPLEMENTATIONS["ode_bdf"]
ode_bdf_tol = FUNCTION_IMPLEMENTATIONS["ode_bdf_tol"]
ode_rk45_tol = FUNCTION_IMPLEMENTATIONS["ode_rk45_tol"]
F64 = torch.float64

STIFF = """\
object Species : FinSet 3
object Rate : FinSet 3
object Osc : FinSet 2
object Mu : FinSet 1
object Time : FinSet 7

define robertson(t : Real, z : Species -> Real, k : Rate -> Real) : Species -> Real !{} =
    let made = k[2] * z[1] * z[2]
    let a = -k[0] * z[0] + made
    let c = k[1] * z[1] * z[1]
    return [a, -a - c, c]

define van_der_pol(t : Real, z : Osc -> Real, mu : Mu -> Real) : Osc -> Real !{} =
    let x = z[0]
    let y = z[1]
    return [y, mu[0] * (1.0 - x * x) * y - x]

program m : Time -> Time
    sample k : Rate <- LogNormal(0.0, 1.0)
    sample z0 : Species <- LogNormal(0.0, 1.0)
    sample mu : Mu <- LogNormal(0.0, 1.0)
    sample w0 : Osc <- Normal(0.0, 1.0)
    let z = ode_bdf(robertson, z0, 0.0, ts, k)
    let w = ode_bdf(van_der_pol, w0, 0.0, ts, mu)
    observe y : Time * Species <- Normal(z, 1.0)
    observe v : Time * Osc <- Normal(w, 1.0)
    return z

export m
"""

ROBERTSON_K = [0.04, 3e7, 1e4]
ROBERTSON_Z0 = [1.0, 0.0, 0.0]
ROBERTSON_TS = [0.4, 4.0, 40.0, 400.0, 4e3, 4e4, 4e5]
# van der Pol at mu = 1000 (period about 1614): times on the slow branches, where the
# value is not decided by where within a step a fast jump falls
VDP_TS = [1.0, 100.0, 400.0, 700.0, 1000.0, 1300.0, 2200.0]


def _bodies(text: str) -> dict[str, Body]:
    module = check(text)
    assert not [d for d in module.diagnostics if d.severity.name in ("ERROR", "WARNING")]
    (model,) = module.models.values()
    out = {}
    for step in model.steps:
        if isinstance(step, Let):
            for t in subterms(step.term):
                if isinstance(t, Call) and t.function is not None:
                    out[step.name] = t.function
    return out


def _t(values: list[float] | float) -> torch.Tensor:
    return torch.tensor(values, dtype=F64)


def _tol(rtol: float, atol: float, steps: float) -> list[torch.Tensor]:
    return [_t(rtol), _t(atol), _t(steps)]


def _robertson_f(k: list[float]):  # type: ignore[no-untyped-def]
    def f(_t: float, y: np.ndarray) -> list[float]:
        made = k[2] * y[1] * y[2]
        c = k[1] * y[1] ** 2
        return [-k[0] * y[0] + made, k[0] * y[0] - made - c, c]

    return f


def _robertson_scipy(k: list[float], z0: list[float], ts: list[float]) -> np.ndarray:
    sol = solve_ivp(
        _robertson_f(k), (0.0, ts[-1]), z0, t_eval=ts, method="Radau", rtol=1e-12, atol=1e-16
    )
    assert sol.success
    return np.asarray(sol.y.T)


def _vdp_scipy(mu: float, z0: list[float], ts: list[float]) -> np.ndarray:
    def f(_t: float, y: np.ndarray) -> list[float]:
        return [y[1], mu * (1 - y[0] ** 2) * y[1] - y[0]]

    sol = solve_ivp(f, (0.0, ts[-1]), z0, t_eval=ts, method="Radau", rtol=1e-12, atol=1e-12)
    assert sol.success
    return np.asarray(sol.y.T)


@pytest.fixture
def torch_solver(monkeypatch: pytest.MonkeyPatch) -> None:
    """The torch solver, as where there is no C compiler."""
    monkeypatch.setattr(ode, "compiled", lambda _body: None)


def test_the_tableau_is_of_order_3_as_a_w_method_and_l_stable() -> None:
    """Rosenbrock's order conditions to order 3 (beta = alpha + gamma), the W-method's
    conditions to order 2 (any matrix in place of J), the embedded solution of order 2,
    and R(inf) = 0: ROS34PW2's coefficients, as the paper gives them."""
    a = np.zeros((4, 4))
    g = np.zeros((4, 4))
    for i in range(4):
        a[i, : len(ros.ALPHA[i])] = ros.ALPHA[i]
        g[i, : len(ros.COUPLING[i])] = ros.COUPLING[i]
    b, bh, gamma = np.array(ros.B), np.array(ros.B_EMBEDDED), ros.GAMMA
    beta = a + g
    c, bp = a.sum(1), beta.sum(1)
    for weights in (b, bh):
        assert weights.sum() == pytest.approx(1.0, abs=1e-15)
        assert weights @ bp == pytest.approx(0.5 - gamma, abs=1e-15)
    assert b @ c**2 == pytest.approx(1 / 3, abs=1e-15)
    assert b @ beta @ bp == pytest.approx(1 / 6 - gamma + gamma**2, abs=1e-15)
    assert b @ c == pytest.approx(0.5, abs=1e-15)  # W: the order-2 conditions apart
    assert b @ g.sum(1) == pytest.approx(-gamma, abs=1e-15)
    stages = beta + gamma * np.eye(4)
    assert 1 - b @ np.linalg.solve(stages, np.ones(4)) == pytest.approx(0.0, abs=1e-14)
    np.testing.assert_allclose(ros.NODES, c, atol=1e-16)
    np.testing.assert_allclose(ros.TIME_WEIGHTS, gamma + g.sum(1), atol=1e-16)


def test_robertson_is_radau_s_solution_at_stan_s_default_tolerances() -> None:
    body = _bodies(STIFF)["z"]
    want = _robertson_scipy(ROBERTSON_K, ROBERTSON_Z0, ROBERTSON_TS)
    got = ode_bdf(body, _t(ROBERTSON_Z0), _t(0.0), _t(ROBERTSON_TS), _t(ROBERTSON_K))
    assert got.shape == (7, 3)
    # 1e-10 a step: the species of 1 to 1e-9 to a relative 1e-7
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-7, atol=1e-13)
    assert np.allclose(got.numpy().sum(1), 1.0, atol=1e-12)  # mass is conserved


def test_van_der_pol_at_mu_1000_is_radau_s_solution() -> None:
    body = _bodies(STIFF)["w"]
    want = _vdp_scipy(1000.0, [2.0, 0.0], VDP_TS)
    got = ode_bdf_tol(body, _t([2.0, 0.0]), _t(0.0), _t(VDP_TS), *_tol(1e-8, 1e-8, 1e6), _t([1e3]))
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-8)


@pytest.mark.usefixtures("torch_solver")
def test_the_torch_solver_solves_robertson_and_van_der_pol_too() -> None:
    bodies = _bodies(STIFF)
    tol = _tol(1e-7, 1e-10, 1e5)
    z = ode_bdf_tol(bodies["z"], _t(ROBERTSON_Z0), _t(0.0), _t(ROBERTSON_TS), *tol, _t(ROBERTSON_K))
    want = _robertson_scipy(ROBERTSON_K, ROBERTSON_Z0, ROBERTSON_TS)
    np.testing.assert_allclose(z.numpy(), want, rtol=1e-4, atol=1e-11)
    w = ode_bdf_tol(bodies["w"], _t([2.0, 0.0]), _t(0.0), _t(VDP_TS[:4]), *tol, _t([1e3]))
    np.testing.assert_allclose(w.numpy(), _vdp_scipy(1e3, [2.0, 0.0], VDP_TS[:4]), rtol=1e-4)


@pytest.mark.parametrize("solver", ["c", "torch"])
def test_on_a_problem_that_is_not_stiff_it_agrees_with_ode_rk45(
    solver: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Lotka-Volterra at posteriordb's reference posterior: both solvers, tight, agree
    with each other and with scipy."""
    if solver == "torch":
        monkeypatch.setattr(ode, "compiled", lambda _body: None)
    body = _bodies(program("    let z = ode_bdf(lv, z0, 0.0, ts, theta)"))["z"]
    theta, z0, ts = _t([0.5469, 0.02775, 0.8001, 0.02412]), _t([34.04, 5.936]), _t([1.0, 4.0, 8.0])
    tight = 1e-10 if solver == "c" else 1e-8  # the torch solver, slower, a little looser
    tol = _tol(tight, tight, 1e6)
    stiff = ode_bdf_tol(body, z0, _t(0.0), ts, *tol, theta)
    explicit = ode_rk45_tol(body, z0, _t(0.0), ts, *tol, theta)
    torch.testing.assert_close(stiff, explicit, rtol=1000 * tight, atol=0.0)


#: the times and the start of the Radau comparison below
RADAU_TS = (0.4, 4.0, 40.0)
RADAU_Z0 = (1.0, 1e-6, 0.0)


@pytest.mark.parametrize("solver", ["c", "torch"])
def test_the_gradient_is_finite_differences_of_radau_s_solutions(
    solver: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """d/d(log k, z0) of a weighted sum of Robertson's species, at 3 times, against central
    differences of scipy's solutions (1e-12, steps of 1e-5: their error is ~1e-7)."""
    if solver == "torch":
        monkeypatch.setattr(ode, "compiled", lambda _body: None)
    body = _bodies(STIFF)["z"]
    log_k = _t([math.log(v) for v in ROBERTSON_K]).requires_grad_(True)
    z0 = _t(list(RADAU_Z0)).requires_grad_(True)
    weights = _radau_weights()
    got = ode_bdf_tol(body, z0, _t(0.0), _t(RADAU_TS), *_tol(1e-10, 1e-12, 1e6), torch.exp(log_k))
    grads = torch.autograd.grad((torch.from_numpy(weights) * got).sum(), (log_k, z0))
    np.testing.assert_allclose(torch.cat(grads).numpy(), _radau_differences(), rtol=2e-5, atol=1e-7)


def _radau_weights() -> np.ndarray:
    return np.linspace(0.5, 1.5, 9).reshape(3, 3) * np.array([1.0, 1e4, 1.0])


@functools.cache
def _radau_differences() -> tuple[float, ...]:
    """Central differences of the weighted sum along (log k, z0), from scipy's Radau: the
    same for both solvers, so worked out once (twelve solves at 1e-12, most of the test's
    time)."""
    weights = _radau_weights()

    def value(x: np.ndarray) -> float:
        sol = solve_ivp(
            _robertson_f(list(np.exp(x[:3]))), (0.0, RADAU_TS[-1]), list(x[3:]),
            t_eval=list(RADAU_TS), method="Radau", rtol=1e-12, atol=1e-18,
        )  # fmt: skip
        return float((weights * sol.y.T).sum())

    x = np.array([*(math.log(v) for v in ROBERTSON_K), *RADAU_Z0])
    want = []
    for i in range(6):
        step = np.zeros(6)
        step[i] = 1e-5
        want.append((value(x + step) - value(x - step)) / 2e-5)
    return tuple(want)


def test_the_gradient_along_theta_and_z0_against_its_own_finite_differences() -> None:
    """van der Pol at a milder mu (2) and its own central differences (steps of 1e-6, at
    1e-12: a step size that changes between the two solves moves them by ~1e-12, so the
    differences are good to ~1e-6 of the value)."""
    body = _bodies(STIFF)["w"]
    ts = _t([0.5, 1.5, 3.0])

    def value(mu: torch.Tensor, w0: torch.Tensor) -> torch.Tensor:
        return ode_bdf_tol(body, w0, _t(0.0), ts, *_tol(1e-12, 1e-12, 1e6), mu).sum()

    mu, w0 = _t([2.0]).requires_grad_(True), _t([1.5, -0.5]).requires_grad_(True)
    got = torch.autograd.grad(value(mu, w0), (mu, w0))
    for i, arg in enumerate((mu, w0)):
        for j in range(arg.numel()):
            step = torch.zeros_like(arg)
            step[j] = 1e-6
            args = [mu.detach(), w0.detach()]
            up, down = list(args), list(args)
            up[i], down[i] = args[i] + step, args[i] - step
            fd = float(value(*up) - value(*down)) / 2e-6
            assert float(got[i][j]) == pytest.approx(fd, rel=1e-5, abs=1e-7)


def test_on_a_stiff_problem_it_takes_far_fewer_steps_than_rk45() -> None:
    """Robertson to t = 40 at 1e-6: Dormand-Prince's steps are held by stability to ~1e-3
    of the time (tens of thousands), ROS34PW2's by accuracy alone (a few hundred); and
    where rk45 runs out of max_num_steps bdf does not."""
    body = _bodies(STIFF)["z"]
    solver = ode_c.compiled(body)
    assert solver is not None
    args = (_t(ROBERTSON_Z0), _t(0.0), _t([0.4, 4.0, 40.0]))
    tol = _tol(1e-6, 1e-6, 1e6)
    solver.steps()
    explicit = ode_rk45_tol(body, *args, *tol, _t(ROBERTSON_K))
    rk45_kept, _ = solver.steps()
    stiff = ode_bdf_tol(body, *args, *tol, _t(ROBERTSON_K))
    bdf_kept, _ = solver.steps()
    assert bool(explicit.isfinite().all()) and bool(stiff.isfinite().all())
    assert bdf_kept * 50 < rk45_kept, (bdf_kept, rk45_kept)
    few = _tol(1e-6, 1e-6, 2000)
    assert bool(ode_rk45_tol(body, *args, *few, _t(ROBERTSON_K)).isnan().all())
    assert bool(ode_bdf_tol(body, *args, *few, _t(ROBERTSON_K)).isfinite().all())


@pytest.mark.parametrize("solver", ["c", "torch"])
def test_more_steps_than_max_num_steps_is_not_a_number(
    solver: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if solver == "torch":
        monkeypatch.setattr(ode, "compiled", lambda _body: None)
    body = _bodies(STIFF)["z"]
    args = (_t(ROBERTSON_Z0), _t(0.0), _t(ROBERTSON_TS))
    got = ode_bdf_tol(body, *args, *_tol(1e-8, 1e-8, 5), _t(ROBERTSON_K))
    assert got.shape == (7, 3) and bool(got.isnan().all())


def test_the_tolerances_are_checked_when_read() -> None:
    body = _bodies(STIFF)["z"]
    with pytest.raises(Exception, match="ode_bdf_tol: rtol and atol are positive"):
        ode_bdf_tol(body, _t(ROBERTSON_Z0), _t(0.0), _t([1.0]), *_tol(0.0, 1e-6, 10), _t([1.0] * 3))
    with pytest.raises(Exception, match="ode_bdf: the output times increase"):
        ode_bdf(body, _t(ROBERTSON_Z0), _t(0.0), _t([1.0, 0.5]), _t([1.0] * 3))


def test_the_batched_solve_is_one_operation_that_records_and_replays() -> None:
    """NUTS's chains under vmap: rows of the one `qvr::ode_bdf` operation, each the eager
    value, and a recording of the gradient replays it."""
    body = _bodies(STIFF)["z"]
    ts = _t([0.4, 4.0, 40.0])

    def potential(x: torch.Tensor) -> torch.Tensor:
        z = ode_bdf_tol(
            body, torch.exp(x[3:]), _t(0.0), ts, *_tol(1e-8, 1e-10, 1e5), torch.exp(x[:3])
        )
        return (z * z).sum()

    def batched(xs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        xs = xs.detach().requires_grad_(True)
        values = vmap(potential)(xs)
        (grads,) = torch.autograd.grad(values.sum(), xs)
        return grads, values

    start = torch.log(_t([*ROBERTSON_K, 1.0, 1e-6, 1e-6]))
    xs = torch.stack([start, start + 0.1])
    _, values = batched(xs)
    for row in range(2):
        torch.testing.assert_close(values[row], potential(xs[row]), rtol=1e-12, atol=0.0)
    graph = record(batched, xs)
    for got, want in zip(graph(xs + 0.02), batched(xs + 0.02), strict=True):
        torch.testing.assert_close(got, want)
    assert sum("ode_bdf" in str(n.target) for n in graph.graph.nodes) == 1


# posteriordb's one_comp_mm_elim_abs, as a user writes it in QVR: one compartment, first-
# order absorption of a dose D = 30 into a volume V = 2, Michaelis-Menten elimination.
# Stan's program starts at t0 = -1 with the dose switched on at t > 0; from C(-1) = 0
# nothing moves before 0 (the elimination of 0 is 0), so starting at 0 is the same model.
PK = """\
object Param : FinSet 3
object Time : FinSet 12

define one_comp_mm_elim_abs(t : Real, z : Real, theta : Param -> Real) : Real !{} =
    let k_a = theta[0]
    let k_m = theta[1]
    let v_m = theta[2]
    let dose = exp(-k_a * t) * 30.0 * k_a / 2.0
    let elim = v_m / 2.0 * z / (k_m + z)
    return dose - elim

program one_comp : Time -> Time
    sample theta : Param <- HalfCauchy(1.0)
    sample sigma <- HalfCauchy(1.0)
    let c = ode_bdf(one_comp_mm_elim_abs, 0.0, 0.0, times, theta)
    let log_c = log(c)
    observe conc : Time <- LogNormal(log_c, sigma)
    return c

export one_comp
"""
PK_TIMES = [0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 10.0, 12.0, 16.0, 20.0]
PK_TRUTH = [1.2, 2.0, 1.0]


def _pk_scipy(theta: list[float], times: list[float]) -> np.ndarray:
    k_a, k_m, v_m = theta

    def f(t: float, c: np.ndarray) -> list[float]:
        return [math.exp(-k_a * t) * 30.0 * k_a / 2.0 - v_m / 2.0 * c[0] / (k_m + c[0])]

    sol = solve_ivp(
        f, (0.0, times[-1]), [0.0], t_eval=times, method="Radau", rtol=1e-13, atol=1e-14
    )
    return np.asarray(sol.y[0])


def _pk_data() -> dict[str, list[float]]:
    """Concentrations of the truth with a fixed multiplicative error (no draw)."""
    noise = 0.1 * np.sin(np.arange(len(PK_TIMES)) * 2.3)
    return {"times": PK_TIMES, "conc": list(_pk_scipy(PK_TRUTH, PK_TIMES) * np.exp(noise))}


def test_a_pharmacokinetic_model_checks_clean_and_scores_as_scipy_does() -> None:
    module = check(PK)
    assert not [d for d in module.diagnostics if d.severity.name in ("ERROR", "WARNING")]
    data = _pk_data()
    qvr = compile_model(module, "one_comp")
    inputs = {"times": _t(data["times"])}
    for theta, sigma in (([1.0, 1.5, 2.0], 0.2), (PK_TRUTH, 0.1)):
        given = {"theta": _t(theta), "sigma": _t(sigma), "conc": _t(data["conc"])}
        with torch.no_grad():
            got = float(qvr.log_joint(inputs, given).reshape(-1)[0])
        c = _pk_scipy(theta, PK_TIMES)
        want = (
            stats.halfcauchy.logpdf(theta).sum()
            + stats.halfcauchy.logpdf(sigma)
            + stats.lognorm.logpdf(data["conc"], s=sigma, scale=c).sum()
        )
        assert got == pytest.approx(want, rel=1e-9)


def _pk_file(tmp_path: Path) -> Path:
    path = tmp_path / "data.json"
    path.write_text(json.dumps(_pk_data()), encoding="utf-8")
    return path


def test_the_pharmacokinetic_model_runs_its_prior(tmp_path: Path) -> None:
    summary = run_inference(PK, method="prior", steps=20, data=_pk_file(tmp_path))
    assert set(summary["sites"]) == {"theta", "sigma", "conc"}
    assert summary["sites"]["theta"]["min"] > 0


@pytest.mark.sampling
@pytest.mark.slow
def test_a_short_nuts_run_of_the_pharmacokinetic_model_completes(tmp_path: Path) -> None:
    """Not a test of where it converges (a few steps decide nothing): that NUTS runs the
    stiff solver's batched operation through warmup and draws and reports finite means."""
    summary = run_inference(
        PK, method="nuts", steps=30, chains=2, seed=1, max_tree_depth=5, data=_pk_file(tmp_path)
    )
    rows = summary["posterior"]["rows"]
    assert {r["label"] for r in rows} >= {"theta[0]", "sigma"}
    assert all(math.isfinite(r["mean"]) for r in rows)
