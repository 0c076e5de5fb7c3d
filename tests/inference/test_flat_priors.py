"""Improper flat priors end to end through `qvr run`: NUTS on a flat-prior regression
finds the exact posterior, the posterior predictive draws from it, SVI fits it, and what
would draw from the prior itself (the prior predictive, synthetic data) is refused
before anything runs, naming the site.

The exact posterior (Stan's model: y_i ~ Normal(a + b x_i, sigma), flat on (a, b) and
flat on sigma > 0, so p(a, b, sigma) is 1 on sigma > 0, not 1 / sigma). With X the
n x p design (p = 2), beta_hat the least-squares estimate and S its residual sum of
squares, the posterior is

    p(beta, sigma | y) ∝ sigma^-n exp(-(S + (beta - beta_hat)' X'X (beta - beta_hat))
                                       / (2 sigma^2)).

Integrating beta out leaves sigma^-(n - p) exp(-S / (2 sigma^2)); as a density of
sigma^2 (d sigma = d sigma^2 / (2 sigma)) that is (sigma^2)^-((n - p + 1) / 2)
exp(-S / (2 sigma^2)), an inverse gamma with shape nu / 2 and scale S / 2 where
nu = n - p - 1: the scaled inverse chi-squared with nu degrees of freedom, one fewer
than under the 1 / sigma prior (nu = n - p). So

    E[sigma | y] = sqrt(S / 2) Gamma((nu - 1) / 2) / Gamma(nu / 2),
    E[sigma^2 | y] = S / (nu - 2),

and beta | y is a Student t with nu degrees of freedom centred at beta_hat, scale
matrix (S / nu) (X'X)^-1: mean beta_hat, covariance S / (nu - 2) (X'X)^-1.

Means are compared within 5 Monte Carlo standard errors (sd / sqrt(bulk ESS), the
run's own), standard deviations within 10%: nothing rests on the draws of a seed.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.models import regressions
from tests.runs.cli import qvr_here

N = 20
X_VALUES = [round(-1.9 + 0.2 * i, 3) for i in range(N)]
# a line plus fixed, uneven residuals (any data has the exact posterior below)
Y_VALUES = [round(1.0 + 2.0 * x + 0.7 * math.sin(2.3 * i + 0.4), 4) for i, x in enumerate(X_VALUES)]

REGRESSION = regressions.flat_line(N)


def least_squares() -> tuple[np.ndarray, float, np.ndarray]:
    """beta_hat, S (its residual sum of squares) and X'X."""
    x, y = np.asarray(X_VALUES), np.asarray(Y_VALUES)
    design = np.column_stack([np.ones(N), x])
    gram = design.T @ design
    beta = np.linalg.solve(gram, design.T @ y)
    return beta, float(((y - design @ beta) ** 2).sum()), gram


def exact() -> dict[str, tuple[float, float]]:
    """The exact posterior mean and standard deviation of a, b and sigma (module doc)."""
    beta, s, gram = least_squares()
    nu = N - 2 - 1
    sd_beta = np.sqrt(np.diag(s / (nu - 2) * np.linalg.inv(gram)))
    mean_sigma = math.sqrt(s / 2) * math.exp(math.lgamma((nu - 1) / 2) - math.lgamma(nu / 2))
    sd_sigma = math.sqrt(s / (nu - 2) - mean_sigma**2)
    return {
        "a": (float(beta[0]), float(sd_beta[0])),
        "b": (float(beta[1]), float(sd_beta[1])),
        "sigma": (mean_sigma, sd_sigma),
    }


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    source = tmp_path / "regression.qvr"
    source.write_text(REGRESSION, encoding="utf-8")
    data = tmp_path / "data.json"
    data.write_text(json.dumps({"x": X_VALUES, "y": Y_VALUES}), encoding="utf-8")
    return source, data


def _rows(summary: dict[str, Any]) -> dict[str, dict[str, float]]:
    return {r["label"]: r for r in summary["posterior"]["rows"]}


