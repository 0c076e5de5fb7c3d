"""Posterior predictive checks and LOO-PIT: a wrong model (one Normal for bimodal data) is
flagged, the right one (the two-component mixture) is not, and LOO ranks them."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest

from qvr_core.posterior.comparison import compare_files
from qvr_core.posterior.predictive_checks import (
    PredictiveCheckError,
    check_predictive,
    uniformity,
)
from tests.runs.cli import qvr_here

with warnings.catch_warnings():
    warnings.simplefilter("ignore", FutureWarning)
    import arviz as az


def test_one_normal_for_bimodal_data_is_flagged_by_its_shape_and_its_loo_pit(
    mixture_runs: dict[str, Path],
) -> None:
    check = check_predictive(az.from_netcdf(mixture_runs["one_normal"]), name="one_normal")
    y = check.site("y")
    stats = {s.name: s for s in y.statistics}
    # a Normal reproduces the mean and sd it was fitted to ...
    assert 0.05 <= stats["mean"].p_value <= 0.95 and 0.05 <= stats["sd"].p_value <= 0.95
    # ... but not the two modes: the data's kurtosis is far below any Normal sample's
    assert stats["kurtosis"].observed < -1.0 and stats["kurtosis"].p_value > 0.95
    assert y.loo_pit is not None and y.loo_pit.outside_band
    codes = [w.code for w in check.warnings]
    assert "loo_pit" in codes and "ppc_statistic" in codes
    (kurtosis,) = [w for w in check.warnings if "kurtosis" in w.message]
    assert "does not reproduce the data's kurtosis of y" in kurtosis.message
    assert "mixture" in kurtosis.remedy
    print(
        "one Normal: p-values "
        + ", ".join(f"{s.name} {s.p_value:.3f}" for s in y.statistics)
        + f"; LOO-PIT KS {y.loo_pit.ks_distance:.3f} ({y.loo_pit.shape})"
    )


def test_the_mixture_is_not_flagged(mixture_runs: dict[str, Path]) -> None:
    check = check_predictive(az.from_netcdf(mixture_runs["mixture"]), name="mixture")
    y = check.site("y")
    assert check.warnings == ()
    assert all(not s.flagged for s in y.statistics)
    assert y.loo_pit is not None and not y.loo_pit.outside_band and y.loo_pit.shape == "uniform"
    assert len(y.loo_pit.values) == 100  # the marginalised mixture: a term per point
    print(
        "mixture: p-values "
        + ", ".join(f"{s.name} {s.p_value:.3f}" for s in y.statistics)
        + f"; LOO-PIT KS {y.loo_pit.ks_distance:.3f}"
    )


def test_loo_prefers_the_mixture_by_more_than_its_standard_error(
    mixture_runs: dict[str, Path],
) -> None:
    c = compare_files([mixture_runs["mixture"], mixture_runs["one_normal"]])
    best, other = c.rows
    assert best.name == "mixture" and other.d_elpd > 4 * other.dse
    print(f"d_elpd {other.d_elpd:.2f} (dse {other.dse:.2f})")


def test_qvr_compare_checks_prints_them(mixture_runs: dict[str, Path]) -> None:
    files = [str(mixture_runs["mixture"]), str(mixture_runs["one_normal"])]
    done = qvr_here("compare", *files, "--checks", "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert set(out["checks"]) == {"mixture", "one_normal"}
    assert out["checks"]["mixture"]["warnings"] == []
    assert {w["code"] for w in out["checks"]["one_normal"]["warnings"]} >= {"loo_pit"}
    done = qvr_here("compare", *files, "--checks")
    assert done.returncode == 0, done.stderr
    assert (
        "predictive checks of one_normal" in done.stdout and "LOO-PIT: KS distance" in done.stdout
    )


# kernel_free: no sampler and no torch: built numbers from fixed NumPy generators, which
# torch's kernels (what the AVX2 pass changes) never touch
@pytest.mark.kernel_free
def test_checks_need_predictive_draws(tmp_path: Path) -> None:
    idata = az.from_dict(
        posterior={"mu": np.zeros((1, 10))},
        log_likelihood={"y": np.zeros((1, 10, 3))},
        observed_data={"y": np.zeros(3)},
    )
    with pytest.raises(PredictiveCheckError, match="--predictive"):
        check_predictive(idata)
    path = tmp_path / "no_predictive.nc"
    idata.to_netcdf(str(path))
    done = qvr_here("compare", str(path), "--checks")
    assert done.returncode == 2 and "--predictive" in done.stderr and str(path) in done.stderr


# kernel_free: no sampler and no torch: built numbers from fixed NumPy generators, which
# torch's kernels (what the AVX2 pass changes) never touch
@pytest.mark.kernel_free
def test_a_discrete_site_is_checked_by_its_zeros_with_mid_p_values() -> None:
    """Counts with more zeros than the Poisson draws make: flagged, with its remedy."""
    rng = np.random.default_rng(0)
    y = np.concatenate([np.zeros(30), rng.poisson(3.0, 70)]).astype(np.int64)
    rep = rng.poisson(2.1, (2, 300, 100))
    idata = az.from_dict(
        posterior={"lam": np.full((2, 300), 2.1)},
        posterior_predictive={"y": rep},
        observed_data={"y": y},
    )
    check = check_predictive(idata, name="counts")
    site = check.site("y")
    assert site.discrete and site.loo_pit is None and site.note is not None
    zeros = {s.name: s for s in site.statistics}["proportion of zeros"]
    replicated = (rep == 0).mean(-1).reshape(-1)
    observed = float((y == 0).mean())
    expected = np.mean(replicated > observed) + 0.5 * np.mean(replicated == observed)
    assert zeros.observed == pytest.approx(observed)
    assert zeros.p_value == pytest.approx(expected) and zeros.flagged
    (warning,) = [w for w in check.warnings if "zeros" in w.message]
    assert "zero-inflated" in warning.remedy


# kernel_free: no sampler and no torch: built numbers from fixed NumPy generators, which
# torch's kernels (what the AVX2 pass changes) never touch
@pytest.mark.kernel_free
def test_loo_pit_shapes_are_named() -> None:
    rng = np.random.default_rng(2)
    n = 400
    assert uniformity(rng.uniform(size=n)).shape == "uniform"
    u_shaped = uniformity(rng.beta(0.3, 0.3, n))
    assert u_shaped.outside_band and u_shaped.shape == "U-shaped"
    assert uniformity(rng.beta(4.0, 4.0, n)).shape == "inverted-U"
    assert uniformity(rng.beta(3.0, 1.0, n)).shape == "skewed high"
    assert uniformity(rng.beta(1.0, 3.0, n)).shape == "skewed low"
    ks = uniformity(np.linspace(0.0, 0.5, n)).ks_distance
    assert ks == pytest.approx(0.5, abs=1e-2)


def _logistic_run(n: int = 300, chains: int = 4, draws: int = 500) -> az.InferenceData:
    """A correctly specified logistic regression of 0/1 data, y_i ~ Bernoulli(sigmoid(a +
    b x_i)), with draws of (a, b) about the truth, and the replicated data and pointwise
    log-likelihood built from them: what `qvr run --output --predictive` writes for such a
    model, without a sampler (numbers from fixed NumPy generators)."""
    rng = np.random.default_rng(3)
    x = rng.normal(size=n)
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(0.5 - 1.5 * x))).astype(np.int64)
    a = -0.5 + 0.15 * rng.normal(size=(chains, draws))
    b = 1.5 + 0.2 * rng.normal(size=(chains, draws))
    p = 1 / (1 + np.exp(-(a[..., None] + b[..., None] * x)))
    rep = (rng.uniform(size=p.shape) < p).astype(np.int64)
    ll = np.where(y == 1, np.log(p), np.log1p(-p))
    return az.from_dict(
        posterior={"a": a, "b": b},
        posterior_predictive={"y": rep},
        log_likelihood={"y": ll},
        observed_data={"y": y},
    )


# kernel_free: no sampler and no torch: built numbers from fixed NumPy generators, which
# torch's kernels (what the AVX2 pass changes) never touch
@pytest.mark.kernel_free
def test_binary_data_of_a_correct_model_have_a_uniform_randomised_loo_pit() -> None:
    """ArviZ smooths integer data into a PIT that is not uniform for 0/1 outcomes: a correct
    logistic regression was flagged "U-shaped, the model underdispersed". The randomised
    PIT is uniform, and each value lies between P(y_rep < y_i) and P(y_rep <= y_i)."""
    run = _logistic_run()
    (site,) = check_predictive(run, name="logistic").sites
    assert site.discrete and site.loo_pit is not None
    assert not site.loo_pit.outside_band and site.loo_pit.shape == "uniform", site.loo_pit
    values = np.asarray(site.loo_pit.values)
    rep = run.posterior_predictive["y"].values.reshape(-1, 300)
    y = run.observed_data["y"].values
    low = (rep < y).mean(0) - 0.05  # unweighted: PSIS weights move each by a little
    high = (rep <= y).mean(0) + 0.05
    assert np.all((values >= low) & (values <= high))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        smoothed = np.asarray(az.loo_pit(run, y="y")).reshape(-1)
    assert uniformity(smoothed).shape == "U-shaped"  # what was reported before
