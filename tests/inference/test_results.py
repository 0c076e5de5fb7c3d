"""`qvr run --output`: ArviZ InferenceData that az.summary reads as qvr printed it; .npz
without ArviZ; posterior and prior predictive groups; `fit` in Python."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest

from qvr_core.inference import results as results_module
from qvr_core.inference.results import RunResults
from qvr_core.runs import fit
from tests.eight_schools import SOURCE as EIGHT_SCHOOLS
from tests.runs.cli import qvr_here

from .qvr_sources import REGRESSION

with warnings.catch_warnings():
    warnings.simplefilter("ignore", FutureWarning)
    az = pytest.importorskip("arviz")

pytestmark = pytest.mark.timeout(300)


def qvr_run(*argv: str) -> dict:
    """`qvr run ... --json` through the command line's own entry (`qvr_here`): the file it
    writes is what these tests are about, and a process of its own would only add seconds
    of importing torch and ArviZ; its summary."""
    done = qvr_here("run", *argv, "--json")
    assert done.returncode == 0, done.stderr
    assert "wrote InferenceData (netCDF)" in done.stderr
    return json.loads(done.stdout)


def assert_az_summary_is(printed: dict, idata) -> None:  # type: ignore[no-untyped-def]
    """az.summary of the file gives every number of the printed table (to 1e-6)."""
    table = az.summary(idata, round_to="none")
    for row in printed["rows"]:
        expected = table.loc[row["label"]]
        for key in ("mean", "sd", "ess_bulk", "ess_tail", "r_hat"):
            assert row[key] == pytest.approx(expected[key], rel=1e-6), (row["label"], key)


def test_the_file_qvr_run_writes_gives_az_summary_the_printed_numbers(tmp_path: Path) -> None:
    source = tmp_path / "regression.qvr"
    source.write_text(REGRESSION)
    out = tmp_path / "run.nc"
    summary = qvr_run(
        str(source),
        *("--method", "nuts", "--steps", "40", "--chains", "2", "--batch", "8"),
        *("--max-tree-depth", "4", "--output", str(out), "--predictive"),
    )
    printed = summary["posterior"]
    idata = az.from_netcdf(out)
    assert {"posterior", "sample_stats", "observed_data", "posterior_predictive"} <= set(
        idata.groups()
    )
    assert_az_summary_is(printed, idata)
    assert idata.posterior.sizes["chain"] == 2 and idata.posterior.sizes["draw"] == 20
    assert idata.posterior_predictive["y"].shape == (2, 20, 8, 1)
    assert idata.observed_data["y"].shape == (8, 1)
    assert int(idata.sample_stats["diverging"].sum()) == summary["divergences"]
    assert az.bfmi(idata) == pytest.approx(printed["e_bfmi"], rel=1e-9)


def test_eight_schools_in_four_chains_gives_az_summary_the_printed_numbers(tmp_path: Path) -> None:
    source = tmp_path / "schools.qvr"
    source.write_text(EIGHT_SCHOOLS)
    data = tmp_path / "schools.json"
    data.write_text(
        json.dumps({"y": [28, 8, -3, 7, -1, 1, 18, 12], "sigma": [15, 10, 16, 11, 9, 11, 10, 18]})
    )
    out = tmp_path / "schools.nc"
    summary = qvr_run(
        str(source),
        *("--method", "nuts", "--steps", "200", "--data", str(data)),
        *("--output", str(out), "--predictive"),
    )
    assert summary["chains"] == 4
    idata = az.from_netcdf(out)
    assert idata.posterior.sizes["chain"] == 4 and idata.posterior.sizes["draw"] == 100
    assert idata.posterior["theta_raw"].shape == (4, 100, 8)
    assert idata.observed_data["y"].shape == (8,) and idata.constant_data["sigma"].shape == (8,)
    assert idata.posterior_predictive["y"].shape == (4, 100, 8)
    assert_az_summary_is(summary["posterior"], idata)


def test_without_arviz_the_draws_go_to_an_npz(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(results_module, "have_arviz", lambda: False)
    results = RunResults()
    results.add("posterior", {"mu": np.arange(6.0).reshape(2, 3)})
    results.add("observed_data", {"y": np.ones(4)})
    written = results.write(tmp_path / "run.nc")
    assert written == tmp_path / "run.npz"
    with np.load(written) as arrays:
        assert sorted(arrays.files) == ["observed_data/y", "posterior/mu"]
        assert arrays["posterior/mu"].tolist() == [[0, 1, 2], [3, 4, 5]]


def test_fit_returns_the_summary_and_the_inference_data() -> None:
    result = fit(REGRESSION, method="prior", steps=5, batch=3)
    idata = result.inference_data()
    assert {"prior_predictive", "observed_data", "constant_data"} <= set(idata.groups())
    assert idata.prior_predictive["y"].shape == (1, 5, 3, 1)
    assert result.summary["method"] == "prior" and result.summary["steps"] == 5


def test_the_vanilla_rnn_lm_in_four_chains_gives_arviz_s_numbers() -> None:
    source = (Path(__file__).resolve().parents[2] / "examples" / "vanilla_rnn_lm.qvr").read_text()
    result = fit(source, method="nuts", steps=8, batch=2, seq_len=3, max_tree_depth=2)
    printed = result.summary["posterior"]
    assert result.summary["chains"] == 4 and printed["chains"] == 4 and printed["draws"] == 4
    posterior = result.inference_data().posterior
    # ArviZ on just the elements the table shows (its summary of every weight takes minutes).
    shown = {
        row["label"]: posterior[row["site"]].values[(..., *row["index"])] for row in printed["rows"]
    }
    assert len(shown) == len(printed["rows"]) > 12 and all(
        v.shape == (4, 4) for v in shown.values()
    )
    assert_az_summary_is(printed, az.from_dict(posterior=shown))
