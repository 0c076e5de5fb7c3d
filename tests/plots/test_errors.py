"""What stops `qvr plot` is one line on stderr and exit status 2, never a traceback."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from qvr_cli.main import main
from qvr_core.posterior import figures
from tests.plots.conftest import SavedRun, read


def fails(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    """`qvr plot ARGS`: checks it exits 2 with one line and no output; returns the line."""
    status = main(["plot", *args])
    out, err = capsys.readouterr()
    assert status == 2
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("qvr plot: ")
    return lines[0]


def without(run: SavedRun, group: str, folder: Path) -> Path:
    """The run's file less one group (what a run without that option writes)."""
    import arviz as az

    idata = read(run.path)
    kept = {g: idata[g] for g in idata.groups() if g != group}
    path = folder / f"without_{group}.nc"
    az.InferenceData(**kept).to_netcdf(path)
    return path


def test_a_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    line = fails(capsys, str(tmp_path / "nothing.nc"))
    assert "cannot read" in line and "no such file" in line


def test_a_file_that_is_not_netcdf(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bogus = tmp_path / "run.nc"
    bogus.write_text("posterior: not really\n", encoding="utf-8")
    assert "not a netCDF file of InferenceData" in fails(capsys, str(bogus))


def test_an_npz_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    arrays = tmp_path / "run.npz"
    np.savez(arrays, **{"posterior/mu": np.zeros((1, 4))})
    assert "pip install 'qvr[plot]'" in fails(capsys, str(arrays))


def test_ppc_without_posterior_predictive(
    nuts_run: SavedRun, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = without(nuts_run, "posterior_predictive", tmp_path)
    line = fails(capsys, str(path), "--kind", "ppc")
    assert line.endswith("rerun with qvr run --predictive")


def test_loo_pit_without_log_likelihood(
    nuts_run: SavedRun, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = without(nuts_run, "log_likelihood", tmp_path)
    assert "no log_likelihood group" in fails(capsys, str(path), "--kind", "loo-pit")


def test_energy_of_an_svi_run(svi_run: SavedRun, capsys: pytest.CaptureFixture[str]) -> None:
    line = fails(capsys, str(svi_run.path), "--kind", "energy")
    assert line.endswith("an SVI run has no energy: plot a NUTS run")


def test_rank_of_one_chain(svi_run: SavedRun, capsys: pytest.CaptureFixture[str]) -> None:
    assert "--chains 2 or more" in fails(capsys, str(svi_run.path), "--kind", "rank")


def test_a_prior_run_has_no_posterior(
    prior_run: SavedRun, capsys: pytest.CaptureFixture[str]
) -> None:
    for kind in ("trace", "ppc", "energy"):
        line = fails(capsys, str(prior_run.path), "--kind", kind)
        assert "a prior run" in line and "plot a" in line and "NUTS run" in line, line


def test_an_unknown_variable_lists_the_known_ones(
    nuts_run: SavedRun, capsys: pytest.CaptureFixture[str]
) -> None:
    line = fails(capsys, str(nuts_run.path), "--var", "mu", "thetta")
    assert line.endswith("unknown variable 'thetta' in posterior; known: mu, tau, theta")


def test_ppc_names_observed_sites(nuts_run: SavedRun, capsys: pytest.CaptureFixture[str]) -> None:
    line = fails(capsys, str(nuts_run.path), "--kind", "ppc", "--var", "theta")
    assert line.endswith("unknown variable 'theta' in posterior_predictive; known: y")


def test_unknown_coords(nuts_run: SavedRun, capsys: pytest.CaptureFixture[str]) -> None:
    run = str(nuts_run.path)
    line = fails(capsys, run, "--coords", "Plate=0")
    assert line.endswith("unknown dimension 'Plate' in posterior; known: School")
    line = fails(capsys, run, "--coords", "School=8")
    assert line.endswith("School has no coordinate 8; it has 0 to 7")
    assert "write DIM=V,V" in fails(capsys, run, "--coords", "School")


def test_options_a_kind_does_not_take(
    nuts_run: SavedRun, capsys: pytest.CaptureFixture[str]
) -> None:
    run = str(nuts_run.path)
    assert "leave out --var" in fails(capsys, run, "--kind", "energy", "--var", "mu")
    assert "--combined applies to trace, forest, autocorr" in fails(
        capsys, run, "--kind", "rank", "--combined"
    )
    assert "leave out --coords" in fails(capsys, run, "--kind", "loo-pit", "--coords", "School=1")


@pytest.mark.parametrize("name", ["run.jpg", "run"])
def test_an_unsupported_suffix(
    name: str, nuts_run: SavedRun, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    line = fails(capsys, str(nuts_run.path), "-o", str(tmp_path / name))
    assert line.endswith("use .svg, .png or .pdf")
    assert not (tmp_path / name).exists()


def test_an_unwritable_output(
    nuts_run: SavedRun, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    line = fails(capsys, str(nuts_run.path), "-o", str(tmp_path / "no" / "such" / "f.svg"))
    assert line.startswith("qvr plot: cannot write")


def test_too_many_panels_asks_for_a_selection(
    nuts_run: SavedRun,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(figures, "MAX_PANELS", 20)
    run = str(nuts_run.path)
    line = fails(capsys, run, "--kind", "pair")
    assert "a pair plot of 10 scalars is 45 panels (at most 20)" in line
    assert "pick sites with --var or plate elements with --coords" in line
    picked = ["--var", "theta", "--coords", "School=0,1,2,3,4,5"]  # 15 panels
    assert main(["plot", run, "--kind", "pair", *picked, "-o", str(tmp_path / "p.svg")]) == 0


def test_without_the_plot_extra(
    nuts_run: SavedRun, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "arviz", None)  # `import arviz` raises ImportError
    assert fails(capsys, str(nuts_run.path)).endswith("pip install 'qvr[plot]'")


def test_an_unknown_kind(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["plot", "run.nc", "--kind", "histogram"])
    assert stop.value.code == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and "invalid choice: 'histogram'" in lines[0]
