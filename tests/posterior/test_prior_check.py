"""A prior run given a data file keeps that data as observed data, so its prior
predictive draws can be checked against it; without a file there is nothing to keep."""

from __future__ import annotations

import pytest

from qvr_core.posterior.predictive_checks import check_predictive
from qvr_core.runs import fit
from tests.conftest import EXAMPLES

MODELS = EXAMPLES / "models"

pytestmark = pytest.mark.timeout(240)


def test_a_prior_run_with_data_is_checked_against_it() -> None:
    source = (MODELS / "eight_schools_centered.qvr").read_text()
    run = fit(source, method="prior", steps=200, data=str(MODELS / "eight_schools.json"))
    idata = run.inference_data()
    assert idata.observed_data["y"].dims == ("School",)
    assert idata.prior_predictive["y"].shape == (1, 200, 8)
    check = check_predictive(idata, group="prior_predictive")
    site = check.site("y")
    assert site.site == "y" and check.group == "prior_predictive"


def test_a_prior_run_without_data_keeps_no_observed_data() -> None:
    run = fit((MODELS / "gaussian_mixture.qvr").read_text(), method="prior", steps=20)
    assert not run.results.groups.get("observed_data")
