"""NUTS with a dense mass matrix (Stan's `dense_e`): the covariance estimate, the exact
moments of a strongly correlated Gaussian, and what the adapted metric buys there."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from qvr_core.inference.adapt import WelfordCovariance
from qvr_core.inference.convergence import ess_bulk
from qvr_core.inference.lockstep import run_together
from qvr_core.inference.nuts import NUTSKernel, Requests, _Point, answer
from qvr_core.plan.run_arguments import RunArgumentError, validate_run_arguments

#: Scales 1 and 10, correlation 0.99: a diagonal metric can rescale but not rotate it.
COVARIANCE = torch.tensor([[1.0, 9.9], [9.9, 100.0]], dtype=torch.float64)
PRECISION = torch.linalg.inv(COVARIANCE)


def gaussian(z: torch.Tensor) -> tuple[float, torch.Tensor]:
    """U(z) = z' P z / 2 and its gradient P z, in closed form."""
    grad = PRECISION @ z
    return 0.5 * float(z @ grad), grad


def _each_row(zs: torch.Tensor) -> tuple[list[float], torch.Tensor]:
    """`gaussian` of each row: a batch potential, as `lockstep.run_together` asks."""
    answers = [gaussian(z) for z in zs]
    return [u for u, _ in answers], torch.stack([g for _, g in answers])


def draws(dense: bool, seed: int, warmup: int = 1000, n: int = 1000) -> tuple[np.ndarray, float]:
    chain = NUTSKernel(dense_mass=dense).chain(
        gaussian, torch.zeros(2, dtype=torch.float64), warmup, torch.Generator().manual_seed(seed)
    )
    kept = []
    for i in range(warmup + n):
        t = chain.step()
        if i >= warmup:
            kept.append(t.z.clone())
    return torch.stack(kept).numpy(), chain.step_size


def test_the_running_covariance_is_numpys_shrunk_as_stan_shrinks_it() -> None:
    rows = np.random.default_rng(0).normal(size=(40, 3)) @ np.array(
        [[1.0, 0.5, 0.0], [0.0, 2.0, 0.3], [0.0, 0.0, 0.5]]
    )
    w = WelfordCovariance(3)
    for row in rows:
        w.add(torch.from_numpy(row))
    n = len(rows)
    expected = (n / (n + 5.0)) * np.cov(rows.T) + 1e-3 * (5.0 / (n + 5.0)) * np.eye(3)
    np.testing.assert_allclose(w.regularised_covariance().numpy(), expected, rtol=1e-12)


@pytest.mark.parametrize("seed", [1, 2])
def test_dense_nuts_finds_the_exact_moments_of_a_correlated_gaussian(seed: int) -> None:
    z, _ = draws(True, seed)
    ess = ess_bulk(z[None])
    # the mean within 4 Monte Carlo standard errors, the covariance within 15%
    se = np.sqrt(np.diag(COVARIANCE.numpy()) / ess)
    assert np.all(np.abs(z.mean(0)) < 4 * se), (z.mean(0), se)
    np.testing.assert_allclose(np.cov(z.T), COVARIANCE.numpy(), rtol=0.15, atol=0.15)
    correlation = np.corrcoef(z.T)[0, 1]
    assert correlation == pytest.approx(0.99, abs=0.01)


def test_the_dense_metric_takes_longer_steps_and_mixes_better_than_the_diagonal() -> None:
    dense, dense_step = draws(True, 3)
    diagonal, diagonal_step = draws(False, 3)
    assert dense_step > 4 * diagonal_step  # the rotated posterior is round for it
    assert ess_bulk(dense[None]).min() > 1.5 * ess_bulk(diagonal[None]).min()


def test_a_short_warmup_keeps_the_unit_metric() -> None:
    chain = NUTSKernel(dense_mass=True).chain(gaussian, torch.zeros(2, dtype=torch.float64), 50)
    for _ in range(60):
        chain.step()
    torch.testing.assert_close(chain.inv_mass, torch.eye(2, dtype=torch.float64))


def test_the_run_argument_names_the_metrics() -> None:
    assert validate_run_arguments({"mass_matrix": "dense"}).mass_matrix == "dense"
    assert validate_run_arguments({}).mass_matrix == "auto"
    with pytest.raises(RunArgumentError, match="mass_matrix must be one of diag, dense, fisher"):
        validate_run_arguments({"mass_matrix": "full"})


@pytest.mark.kernel_free
@pytest.mark.parametrize("driver", ["answer", "run_together"])
def test_a_momentum_that_overflows_is_an_infinite_energy_without_a_warning(driver: str) -> None:
    """bench/posteriordb.py once printed numpy's `overflow encountered in dot` from a
    trajectory that ran off: the energy is infinite (a divergence), and nothing is printed
    while either driver of a chain's requests (one chain, or chains in lockstep) runs it."""
    import warnings

    chain = NUTSKernel(dense_mass=True).chain(gaussian, torch.zeros(2, dtype=torch.float64), 10)
    huge = np.full(2, 1e200)

    def requests() -> Requests[_Point]:
        u, g = yield np.zeros(2)
        return chain._point(np.zeros(2), huge, u, g)

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        if driver == "answer":
            point = answer(requests(), gaussian)
        else:
            (point,) = run_together([requests()], _each_row)
    assert point.kinetic == float("inf")
