"""`run_inference` and `qvr run` on model programs: data by name, methods, clear errors."""

from __future__ import annotations

import argparse
import json

import numpy as np
import pytest

from qvr_core.cli import run as cli_run
from qvr_core.host.datafile import DataFile
from qvr_core.inference.errors import InferenceError
from qvr_core.runs.run import run_inference
from tests.eight_schools import SOURCE

SCHOOLS = SOURCE
DATA = {"y": [28, 8, -3, 7, -1, 1, 18, 12], "sigma": [15, 10, 16, 11, 9, 11, 10, 18]}
NO_DATA_NAMES = """
object Day : FinSet 12

program counts : Day -> Day
    sample rate <- Gamma(3.0, 0.5)
    observe k : Day <- Poisson(rate)
    return rate

export counts
"""


def json_file(tmp_path, data=DATA):  # type: ignore[no-untyped-def]
    path = tmp_path / "schools.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_nuts_with_a_json_data_file_summarises_the_posterior(tmp_path) -> None:
    summary = run_inference(
        SCHOOLS, method="nuts", steps=120, seed=1, data=json_file(tmp_path), max_tree_depth=6
    )
    assert summary["program"] == "eight_schools" and summary["num_samples"] == 60
    post = summary["posterior"]
    assert post["chains"] == 4 and post["draws"] == 60
    assert post["sites"]["theta_raw"]["shape"] == [8] and post["sites"]["tau"]["shape"] == []
    rows = {row["label"]: row for row in post["rows"]}
    assert rows["tau"]["mean"] > 0 and rows["tau"]["q5"] > 0 and "theta_raw[7]" in rows
    assert summary["divergences"] >= 0 and set(summary["r_hat"]) == {"mu", "tau", "theta_raw"}


def test_svi_and_npz_bytes_as_the_server_hands_them_over(tmp_path) -> None:
    path = tmp_path / "schools.npz"
    np.savez(path, **{k: np.array(v, dtype=np.float64) for k, v in DATA.items()})
    data = DataFile("schools.npz", path.read_bytes())
    summary = run_inference(SCHOOLS, method="svi", steps=50, lr=0.05, data=data)
    assert summary["steps"] == 50 and summary["final_loss"] is not None
    assert set(summary["posterior"]["sites"]) == {"mu", "tau", "theta_raw"}
    assert "r_hat" not in summary["posterior"]["rows"][0]  # independent draws of the guide


def test_missing_and_unexpected_data_are_named_with_their_lines(tmp_path) -> None:
    with pytest.raises(InferenceError, match=r"missing 'sigma' \(line 9\)"):
        run_inference(SCHOOLS, method="nuts", data=json_file(tmp_path, {"y": DATA["y"]}))
    misspelt = {"y": DATA["y"], "sigmaa": DATA["sigma"]}  # the key it may be is named
    with pytest.raises(InferenceError, match=r"missing 'sigma' \(line 9\); unexpected 'sigmaa'"):
        run_inference(SCHOOLS, method="nuts", data=json_file(tmp_path, misspelt))
    short = {**DATA, "sigma": DATA["sigma"][:7]}
    with pytest.raises(InferenceError, match=r"'sigma' has shape \(7,\).*its scale"):
        run_inference(SCHOOLS, method="svi", data=json_file(tmp_path, short))


def test_keys_the_program_does_not_read_are_ignored_as_cmdstan_ignores_them(tmp_path) -> None:
    """posteriordb's data.json holds the sizes (`J`) that QVR's objects carry, and one file
    may serve nested models; the run is the one without the extra keys."""
    plain = run_inference(SCHOOLS, method="svi", steps=5, seed=3, data=json_file(tmp_path, DATA))
    extra = {**DATA, "J": 8, "z": [[1.5, 2.0]]}
    (tmp_path / "extra").mkdir()
    more = run_inference(
        SCHOOLS, method="svi", steps=5, seed=3, data=json_file(tmp_path / "extra", extra)
    )
    assert more["losses"] == plain["losses"]


def test_a_model_with_data_names_needs_a_data_file() -> None:
    with pytest.raises(InferenceError, match="reads the data names sigma: give a data file"):
        run_inference(SCHOOLS, method="svi", steps=5)


def test_without_data_a_model_is_fitted_to_its_own_prior_draw() -> None:
    summary = run_inference(NO_DATA_NAMES, method="svi", steps=30, lr=0.05, seed=3)
    rate = summary["posterior"]["rows"][0]
    assert summary["data"] == "synthetic" and rate["label"] == "rate" and rate["mean"] > 0


def test_prior_draws_every_site(tmp_path) -> None:
    summary = run_inference(SCHOOLS, method="prior", steps=40, data=json_file(tmp_path))
    sites = summary["sites"]
    assert set(sites) == {"mu", "tau", "theta_raw", "y"}
    assert sites["tau"]["support"] == "positive" and sites["tau"]["min"] > 0
    assert sites["y"]["kind"] == "observe" and sites["y"]["shape"] == [8]


def test_a_bad_json_file_is_one_clear_error(tmp_path) -> None:
    path = tmp_path / "bad.json"
    path.write_text('{"y": [1, [2, 3]], "sigma": 1}', encoding="utf-8")
    with pytest.raises(InferenceError, match="'y' must be a number or a rectangular list"):
        run_inference(SCHOOLS, method="nuts", data=path)


def test_qvr_run_prints_posterior_means(tmp_path, capsys) -> None:
    source = tmp_path / "schools.qvr"
    source.write_text(SCHOOLS, encoding="utf-8")
    parser = argparse.ArgumentParser(prog="qvr run")
    cli_run.add_arguments(parser)
    argv = [str(source), "--method", "svi", "--steps", "40", "--lr", "0.05"]
    status = cli_run.main(parser.parse_args([*argv, "--data", str(json_file(tmp_path))]))
    out, _ = capsys.readouterr()
    assert status == 0
    assert "posterior from 200 draws of the guide:" in out and "theta_raw[7]" in out
