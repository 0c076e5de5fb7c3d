"""Power-scaling sensitivity (`qvr sensitivity`, `qvr_core.posterior.sensitivity`) and
the `log_prior` group it reads.

The group is checked against the priors' densities at the run's own draws (exact, one
file read two ways). The diagnoses are checked on conjugate Normal posteriors drawn
exactly (no sampler), built so that each case is far from the threshold: a prior that
conflicts with 50 observations, a vague prior, and a narrow prior with one uninformative
observation."""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from torch.distributions import HalfCauchy, Normal

from qvr_core.inference.results import RunResults
from qvr_core.posterior.comparison import read_run
from qvr_core.posterior.run_files import RunFileError
from qvr_core.posterior.sensitivity import CONFLICT, STRONG_PRIOR, diagnose, sensitivity
from qvr_core.runs import fit
from tests.runs.cli import qvr_here

from .conftest import MODELS, SCHOOLS_DATA

with warnings.catch_warnings():
    warnings.simplefilter("ignore", FutureWarning)
    import arviz as az


# ------------------------------------------------------------------ the log_prior group


def test_the_log_prior_group_is_each_latent_sites_prior_density_at_each_draw(
    runs: dict[str, Path],
) -> None:
    idata = read_run(runs["eight_schools_noncentered"])
    assert set(idata.log_prior.data_vars) == {"mu", "tau", "theta_raw"}
    assert idata.log_prior.attrs["log_prior"] == "per site"
    assert idata.log_prior.attrs["log_prior_top_level"] == "mu tau theta_raw"
    post = {k: torch.as_tensor(idata.posterior[k].values) for k in ("mu", "tau", "theta_raw")}
    expected = {
        "mu": Normal(0.0, 5.0).log_prob(post["mu"]),
        "tau": HalfCauchy(5.0).log_prob(post["tau"]),
        "theta_raw": Normal(0.0, 1.0).log_prob(post["theta_raw"]).sum(-1),
    }
    for site, value in expected.items():
        got = torch.as_tensor(idata.log_prior[site].values)
        assert got.shape == value.shape  # (chain, draw): one term per site and draw
        torch.testing.assert_close(got, value.to(got.dtype), rtol=1e-6, atol=1e-6)


def test_an_svi_run_keeps_the_log_prior_of_its_guides_draws(tmp_path: Path) -> None:
    source = (MODELS / "eight_schools_noncentered.qvr").read_text()
    result = fit(source, method="svi", steps=20, seed=1, data=SCHOOLS_DATA)
    idata = read_run(result.results.write(tmp_path / "svi.nc"))
    mu = torch.as_tensor(idata.posterior["mu"].values)
    torch.testing.assert_close(
        torch.as_tensor(idata.log_prior["mu"].values), Normal(0.0, 5.0).log_prob(mu)
    )


# ------------------------------------------------------------------ the diagnoses


def conjugate_run(
    folder: Path, name: str, prior_loc: float, prior_sd: float, y: np.ndarray, sigma: float
) -> Path:
    """A run file of mu ~ Normal(prior_loc, prior_sd), y_i ~ Normal(mu, sigma), its 4 x
    1,000 draws from the exact posterior, with the log_prior and log_likelihood groups
    `qvr run --output` writes."""
    precision = 1 / prior_sd**2 + len(y) / sigma**2
    mean = (prior_loc / prior_sd**2 + y.sum() / sigma**2) / precision
    mu = np.random.default_rng(5).normal(mean, 1 / math.sqrt(precision), size=(4, 1000))
    results = RunResults()
    results.add("posterior", {"mu": mu})
    results.add(
        "log_prior",
        {
            "mu": -0.5 * ((mu - prior_loc) / prior_sd) ** 2
            - math.log(prior_sd * math.sqrt(2 * math.pi))
        },
    )
    results.add(
        "log_likelihood",
        {"y": -0.5 * ((y - mu[..., None]) / sigma) ** 2 - math.log(sigma * math.sqrt(2 * math.pi))},
    )
    return results.write(folder / f"{name}.nc")


DATA = np.random.default_rng(4).normal(0.0, 1.0, size=50)


