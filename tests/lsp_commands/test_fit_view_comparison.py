"""The run view's model comparison (`qvr_lsp.runs.kept_runs`, the worker's `comparison_of`):
runs kept in the server's private directory, at most 8, the same program replacing its
file, compared only on the same observed data, with ArviZ's numbers; and the worker's
refusal of a `keep_dir` it cannot use."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from qvr_core.inference.results import RunResults
from qvr_lsp.runs import kept_runs
from qvr_lsp.runs.kept_runs import (
    ALONE_NOTE,
    MAX_KEPT,
    check_keep_dir,
    comparable_runs,
    comparison_view,
    keep_run,
    kept_files,
    run_key,
)
from qvr_lsp.runs.worker import comparison_of

with warnings.catch_warnings():
    warnings.simplefilter("ignore", FutureWarning)
    import arviz as az

MODELS = Path(__file__).resolve().parents[2] / "examples" / "models"
ROOT = Path(__file__).resolve().parents[2]


def _fit(name: str, program: str, seed: int) -> RunResults:
    from qvr_core.runs.run import run_program

    results = RunResults()
    run_program(
        (MODELS / f"{name}.qvr").read_text(encoding="utf-8"),
        path=f"{name}.qvr",
        program=program,
        method="nuts",
        steps=200,
        chains=2,
        seed=seed,
        data=str(MODELS / "eight_schools.json"),
        results=results,
    )
    return results


@pytest.fixture(scope="module")
def centred() -> RunResults:
    return _fit("eight_schools_centered", "eight_schools_centered", 1)


@pytest.fixture(scope="module")
def noncentred() -> RunResults:
    return _fit("eight_schools_noncentered", "eight_schools", 2)


def other_data(results: RunResults) -> RunResults:
    """The same run with one observation changed: a run on other data."""
    changed = copy.deepcopy(results)
    y = changed.groups["observed_data"]["y"]
    y[0] = y[0] + 1.0
    return changed


def request_of(name: str, program: str) -> dict[str, Any]:
    return {"method": "nuts", "path": f"/some/where/{name}.qvr", "program": program}


def test_the_key_is_the_file_name_and_the_program_safe_for_a_file_name() -> None:
    assert (
        run_key("/w/eight_schools_centered.qvr", "eight_schools")
        == "eight_schools_centered.eight_schools"
    )
    assert run_key(None, "m") == "untitled.m"
    assert run_key("/w/../a b/x;y.qvr", "p/../q") == "x_y.p_q"


def test_the_runs_compared_and_their_numbers_are_arviz_compare_on_the_kept_files(
    centred: RunResults, noncentred: RunResults, tmp_path: Path
) -> None:
    first = comparison_of(
        noncentred, request_of("eight_schools_noncentered", "eight_schools"), tmp_path
    )
    assert first == {"comparison_note": ALONE_NOTE}, "one run: nothing to compare yet"
    found = comparison_of(
        centred, request_of("eight_schools_centered", "eight_schools_centered"), tmp_path
    )
    json.dumps(found, allow_nan=False)
    comparison = found["comparison"]
    assert comparison["current"] == "eight_schools_centered.eight_schools_centered"
    assert comparison["ic"] == "loo" and comparison["scale"] == "log"
    names = {r["name"] for r in comparison["rows"]}
    assert names == {
        "eight_schools_centered.eight_schools_centered",
        "eight_schools_noncentered.eight_schools",
    }
    files = sorted(tmp_path.glob("*.nc"))
    assert [p.name for p in files] == [f"{n}.nc" for n in sorted(names)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        read = {p.name.removesuffix(".nc"): az.from_netcdf(p) for p in files}  # type: ignore[no-untyped-call]  # ArviZ's
        table = az.compare(read)
    assert [r["name"] for r in comparison["rows"]] == [str(n) for n in table.index]
    for row in comparison["rows"]:
        expected = table.loc[row["name"]]
        assert row["rank"] == int(expected["rank"])
        for ours, theirs in [
            ("elpd", "elpd_loo"),
            ("se", "se"),
            ("p", "p_loo"),
            ("d_elpd", "elpd_diff"),
            ("dse", "dse"),
            ("weight", "weight"),
        ]:
            assert row[ours] == pytest.approx(float(expected[theirs]), abs=1e-9, rel=0), ours
        assert row["warning"] == bool(expected["warning"])
    for warning in comparison["warnings"]:
        assert set(warning) == {"code", "message", "remedy"} and warning["remedy"]


def test_only_runs_on_the_same_observed_data_are_compared(
    centred: RunResults, noncentred: RunResults, tmp_path: Path
) -> None:
    keep_run(other_data(noncentred), tmp_path, "elsewhere.eight_schools")
    keep_run(noncentred, tmp_path, "noncentred.eight_schools")
    keep_run(centred, tmp_path, "centred.eight_schools_centered")
    runs = comparable_runs(tmp_path, "centred.eight_schools_centered")
    assert list(runs) == ["centred.eight_schools_centered", "noncentred.eight_schools"]
    alone = comparable_runs(tmp_path, "elsewhere.eight_schools")
    assert list(alone) == ["elsewhere.eight_schools"]
    view = comparison_view(other_data(centred), tmp_path, "elsewhere2.eight_schools_centered")
    rows = view["comparison"]["rows"]
    assert {r["name"] for r in rows} == {
        "elsewhere2.eight_schools_centered",
        "elsewhere.eight_schools",
    }, "the other data's run is compared with the other data's run only"


def test_at_most_eight_runs_are_kept_the_oldest_go_and_a_rerun_replaces_its_file(
    centred: RunResults, tmp_path: Path
) -> None:
    for i in range(MAX_KEPT):
        path = keep_run(centred, tmp_path, f"run{i}.p")
        os.utime(path, (1_000_000 + i, 1_000_000 + i))  # run0 the oldest
    assert len(kept_files(tmp_path)) == MAX_KEPT
    keep_run(centred, tmp_path, "run3.p")  # the same program again: its file replaced
    assert len(kept_files(tmp_path)) == MAX_KEPT
    assert kept_files(tmp_path)[0].name == "run3.p.nc", "the rerun is the newest"
    keep_run(centred, tmp_path, "new.p")
    names = {p.name for p in kept_files(tmp_path)}
    assert len(names) == MAX_KEPT and "run0.p.nc" not in names and "new.p.nc" in names
    assert "run3.p.nc" in names
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")], "no temporary left"


def test_a_large_run_a_stopped_run_and_a_run_of_another_method_are_not_kept(
    centred: RunResults, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(kept_runs, "MAX_POINTS", 100)
    note = comparison_of(centred, request_of("a", "b"), tmp_path)["comparison_note"]
    assert "at most 100" in note and "qvr compare" in note
    monkeypatch.undo()
    stopped = copy.deepcopy(centred)
    stopped.attrs["status"] = "partial"
    assert "stopped" in comparison_of(stopped, request_of("a", "b"), tmp_path)["comparison_note"]
    assert comparison_of(centred, {**request_of("a", "b"), "method": "prior"}, tmp_path) == {}
    without = copy.deepcopy(centred)
    del without.groups["log_likelihood"]
    assert (
        "log-likelihood"
        in comparison_of(without, request_of("a", "b"), tmp_path)["comparison_note"]
    )
    assert list(tmp_path.iterdir()) == []


def test_without_arviz_the_view_says_why_there_is_no_comparison(
    centred: RunResults, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("qvr_core.inference.results.have_arviz", lambda: False)
    note = comparison_of(centred, request_of("a", "b"), tmp_path)["comparison_note"]
    assert "ArviZ" in note and "arviz" in note
    assert list(tmp_path.iterdir()) == []


def test_a_keep_dir_that_is_not_a_writable_directory_is_refused(tmp_path: Path) -> None:
    assert check_keep_dir(str(tmp_path)) == tmp_path
    a_file = tmp_path / "f"
    a_file.write_text("")
    for bad, why in [
        (str(tmp_path / "missing"), "not an existing directory"),
        (str(a_file), "not an existing directory"),
        ("relative/dir", "absolute"),
        ("", "directory's path"),
        (3, "directory's path"),
    ]:
        with pytest.raises(ValueError, match=why):
            check_keep_dir(bad)
    if os.geteuid() != 0:  # root writes anywhere
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        with pytest.raises(ValueError, match="not writable"):
            check_keep_dir(str(locked))


def test_the_worker_refuses_a_request_with_a_bad_keep_dir(tmp_path: Path) -> None:
    request = {
        "source": "",
        "method": "nuts",
        "steps": 2,
        "keep_dir": str(tmp_path / "missing"),
    }
    done = subprocess.run(
        [sys.executable, "-m", "qvr_lsp.runs.worker"],
        input=json.dumps(request) + "\n",
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    (event,) = [json.loads(line) for line in done.stdout.splitlines()]
    assert event["event"] == "error"
    assert event["message"].startswith("bad request: keep_dir")
    assert "not an existing directory" in event["message"]


def test_observed_data_are_equal_only_with_the_same_variables_shapes_and_values() -> None:
    same = kept_runs._same_data
    a = {"y": np.array([1.0, np.nan])}
    assert same(a, {"y": np.array([1.0, np.nan])})
    assert not same(a, {"y": np.array([1.0, 2.0])})
    assert not same(a, {"y": np.array([[1.0, np.nan]])})
    assert not same(a, {"z": np.array([1.0, np.nan])})
    assert not same(a, None)
