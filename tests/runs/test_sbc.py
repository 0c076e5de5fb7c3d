"""Simulation-based calibration (`qvr sbc`): the ranks, the verdicts, the file, resuming.

The verdicts are checked on crafted ranks (each shape of miscalibration), and end to
end on fits that surely miss: SVI stopped after one step, whose guide has not moved
from its start, cannot cover parameters drawn from the priors; and a deliberately wrong
model, whose fit has a `score` term its simulations never see. The calibrated verdict of
NUTS on eight schools is asserted in a band of 99.9%: at 95% a right sampler leaves it
for one of the ten elements in about two runs of five, whatever the seed; at 99.9% in
under one run of a hundred."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from qvr_cli.main import main
from qvr_core.posterior.calibration import (
    CALIBRATED,
    OVERESTIMATES,
    TOO_NARROW,
    TOO_WIDE,
    UNDERESTIMATES,
    judge,
)
from qvr_core.runs.sbc import rank
from tests.conftest import EXAMPLES
from tests.runs.cli import qvr_here

pytest.importorskip("arviz")

SCHOOLS = EXAMPLES / "models" / "eight_schools_noncentered.qvr"
SCHOOLS_DATA = EXAMPLES / "models" / "eight_schools.json"
L, N = 99, 200


@pytest.mark.parametrize(
    "ranks, verdict",
    [
        (np.arange(N) % (L + 1), CALIBRATED),  # every rank as often
        (np.where(np.arange(N) % 2, 0, L), TOO_NARROW),  # the truth outside the draws
        (np.full(N, L // 2), TOO_WIDE),  # the truth always mid-posterior
        (np.zeros(N, dtype=int), OVERESTIMATES),  # every draw above the truth
        (np.full(N, L), UNDERESTIMATES),  # every draw below it
        (np.minimum(np.arange(N) % (L + 1) + 30, L), UNDERESTIMATES),  # shifted
    ],
)
def test_each_shape_of_the_ranks_gets_its_verdict(ranks: np.ndarray, verdict: str) -> None:
    element = judge("mu", [], "mu", ranks, L)
    assert element.verdict == verdict
    assert (element.outside > 0) == (verdict != CALIBRATED)


def test_a_small_band_is_computed_by_numpy_and_is_arviz_s_numba_band(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """ArviZ's numba kernels compile at their first call, about 3 s a process, so a band of
    an SBC run's size is computed by its numpy ones, a larger one by numba: the same band
    either way, and ArviZ's switch left as it was."""
    pytest.importorskip("numba")
    from qvr_core.draws import arviz_adapter

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import arviz
        import arviz.stats.ecdf_utils as ecdf_utils

    original = ecdf_utils.ecdf_confidence_band
    switched: list[bool] = []

    def spy(*args: Any, **kwargs: Any) -> Any:
        switched.append(arviz.Numba.numba_flag)
        return original(*args, **kwargs)

    monkeypatch.setattr(ecdf_utils, "ecdf_confidence_band", spy)
    points = np.arange(21) / 21
    assert arviz.Numba.numba_flag
    by_numpy = arviz_adapter.ecdf_band(60, points, points, prob=0.99, method="optimized")
    monkeypatch.setattr(arviz_adapter, "NUMPY_BAND_WORK", 0)
    by_numba = arviz_adapter.ecdf_band(60, points, points, prob=0.99, method="optimized")
    assert switched == [False, True] and arviz.Numba.numba_flag
    for ours, theirs in zip(by_numpy, by_numba, strict=True):
        np.testing.assert_array_equal(ours, theirs)


def test_a_true_value_is_ranked_among_evenly_thinned_draws() -> None:
    draws = np.arange(40, dtype=float).reshape(2, 20)  # (chain, draw): 0..39
    assert rank(draws, np.array(-1.0), 10) == 0
    assert rank(draws, np.array(100.0), 10) == 10
    assert rank(draws, np.array(19.5), 10) == 5  # draws 0, 4, 9, ..., 39 thinned to 10
    elementwise = rank(np.stack([draws, -draws], axis=-1), np.array([19.5, -19.5]), 10)
    assert elementwise.tolist() == [5, 5]
    assert rank(draws[:, :2], np.array(10.5), 8) == 4  # fewer draws than asked: repeated


# ------------------------------------------------------------------ the command


