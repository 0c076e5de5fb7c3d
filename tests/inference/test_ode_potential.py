"""NUTS's potential of a model that solves an ODE (issue 49): recorded for all chains where
the solver is compiled, evaluated chain by chain where it is not, one function of the point.

The compiled solver (`runtime.ode_c`) is one operation of the recording. Where there is
no C, the torch solver reads each step's error into Python, which a batched evaluation
cannot: `ManyPotential` then evaluates each row eagerly, and gives what the eager
potential gives.
"""

from __future__ import annotations

import math

import pytest
import torch

from qvr_core.inference.many import ManyPotential
from qvr_core.plan.run_arguments import RunArguments
from qvr_core.runs.prepare import PreparedRun, prepare
from qvr_core.runtime import ode
from tests.inference.batched_agreement import eager_potential

pytestmark = pytest.mark.timeout(300)

PROGRAM = """\
object State : FinSet 2
object Rate : FinSet 4
object Year : FinSet 6

define lv(t : Real, z : State -> Real, theta : Rate -> Real) : State -> Real !{} =
    let u = z[0]
    let v = z[1]
    return [(theta[0] - theta[1] * v) * u, (-theta[2] + theta[3] * u) * v]

program m : Year -> Year
    sample theta : Rate <- LogNormal(-1.0, 1.0)
    sample z0 : State <- LogNormal(2.0, 1.0)
    sample sigma <- HalfNormal(1.0)
    let z = ode_rk45_tol(lv, z0, 0.0, ts, 1e-5, 1e-3, 500, theta)
    let log_z = log(z)
    observe y : Year * State <- LogNormal(log_z, sigma)
    return z

export m
"""

DATA = {
    "ts": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
    "y": [[47.2, 6.1], [70.2, 9.8], [77.4, 35.2], [36.3, 59.4], [20.6, 41.7], [18.1, 19.0]],
}
CALM = [math.log(v) for v in (0.55, 0.028, 0.8, 0.024, 34.0, 5.9, 0.25)]
WILD = [math.log(v) for v in (4.0, 0.5, 3.0, 0.4, 3.0, 1.0, 0.25)]  # spikes: adaptive steps


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> PreparedRun:
    import json

    data = tmp_path_factory.mktemp("ode") / "data.json"
    data.write_text(json.dumps(DATA))
    return prepare(PROGRAM, RunArguments(method="nuts"), data=str(data))


@pytest.fixture
def torch_solver(monkeypatch: pytest.MonkeyPatch) -> None:
    """The torch solver, as where there is no C compiler."""
    monkeypatch.setattr(ode, "compiled", lambda _body: None)


def test_the_compiled_solver_is_one_operation_of_the_recorded_potential(
    run: PreparedRun,
) -> None:
    eager = eager_potential(run)
    starts = _points(CALM, WILD)
    many = ManyPotential(eager, eager.log_density, starts)
    assert many.compiled
    points = _points([c - 0.02 for c in CALM], [w + 0.01 for w in WILD])
    values, grads = many(points)
    for row in range(2):
        u, g = eager(points[row])
        assert math.isfinite(u) and values[row] == pytest.approx(u, rel=1e-9)
        torch.testing.assert_close(grads[row], g, rtol=1e-7, atol=1e-9)


def _points(*rows: list[float]) -> torch.Tensor:
    return torch.tensor(rows, dtype=torch.float64)


@pytest.mark.usefixtures("torch_solver")
def test_without_a_compiler_each_row_is_the_eager_potential(run: PreparedRun) -> None:
    eager = eager_potential(run)
    starts = _points(CALM, [c + 0.01 for c in CALM])
    many = ManyPotential(eager, eager.log_density, starts)
    assert not many.compiled  # the torch solver cannot be batched: chain by chain
    points = _points([c - 0.02 for c in CALM], WILD)
    values, grads = many(points)
    for row in range(2):
        u, g = eager(points[row])
        assert math.isfinite(u) and values[row] == u
        torch.testing.assert_close(grads[row], g, rtol=0.0, atol=0.0)
