"""NUTS on a regression written as Stan writes it: `log_earn ~ Normal(beta[0] + beta[1] *
h, sigma)`, with `log_earn = log(earn)` computed from the data and `h` the heights
centred. With `sigma` known (data) and normal priors, the posterior of `beta` is the
conjugate normal one, in closed form; the fit's means must be within Monte Carlo error
of it (5 MCSE, ArviZ's), its sds within a fifth. Nothing rests on what a seed draws.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from qvr_core.runs.fit import fit

SOURCE = """\
object Coef : FinSet 2
object Row : FinSet 40

program earnings : Row -> Row
    sample beta : Coef <- Normal(0.0, 10.0)
    let log_earn = log(earn)
    let h = height - height.mean()
    let mu = beta[0] + beta[1] * h
    observe log_earn : Row <- Normal(mu, sigma)
    return mu

export earnings
"""

SIGMA = 0.8
PRIOR_SD = 10.0


def _data() -> dict[str, object]:
    rng = np.random.default_rng(49)  # the data set only: the test holds for any draw of it
    height = rng.normal(66.0, 4.0, 40).round(1)
    log_earn = 9.5 + 0.06 * (height - height.mean()) + rng.normal(0.0, SIGMA, 40)
    return {"earn": np.exp(log_earn).round(2).tolist(), "height": height.tolist(), "sigma": SIGMA}


def _exact(data: dict[str, object]) -> tuple[np.ndarray, np.ndarray]:
    """The conjugate posterior of beta: mean and sd."""
    height = np.asarray(data["height"])
    y = np.log(np.asarray(data["earn"]))
    x = np.stack([np.ones_like(height), height - height.mean()], axis=1)
    precision = x.T @ x / SIGMA**2 + np.eye(2) / PRIOR_SD**2
    cov = np.linalg.inv(precision)
    return cov @ x.T @ y / SIGMA**2, np.sqrt(np.diag(cov))


@pytest.mark.timeout(600)
def test_nuts_finds_the_conjugate_posterior_of_a_transformed_data_regression(
    tmp_path: Path,
) -> None:
    import arviz as az

    data = _data()
    path = tmp_path / "earnings.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    run = fit(SOURCE, method="nuts", steps=1200, chains=2, seed=3, data=str(path), predictive=True)
    idata = run.inference_data()
    draws = np.asarray(idata.posterior["beta"])  # (chain, draw, Coef)
    assert draws.shape[2] == 2
    mean, sd = _exact(data)
    mcse = np.asarray(az.mcse(az.convert_to_dataset({"beta": draws}))["beta"])
    got = draws.mean(axis=(0, 1))
    assert np.all(np.abs(got - mean) <= 5 * mcse), (got, mean, mcse)
    spread = draws.std(axis=(0, 1))
    assert np.all(np.abs(spread - sd) <= 0.2 * sd), (spread, sd)
    # the data file holds earn, height and sigma; log_earn is computed, then observed
    observed = np.asarray(idata.observed_data["log_earn"])
    np.testing.assert_allclose(observed, np.log(np.asarray(data["earn"])))
    replicates = np.asarray(idata.posterior_predictive["log_earn"])
    assert replicates.shape == (*draws.shape[:2], 40) and np.isfinite(replicates).all()
    assert "log_earn" in idata.log_likelihood
