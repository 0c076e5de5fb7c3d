"""PSIS-LOO and WAIC of the files `qvr run --output` writes: ArviZ reads their
`log_likelihood` group, and `qvr compare` prints the numbers ArviZ gives on them."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest

from qvr_core.posterior.comparison import (
    ComparisonError,
    RunFileError,
    compare_files,
    compare_runs,
    criterion_of,
    loo_of,
    read_run,
    run_names,
)
from qvr_core.runs import fit
from tests.runs.cli import qvr, qvr_here

from .conftest import MODELS

with warnings.catch_warnings():
    warnings.simplefilter("ignore", FutureWarning)
    import arviz as az

REGRESSION = MODELS / "linear_regression.qvr"
REGRESSION_DATA = MODELS / "linear_regression.json"


def compare_json(*argv: str) -> dict:  # type: ignore[type-arg]
    """`qvr compare ARGV --json` in this process (its numbers are what is compared here;
    the command in a process of its own, as a user runs it, is the other tests')."""
    done = qvr_here("compare", *argv, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def quiet_az(fn, *args, **kwargs):  # type: ignore[no-untyped-def]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


@pytest.fixture(scope="module")
def regression(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Linear regression fitted by `qvr run --output` itself: the command line's own entry
    (`qvr_here`), since the file it writes is what these tests read; a `qvr run` process
    of its own cost seconds of importing torch first, and the command as a process is
    tests/runs' subject. 100 draws a chain: the tests compare numbers read two ways from
    this one file, and its shapes."""
    out = tmp_path_factory.mktemp("regression") / "linear_regression.nc"
    done = qvr_here(
        "run",
        str(REGRESSION),
        *("--method", "nuts", "--steps", "200", "--chains", "4", "--seed", "2"),
        *("--data", str(REGRESSION_DATA), "--output", str(out), "--predictive"),
    )
    assert done.returncode == 0, done.stderr
    assert out.is_file()
    return out


def test_the_files_have_a_pointwise_log_likelihood_that_az_loo_reads(
    runs: dict[str, Path], regression: Path
) -> None:
    for path, points in [*((p, 8) for p in runs.values()), (regression, 50)]:
        idata = az.from_netcdf(path)
        assert {"posterior", "log_likelihood", "posterior_predictive", "observed_data"} <= set(
            idata.groups()
        )
        ll = idata.log_likelihood["y"]
        assert ll.shape == (4, 100, points)  # (chain, draw, observation): not summed
        assert idata.log_likelihood.attrs["log_likelihood"] == "pointwise"
        assert idata.posterior_predictive["y"].shape == (4, 100, points)
        loo = quiet_az(az.loo, idata)
        assert loo["n_data_points"] == points and np.isfinite(loo["elpd_loo"])
    assert quiet_az(az.compare, {n: az.from_netcdf(p) for n, p in runs.items()}).shape[0] == 2


def test_qvr_compare_prints_what_az_compare_gives_on_the_same_files(runs: dict[str, Path]) -> None:
    files = [str(p) for p in runs.values()]
    printed = compare_json(*files)
    table = quiet_az(az.compare, {Path(f).stem: az.from_netcdf(f) for f in files})
    assert printed["ic"] == "loo" and printed["scale"] == "log"
    assert [r["name"] for r in printed["rows"]] == list(table.index)
    for row in printed["rows"]:
        expected = table.loc[row["name"]]
        assert row["rank"] == int(expected["rank"])
        assert row["warning"] == bool(expected["warning"])
        for ours, theirs in [
            ("elpd", "elpd_loo"),
            ("se", "se"),
            ("p", "p_loo"),
            ("d_elpd", "elpd_diff"),
            ("dse", "dse"),
            ("weight", "weight"),
        ]:
            assert row[ours] == pytest.approx(float(expected[theirs]), rel=1e-6, abs=1e-9)


def test_one_run_is_one_row_of_az_loo_s_numbers_and_waic_of_az_waic_s(regression: Path) -> None:
    idata = az.from_netcdf(regression)
    loo = quiet_az(az.loo, idata)
    (row,) = compare_json(str(regression))["rows"]
    assert row["name"] == "linear_regression" and row["rank"] == 0 and row["weight"] == 1.0
    assert row["elpd"] == pytest.approx(float(loo["elpd_loo"]), rel=1e-6)
    assert row["se"] == pytest.approx(float(loo["se"]), rel=1e-6)
    assert row["p"] == pytest.approx(float(loo["p_loo"]), rel=1e-6)
    waic = quiet_az(az.waic, idata)
    (row,) = compare_json(str(regression), "--ic", "waic")["rows"]
    assert row["elpd"] == pytest.approx(float(waic["elpd_waic"]), rel=1e-6)
    assert row["p"] == pytest.approx(float(waic["p_waic"]), rel=1e-6)
    ours = loo_of(idata)
    assert ours.n_data_points == 50 and len(ours.pareto_k) == 50
    assert ours.k_counts["good"] + ours.bad == 50
    assert ours.good_k == pytest.approx(float(loo["good_k"]))


def shifted_copy(run: Path, shift: np.ndarray, to: Path) -> Path:
    """`run` written again with each observation's log-likelihood moved by `shift`."""
    idata = az.from_netcdf(run)
    idata.log_likelihood["y"] = idata.log_likelihood["y"] + shift
    idata.to_netcdf(str(to))
    return to


@pytest.mark.parametrize(
    ("shift", "indistinct"),
    [
        ((0.5, -0.5, 0.4, -0.3, 0.2, -0.1, 0.3, -0.2), True),  # sum 0.3, dse 0.98
        ((1.1, 0.9, 1.0, 1.2, 0.8, 1.0, 1.05, 0.95), False),  # sum 8.0, dse 0.34
    ],
)
def test_log_likelihoods_shifted_by_known_amounts_differ_by_exactly_those_amounts(
    runs: dict[str, Path], tmp_path: Path, shift: tuple[float, ...], indistinct: bool
) -> None:
    """A run and a copy whose log-likelihood of each school is moved by a known amount,
    the same for every draw: PSIS-LOO's weights depend only on how an observation's draws
    differ from each other, so each pointwise elpd moves by exactly its shift, and
    `d_elpd`, `dse` and the "indistinct" note are known without sampling, whatever the
    draws and the CPU. (Comparing the centred model with the non-centred is not such a
    case: the centred funnel is sampled with a bias that moves its elpd by 2-3 dse on
    some seeds.)"""
    base = runs["eight_schools_noncentered"]
    delta = np.asarray(shift)
    c = compare_files([base, shifted_copy(base, delta, tmp_path / "moved.nc")])
    best, other = c.rows
    assert (best.name, other.name) == ("moved", "eight_schools_noncentered")
    assert best.elpd - other.elpd == pytest.approx(delta.sum(), abs=1e-9)
    assert other.d_elpd == pytest.approx(delta.sum(), abs=1e-9)
    assert other.dse == pytest.approx(np.sqrt(len(delta) * np.var(delta)), rel=1e-9)
    assert any(w.code == "indistinct" for w in c.warnings) == indistinct


def test_the_human_table_has_az_compare_s_columns_and_the_warnings(
    runs: dict[str, Path], tmp_path: Path
) -> None:
    """Two runs the data cannot tell apart by construction (one a copy moved by small
    shifts that sum to 0.3 within a dse of 0.98): the table and its "indistinct" note."""
    base = runs["eight_schools_noncentered"]
    moved = shifted_copy(
        base, np.array([0.5, -0.5, 0.4, -0.3, 0.2, -0.1, 0.3, -0.2]), tmp_path / "moved.nc"
    )
    done = qvr_here("compare", str(base), str(moved))
    assert done.returncode == 0, done.stderr
    header = done.stdout.splitlines()[1].split()
    assert header == ["rank", "elpd", "se", "p", "d_elpd", "dse", "weight", "warning"]
    assert "eight_schools_noncentered" in done.stdout and "moved" in done.stdout
    assert "within two standard errors" in done.stdout and "remedy:" in done.stdout


def test_an_npz_gives_the_same_numbers_as_the_netcdf(tmp_path: Path) -> None:
    result = fit(
        REGRESSION.read_text(), method="svi", steps=150, lr=0.05, data=REGRESSION_DATA, seed=1
    )
    nc, npz = result.results.write(tmp_path / "r.nc"), result.results.write(tmp_path / "r.npz")
    with np.load(npz) as arrays:
        assert arrays["log_likelihood/y"].shape == (1, 200, 50)  # SVI: one chain of the guide
    a, b = compare_files([nc]), compare_files([npz])
    assert a.rows[0].elpd == pytest.approx(b.rows[0].elpd, rel=1e-12)
    assert any(w.code == "svi_draws" for w in a.warnings)  # a guide's draws, said so


def test_a_file_without_a_log_likelihood_or_unreadable_is_one_line_and_status_2(
    tmp_path: Path, runs: dict[str, Path]
) -> None:
    prior = fit(REGRESSION.read_text(), method="prior", steps=5, data=REGRESSION_DATA)
    written = prior.results.write(tmp_path / "prior.nc")
    done = qvr("compare", str(written))
    assert done.returncode == 2 and done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert str(written) in line and "no log_likelihood group" in line
    assert "rerun with qvr run --output" in line
    garbage = tmp_path / "garbage.nc"
    garbage.write_text("not a netCDF file")
    done = qvr_here("compare", str(garbage), str(runs["eight_schools_centered"]))
    assert done.returncode == 2 and str(garbage) in done.stderr
    assert len(done.stderr.splitlines()) == 1
    done = qvr_here("compare", str(runs["eight_schools_centered"]), "--var", "nope")
    assert done.returncode == 2 and "'nope'" in done.stderr and "y" in done.stderr
    with pytest.raises(RunFileError, match="no such file"):
        read_run(tmp_path / "missing.nc")


def test_runs_of_different_data_sizes_are_refused(runs: dict[str, Path], regression: Path) -> None:
    with pytest.raises(ComparisonError, match="different numbers"):
        compare_files([runs["eight_schools_centered"], regression])
    done = qvr_here("compare", str(runs["eight_schools_centered"]), str(regression))
    assert done.returncode == 1 and "different numbers" in done.stderr


def test_several_sites_are_summed_per_row_or_picked_by_var() -> None:
    """Two sites of one shape: one term per row, their sum, which az.loo is given as is."""
    rng = np.random.default_rng(0)
    a, b = rng.normal(-1.0, 0.3, (2, 100, 6)), rng.normal(-2.0, 0.3, (2, 100, 6))
    posterior = {"mu": rng.normal(size=(2, 100))}
    idata = az.from_dict(posterior=posterior, log_likelihood={"a": a, "b": b})
    together = criterion_of(idata)
    alone = quiet_az(az.loo, az.from_dict(posterior=posterior, log_likelihood={"a+b": a + b}))
    assert together.var_name == "a+b" and together.n_data_points == 6
    assert together.elpd == pytest.approx(float(alone["elpd_loo"]), rel=1e-12)
    assert together.note is not None and "summed" in together.note
    only_a = loo_of(idata, var_name="a")
    assert only_a.elpd == pytest.approx(float(quiet_az(az.loo, idata, var_name="a")["elpd_loo"]))
    uneven = az.from_dict(posterior=posterior, log_likelihood={"a": a, "c": b[..., :4]})
    assert criterion_of(uneven).n_data_points == 10  # concatenated: each a term
    assert "a+c: sites a, c concatenated" in compare_runs({"a+c": uneven}).notes[0]


def test_high_pareto_k_is_a_warning_naming_the_observations_with_a_remedy() -> None:
    """An observation far out under every draw but a few: PSIS cannot reweight for it."""
    rng = np.random.default_rng(1)
    ll = rng.normal(-1.0, 0.1, (2, 200, 20))
    ll[..., 7] = rng.standard_cauchy((2, 200)) * 40 - 50  # wildly varying: a heavy tail
    idata = az.from_dict(posterior={"mu": rng.normal(size=(2, 200))}, log_likelihood={"y": ll})
    result = loo_of(idata, name="heavy")
    assert result.bad >= 1 and result.pareto_k[7] > result.good_k  # type: ignore[operator]
    (warning,) = [w for w in result.warnings if w.code == "pareto_k"]
    assert "PSIS-LOO is unreliable for" in warning.message and "7 (k = " in warning.message
    assert "K-fold" in warning.remedy and "reloo" in warning.remedy
    comparison = compare_runs({"heavy": idata})
    assert comparison.rows[0].warning and comparison.rows[0].pareto_k_bad == result.bad
    assert not any(w.code == "arviz" for w in comparison.warnings)  # ArviZ's: translated


def test_names_are_stems_made_distinct_by_their_folders() -> None:
    assert run_names(["a/run.nc", "b/run.nc", "c/other.nc"]) == ["a/run", "b/run", "c/other"]
    assert run_names(["x/m.nc", "x/m.nc"]) == ["m", "m#2"]
    assert run_names(["one.nc", "two.npz"]) == ["one", "two"]
