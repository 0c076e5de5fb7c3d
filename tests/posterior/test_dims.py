"""Saved draws name their axes by the program's plates (`theta` over `School`), in every
group, and a variable whose arrays do not fit its names keeps ArviZ's default ones."""

from __future__ import annotations

import numpy as np
import pytest

from qvr_core.inference.results import RunResults
from qvr_core.runs import fit
from tests.conftest import EXAMPLES

MODELS = EXAMPLES / "models"

pytestmark = pytest.mark.timeout(240)


def test_a_model_programs_sites_are_named_by_their_plates() -> None:
    source = (MODELS / "eight_schools_centered.qvr").read_text()
    data = str(MODELS / "eight_schools.json")
    run = fit(source, method="nuts", steps=40, chains=2, data=data, predictive=True)
    idata = run.inference_data()
    assert idata.posterior["theta"].dims == ("chain", "draw", "School")
    assert idata.posterior["mu"].dims == ("chain", "draw")
    for group in ("log_likelihood", "posterior_predictive"):
        assert idata[group]["y"].dims == ("chain", "draw", "School")
    assert idata.observed_data["y"].dims == ("School",)
    assert list(idata.posterior["theta"].sel(School=[0, 3]).shape) == [2, 20, 2]


def test_names_that_do_not_fit_the_arrays_are_left_out() -> None:
    results = RunResults()
    results.add("posterior", {"a": np.zeros((1, 5, 3)), "b": np.zeros((1, 5, 3))})
    results.add("observed_data", {"b": np.zeros((3, 2))})  # one axis more than named
    results.dims.update({"a": ("School",), "b": ("School",)})
    idata = results.inference_data()
    assert idata.posterior["a"].dims == ("chain", "draw", "School")
    assert idata.posterior["b"].dims == ("chain", "draw", "b_dim_0")