@pytest.mark.parametrize(
    "prior_loc, prior_sd, y, sigma, expected",
    [
        (8.0, 0.5, DATA, 1.0, CONFLICT),  # a prior far from where 50 observations put mu
        (0.0, 100.0, DATA, 1.0, ""),  # a vague prior: the data decide
        (0.0, 0.1, DATA[:1], 50.0, STRONG_PRIOR),  # one observation that says little
    ],
)
def test_the_diagnosis_of_a_conjugate_posterior(
    tmp_path: Path,
    prior_loc: float,
    prior_sd: float,
    y: np.ndarray,
    sigma: float,
    expected: str,
) -> None:
    path = conjugate_run(tmp_path, "conjugate", prior_loc, prior_sd, y, sigma)
    (row,) = sensitivity(read_run(path), str(path)).rows
    assert (row.label, row.diagnosis) == ("mu", expected)
    assert row.diagnosis == diagnose(row.prior, row.likelihood)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = az.from_netcdf(path)
        found = az.psens(idata, component="prior", var_names=["mu"])
        direct = float(found["mu"] if hasattr(found, "data_vars") else found)
    assert row.prior == pytest.approx(direct, rel=1e-12)  # ArviZ's number, read back


def test_priorsenses_rules_at_the_threshold() -> None:
    assert diagnose(0.05, 0.05) == CONFLICT
    assert diagnose(0.2, 0.01) == STRONG_PRIOR
    assert diagnose(0.05, 0.01) == ""  # the strong-prior rule is strict, as priorsense's
    assert diagnose(0.01, 0.9) == ""


# ------------------------------------------------------------------ the command


def test_the_command_prints_a_row_per_element_and_the_remedies(tmp_path: Path) -> None:
    path = conjugate_run(tmp_path, "conflict", 8.0, 0.5, DATA, 1.0)
    done = qvr_here("sensitivity", str(path))
    assert done.returncode == 0, done.stderr
    assert "prior-data conflict" in done.stdout and "remedy:" in done.stdout
    as_json = json.loads(qvr_here("sensitivity", str(path), "--json").stdout)
    assert [r["diagnosis"] for r in as_json["rows"]] == [CONFLICT]
    assert set(as_json["remedies"]) == {CONFLICT}


def test_the_top_level_priors_are_scaled_unless_asked_otherwise(runs: dict[str, Path]) -> None:
    """The centred model's theta ~ Normal(mu, tau) is its hierarchy, not a prior to scale."""
    idata = read_run(runs["eight_schools_centered"])
    assert idata.log_prior.attrs["log_prior_top_level"] == "mu tau"
    assert set(idata.log_prior.data_vars) == {"mu", "tau", "theta"}
    top = sensitivity(idata, "centred.nc")
    every = sensitivity(idata, "centred.nc", "all")
    named = sensitivity(idata, "centred.nc", ["tau"])
    assert (top.priors, top.note) == (["mu", "tau"], "")
    assert every.priors == ["mu", "tau", "theta"] and "hierarchy" in every.note
    assert named.priors == ["tau"]
    assert [r.likelihood for r in top.rows] == [r.likelihood for r in every.rows]
    assert [r.prior for r in top.rows] != [r.prior for r in every.rows]
    with pytest.raises(RunFileError, match="no prior term of sigma"):
        sensitivity(idata, "centred.nc", ["sigma"])


def test_a_run_without_a_log_prior_group_is_refused_in_one_line(tmp_path: Path) -> None:
    results = RunResults()
    results.add("posterior", {"mu": np.zeros((2, 10))})
    results.add("log_likelihood", {"y": np.zeros((2, 10, 3))})
    path = results.write(tmp_path / "old.nc")
    done = qvr_here("sensitivity", str(path))
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1
    assert "no log_prior group" in done.stderr and "rerun with qvr run --output" in done.stderr
    with pytest.raises(RunFileError, match="no log_prior group"):
        sensitivity(read_run(path), "old.nc")


# ------------------------------------------------------------------ the run view


def test_the_run_views_sensitivity_is_the_commands(monkeypatch: pytest.MonkeyPatch) -> None:
    from qvr_core.posterior import view

    source = (MODELS / "eight_schools_centered.qvr").read_text()
    result = fit(source, method="nuts", steps=200, chains=2, seed=1, data=SCHOOLS_DATA)
    shown = view.fit_view(result.results)
    assert shown["sensitivity"] == sensitivity(result.results.inference_data(), "the run").to_json()
    assert shown["sensitivity"]["priors"] == ["mu", "tau"]
    monkeypatch.setattr(view, "MAX_SENSITIVITY_SCALARS", 5)  # eight schools has 10
    bounded = view.fit_view(result.results)
    assert "sensitivity" not in bounded and "qvr sensitivity" in bounded["sensitivity_note"]
    prior = fit(source, method="prior", steps=20, seed=1, data=SCHOOLS_DATA)
    assert not {"sensitivity", "sensitivity_note"} & set(view.fit_view(prior.results))
