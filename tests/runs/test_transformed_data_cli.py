"""`qvr check`, `qvr run` and `qvr data` on a regression written as Stan writes it: a
literal index and an observed let of the data (`let log_earn = log(earn)`), which the
data file does not hold and the run does not ask for."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.models import regressions
from tests.runs.cli import qvr_here

SOURCE = regressions.earnings(5)

DATA = {"earn": [50000, 60000, 30000, 50000, 51000], "height": [74, 66, 64, 63, 63]}


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    source = tmp_path / "earnings.qvr"
    source.write_text(SOURCE, encoding="utf-8")
    data = tmp_path / "earnings.json"
    data.write_text(json.dumps(DATA), encoding="utf-8")
    return source, data


@pytest.mark.kernel_free  # what is checked is decided before anything is drawn
def test_qvr_check_is_clean(files: tuple[Path, Path]) -> None:
    source, _ = files
    done = qvr_here("check", str(source))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "QVR" not in done.stdout + done.stderr


def test_qvr_run_reads_earn_and_computes_log_earn(files: tuple[Path, Path]) -> None:
    source, data = files
    done = qvr_here("run", str(source), "--data", str(data), "--method", "prior", "--steps", "20")
    assert done.returncode == 0, done.stderr
    assert "observe log_earn (real, 5)" in done.stdout + done.stderr


@pytest.mark.kernel_free  # refused before a run
def test_qvr_run_refuses_log_earn_in_the_data_file(files: tuple[Path, Path]) -> None:
    source, data = files
    data.write_text(json.dumps({**DATA, "log_earn": [1.0] * 5}), encoding="utf-8")
    done = qvr_here("run", str(source), "--data", str(data), "--method", "prior")
    assert done.returncode != 0
    assert "unexpected 'log_earn'" in done.stderr
    assert "it computes 'log_earn' from the data names (an observed let)" in done.stderr


def test_qvr_data_writes_the_data_names_only(files: tuple[Path, Path], tmp_path: Path) -> None:
    source, _ = files
    out = tmp_path / "made.json"
    done = qvr_here("data", str(source), "-o", str(out))
    assert done.returncode == 0, done.stderr
    made = json.loads(out.read_text(encoding="utf-8"))
    assert sorted(made) == ["earn", "height"]
    assert len(made["earn"]) == 5 and min(made["earn"]) > 0  # log reads positive numbers
    run = qvr_here("run", str(source), "--data", str(out), "--method", "prior", "--steps", "5")
    assert run.returncode == 0, run.stderr