def read_ranks(path: Path) -> Any:
    """The `sbc_ranks` group of a `qvr sbc --output` file."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import arviz as az

        return az.from_netcdf(path)["sbc_ranks"]


def sbc(*args: str) -> tuple[int, str, str]:
    """`qvr sbc` of eight schools, one simulation at a time unless `--jobs` says."""
    jobs = () if "--jobs" in args else ("--jobs", "1")
    done = qvr_here("sbc", str(SCHOOLS), "--data", str(SCHOOLS_DATA), *jobs, *args)
    return done.returncode, done.stdout, done.stderr


def test_fits_that_cannot_cover_the_truth_are_found_miscalibrated(tmp_path: Path) -> None:
    out = tmp_path / "sbc.nc"
    code, stdout, stderr = sbc(
        "--method", "svi", "--steps", "1", "--sims", "12", "--draws", "20", "-o", str(out), "--json"
    )
    assert code == 0, stderr
    assert "simulation 12/12" in stderr
    found = json.loads(stdout)
    verdicts = {e["label"]: e["verdict"] for e in found["elements"]}
    assert verdicts["mu"] != CALIBRATED and verdicts["tau"] != CALIBRATED
    assert all(e["simulations"] == 12 for e in found["elements"])
    ranks = read_ranks(out)
    assert ranks["mu"].shape == (12,) and ranks["theta_raw"].shape == (12, 8)
    assert int(ranks["mu"].max()) <= 20 and int(ranks["mu"].min()) >= 0
    assert ranks.attrs["status"] == "complete" and int(ranks.attrs["done"]) == 12
    figure = tmp_path / "sbc.svg"
    done = qvr_here("plot", str(out), "--kind", "sbc", "--var", "mu", "tau", "-o", str(figure))
    assert done.returncode == 0, done.stderr
    svg = figure.read_text()
    assert "mu: " in svg and "tau: " in svg  # a panel each, titled with its verdict
    done = qvr_here("plot", str(out), "--kind", "trace")
    assert done.returncode == 2 and "posterior" in done.stderr


def test_nuts_on_eight_schools_gives_uniform_ranks(tmp_path: Path) -> None:
    """The non-centred eight schools, whose NUTS fits are right: every element's ranks
    inside the band. 60 simulations of 2 chains x (150 + 150) iterations, each true value
    ranked among 20 draws: half a second a simulation here."""
    out = tmp_path / "sbc.nc"
    settings = ("--method", "nuts", "--steps", "300", "--sims", "60", "--draws", "20")
    code, stdout, stderr = sbc(*settings, "--prob", "0.999", "-o", str(out), "--json")
    assert code == 0, stderr
    found = json.loads(stdout)
    assert found["prob"] == 0.999 and found["failed"] == [] and found["simulations"] == 60
    labels = [e["label"] for e in found["elements"]]
    assert labels == ["mu", "tau", *(f"theta_raw[{i}]" for i in range(8))]
    assert all(e["verdict"] == CALIBRATED and e["outside"] == 0 for e in found["elements"]), found
    assert found["remedies"] == {}
    ranks = read_ranks(out)
    assert float(ranks.attrs["prob"]) == 0.999  # `qvr plot --kind sbc` draws this band
    # the ranks spread over their whole range: a verdict judged on a few values would not
    for name in ("mu", "tau"):
        assert len(np.unique(ranks[name].values)) >= 12


#: A deliberately wrong model: the fit's density has a `score` term that pulls mu to 0
#: with a standard deviation of 0.01, which the simulations (forward draws: mu from its
#: Normal(0, 1) prior) never see. Nearly every true mu lies outside its fit's draws, on
#: either side: about half the ranks 0 and half the top rank, for any seed.
WRONG = """\
object Row : FinSet 3

program wrong : Row -> Row
    sample mu <- Normal(0.0, 1.0)
    score pull = -5000.0 * mu * mu
    observe y : Row <- Normal(mu, 1.0)
    return mu

export wrong
"""


def test_a_model_that_fits_what_it_does_not_simulate_is_flagged(tmp_path: Path) -> None:
    source = tmp_path / "wrong.qvr"
    source.write_text(WRONG, encoding="utf-8")
    settings = ("--method", "svi", "--steps", "300", "--sims", "40", "--draws", "20")
    done = qvr_here("sbc", str(source), "--jobs", "1", *settings, "--json")
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    (mu,) = found["elements"]
    assert mu["label"] == "mu" and mu["simulations"] == 40
    assert mu["verdict"] == TOO_NARROW and mu["outside"] > 0.2
    assert "`score` term" in found["remedies"][TOO_NARROW]


def test_a_resumed_run_goes_on_where_the_stopped_one_ended(tmp_path: Path) -> None:
    settings = ("--method", "svi", "--steps", "20", "--draws", "10", "--seed", "4")
    whole, parts = tmp_path / "whole.nc", tmp_path / "parts.nc"
    assert sbc(*settings, "--sims", "5", "-o", str(whole))[0] == 0
    assert sbc(*settings, "--sims", "3", "-o", str(parts))[0] == 0
    code, _, stderr = sbc(*settings, "--sims", "5", "-o", str(parts), "--resume")
    assert code == 0, stderr
    assert "simulation 3/5" not in stderr and "simulation 4/5" in stderr  # only the rest
    a, b = read_ranks(whole), read_ranks(parts)
    for name in a.data_vars:  # the same simulations under the same seeds
        np.testing.assert_array_equal(a[name].values, b[name].values)
    code, _, stderr = sbc("--method", "nuts", "--sims", "6", "-o", str(parts), "--resume")
    assert code == 2 and "resume with the same settings" in stderr


def test_simulations_in_processes_rank_as_one_after_another(tmp_path: Path) -> None:
    settings = ("--method", "svi", "--steps", "20", "--draws", "10", "--sims", "4")
    alone, together = tmp_path / "alone.nc", tmp_path / "together.nc"
    assert sbc(*settings, "-o", str(alone))[0] == 0
    code, _, stderr = sbc(*settings, "-o", str(together), "--jobs", "2")
    assert code == 0, stderr
    a, b = read_ranks(alone), read_ranks(together)
    assert set(a.data_vars) == set(b.data_vars) == {"mu", "tau", "theta_raw"}
    for name in a.data_vars:  # each simulation under its own seed, wherever it ran
        np.testing.assert_array_equal(a[name].values, b[name].values)


def test_what_cannot_be_calibrated_is_refused_in_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    done = qvr_here("sbc", str(EXAMPLES / "rlstm_lm.qvr"), "--sims", "2")
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1 and "program of networks" in done.stderr
    with pytest.raises(SystemExit) as stop:
        main(["sbc", str(SCHOOLS), "--sims", "0"])
    assert stop.value.code == 2 and "not in 1..100,000" in capsys.readouterr().err
    for prob in ("1", "0", "1.5", "high"):
        with pytest.raises(SystemExit) as stop:
            main(["sbc", str(SCHOOLS), "--prob", prob])
        assert stop.value.code == 2 and "--prob" in capsys.readouterr().err
    done = qvr_here("sbc", str(SCHOOLS), "--resume")
    assert done.returncode == 2 and "give --output" in done.stderr