def test_nuts_finds_the_exact_posterior_and_its_predictive(
    files: tuple[Path, Path], tmp_path: Path
) -> None:
    source, data = files
    output = tmp_path / "run.nc"
    done = qvr_here(
        "run", str(source), "--data", str(data), "--method", "nuts", "--steps", "2000",
        "--seed", "3", "--json", "--predictive", "--output", str(output),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = _rows(json.loads(done.stdout))
    for site, (mean, sd) in exact().items():
        row = rows[site]
        assert row["r_hat"] < 1.02, row  # mixed chains (a property, not one trajectory)
        mcse = row["sd"] / math.sqrt(row["ess_bulk"])
        assert abs(row["mean"] - mean) < 5 * mcse, (site, row["mean"], mean, 5 * mcse)
        assert abs(row["sd"] - sd) < 0.1 * sd, (site, row["sd"], sd)

    # the posterior predictive draws y again under each posterior draw: centred on the fit
    import arviz as az

    idata = az.from_netcdf(output)
    replicated = np.asarray(idata.posterior_predictive["y"])  # (chain, draw, row)
    assert replicated.shape[0] == 4 and replicated.shape[2] == N
    assert np.isfinite(replicated).all()
    a, b = exact()["a"][0], exact()["b"][0]
    fitted = a + b * np.asarray(X_VALUES)
    draws = replicated.shape[0] * replicated.shape[1]
    spread = replicated.std(axis=(0, 1))
    # draws of y_rep are nearly independent; half of them as the effective size is ample
    bound = 5 * spread / math.sqrt(draws / 2)
    assert (np.abs(replicated.mean(axis=(0, 1)) - fitted) < bound).all()


def test_svi_with_a_point_guide_finds_the_mode_in_unconstrained_space(
    files: tuple[Path, Path],
) -> None:
    """No guide draws from the prior to start (each starts at its own centre). A point
    (MAP, `--guide delta`) moves log sigma, with the Jacobian sigma, as NUTS does: the
    mode of sigma^-(n - 1) exp(-S / (2 sigma^2)) is sigma^2 = S / (n - 1) (S / n without
    the Jacobian), beside the least-squares line. No draw enters: the steps are exact."""
    source, data = files
    done = qvr_here(
        "run", str(source), "--data", str(data), "--method", "svi", "--steps", "1500",
        "--lr", "0.05", "--guide", "delta", "--json",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = _rows(json.loads(done.stdout))
    beta, s, _ = least_squares()
    assert rows["a"]["q50"] == pytest.approx(beta[0], rel=1e-4)
    assert rows["b"]["q50"] == pytest.approx(beta[1], rel=1e-4)
    assert rows["sigma"]["q50"] == pytest.approx(math.sqrt(s / (N - 1)), rel=1e-4)


def test_svi_with_the_normal_guide_runs_near_the_posterior(files: tuple[Path, Path]) -> None:
    """The default guide starts at its centre too; its stochastic steps leave it near the
    exact posterior (loose bounds: its last steps are noisy)."""
    source, data = files
    done = qvr_here(
        "run", str(source), "--data", str(data), "--method", "svi", "--steps", "1500",
        "--lr", "0.05", "--json",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = _rows(json.loads(done.stdout))
    for site, (mean, sd) in exact().items():
        assert abs(rows[site]["mean"] - mean) < sd, (site, rows[site], mean)
        assert 0.6 * sd < rows[site]["sd"] < 1.4 * sd, (site, rows[site], sd)


@pytest.mark.kernel_free
def test_the_prior_predictive_is_refused_naming_the_site(files: tuple[Path, Path]) -> None:
    source, data = files
    done = qvr_here("run", str(source), "--data", str(data), "--method", "prior")
    assert done.returncode == 1
    assert "line 4, sample a <- Flat is an improper prior" in done.stderr
    assert "the prior predictive (--method prior) does not exist" in done.stderr
    assert done.stdout == ""


@pytest.mark.kernel_free
def test_synthetic_data_from_an_improper_prior_is_refused(tmp_path: Path) -> None:
    """No data file: a run would draw its observations from the prior, which has none."""
    source = tmp_path / "located.qvr"
    source.write_text(
        "object Row : FinSet 6\n\n"
        "program located : Row -> Row\n"
        "    sample m <- Normal(0.0, 1.0)\n"
        "    sample s <- HalfFlat\n"
        "    observe y : Row <- Normal(m, s)\n"
        "    return m\n\n"
        "export located\n",
        encoding="utf-8",
    )
    done = qvr_here("run", str(source), "--method", "nuts")
    assert done.returncode == 1
    assert "line 5, sample s <- HalfFlat is an improper prior" in done.stderr
    assert "give a data file (--data)" in done.stderr
    written = tmp_path / "data.json"
    done = qvr_here("data", str(source), "-o", str(written))
    assert done.returncode == 1 and not written.exists()
    assert "line 5, sample s <- HalfFlat" in done.stderr


@pytest.mark.kernel_free
def test_a_called_programs_improper_prior_is_refused_with_its_place() -> None:
    from qvr_core.check import check
    from qvr_core.plan.runnable import improper_refusal

    module = check(
        "object Group : FinSet 3\nobject Row : FinSet 3\n\n"
        "program effects(G : FinSet) : G -> G\n"
        "    sample v : G <- Flat\n"
        "    return v\n\n"
        "program outer : Row -> Row\n"
        "    sample e <- effects(Group)\n"
        "    let total = sum(e)\n"
        "    observe y : Row <- Normal(total, 1.0)\n"
        "    return total\n\n"
        "export outer\n"
    )
    assert module.ok, [(d.code, d.message) for d in module.diagnostics]
    why = improper_refusal(module, "outer", "prior")
    assert why is not None
    assert why.startswith(
        "program outer: line 5, sample v <- Flat (in program effects, which outer calls)"
    )
