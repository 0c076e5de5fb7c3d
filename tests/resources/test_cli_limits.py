"""`qvr run` against hostile sizes, arguments and data, as a user runs it: in a subprocess.

A run refused for size must never allocate it: the process runs under an
address-space limit (`ulimit -v`) far below what the program would need, so
an attempt to allocate would end in MemoryError or a torch error, not in
the one-line refusal checked here.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from tests.runs.cli import Done, qvr_runs

from .hostile import HUGE, REPEAT, SMALL, STACK

ROOT = Path(__file__).resolve().parents[2]
ADDRESS_SPACE = 2500 << 20  # torch itself maps about 1.2 GB


def qvr_run(*args: str, limit: int | None = ADDRESS_SPACE, cwd: Path | None = None):
    def preexec() -> None:
        if limit is not None:
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    return subprocess.run(
        [sys.executable, "-m", "qvr_cli", "run", *args],
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=preexec,
        env=env,
        cwd=cwd or ROOT,
    )


def one_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    return lines[0]


@pytest.mark.parametrize(
    ("source", "blamed"),
    [(HUGE, "morphism head"), (REPEAT, "repeat(step, 1000000000)"), (STACK, "stack(step, 100000)")],
    ids=["huge-dimension", "repeat", "stack"],
)
def test_a_run_refused_for_size_never_allocates_it(tmp_path: Path, source: str, blamed: str):
    path = tmp_path / "m.qvr"
    path.write_text(source)
    done = qvr_run(str(path), "--steps", "2")
    assert done.returncode == 1
    line = one_line(done.stderr)
    assert line.startswith("qvr run: error: program lm needs about ")
    assert "over the memory budget" in line and blamed in line


def test_the_budget_flag_refuses_what_would_fit(tmp_path: Path) -> None:
    path = tmp_path / "m.qvr"
    path.write_text(SMALL)
    assert qvr_run(str(path), "--steps", "2").returncode == 0
    done = qvr_run(str(path), "--steps", "2", "--batch", "4096", "--memory-budget", "1MB")
    assert done.returncode == 1 and "over the memory budget of 1.05 MB" in one_line(done.stderr)


def test_running_out_of_memory_names_what_is_big(tmp_path: Path) -> None:
    """With the budget raised past the machine, the allocation fails: the message says what
    was big, not "try a smaller batch"."""
    path = tmp_path / "m.qvr"
    path.write_text(SMALL.replace("Real 16", "Real 3000000"))
    done = qvr_run(str(path), "--steps", "2", "--memory-budget", "1000TB")
    assert done.returncode == 1
    line = one_line(done.stderr)
    assert "ran out of memory" in line and "Hidden" in line and "batch" in line


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--seed", "100000000000000000000000"], "seed must be a whole number from 0"),
        (["--seed", "-1"], "seed must be a whole number from 0"),
        (["--lr", "nan"], "lr must be a positive finite number"),
        (["--lr", "inf"], "lr must be a positive finite number"),
        (["--lr", "0"], "lr must be a positive finite number"),
        (["--steps", "0"], "steps must be a whole number from 1"),
        (["--steps", "1e9"], "steps must be a whole number"),
        (["--batch", "99999999999"], "batch must be a whole number from 1 to 65,536"),
        (["--seq-len", "-3"], "seq_len must be a whole number from 1"),
        (["--method", "hmc"], "method must be one of svi, nuts, prior"),
        (["--memory-budget", "lots"], "a memory size must be like 512MB"),
        (["--program", ""], "program must be a non-empty string"),
    ],
)
def test_bad_arguments_are_one_line_and_exit_2(tmp_path: Path, args: list[str], message: str):
    path = tmp_path / "m.qvr"
    path.write_text(SMALL)
    done = qvr_run(str(path), *args)
    assert done.returncode == 2
    assert message in one_line(done.stderr)


def _data(tmp_path: Path, name: str, arrays: dict[str, Any]) -> Path:
    path = tmp_path / name
    if name.endswith(".pt"):
        torch.save(arrays, path)
    else:
        np.savez(path, **arrays)
    return path


BAD_DATA: list[tuple[str, dict[str, Any], str]] = [
    (
        "sparse.pt",
        {"x": torch.eye(4, dtype=torch.long).to_sparse(), "next": torch.zeros(4)},
        "'x' is a sparse_coo tensor",
    ),
    (
        "complex.pt",
        {"x": torch.zeros(4, 8, dtype=torch.complex64), "next": torch.zeros(4)},
        "'x' holds complex64 values",
    ),
    (
        "nan.pt",
        {"x": torch.zeros(4, 8), "next": torch.tensor([0.0, float("nan"), 0.0, 0.0])},
        "'next' holds a value that is not finite",
    ),
    (
        "shape.pt",
        {"x": torch.zeros(4, 8, 3, dtype=torch.long), "next": torch.zeros(4)},
        "'x'",
    ),
    (
        "range.pt",
        {"x": torch.full((4, 8), 9), "next": torch.zeros(4)},
        "index 9 is out of range for Tok",
    ),
    (
        "fraction.pt",
        {"x": torch.full((4, 8), 0.5), "next": torch.zeros(4)},
        "must be whole numbers",
    ),
    (
        "objects.npz",
        {"x": np.array([object(), 1], dtype=object), "next": np.zeros(4)},
        "cannot read",
    ),
    (
        "strings.npz",
        {"x": np.array(["a", "b"]), "next": np.zeros(4)},
        "data must be numbers",
    ),
]


@pytest.fixture(scope="module")
def bad_data_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Done]:
    """`qvr run --data FILE` for every file of `BAD_DATA`, each run a process of its own,
    forked from one that imported torch once (`qvr_runs`): by the file's name."""
    tmp = tmp_path_factory.mktemp("bad_data")
    model = tmp / "m.qvr"
    model.write_text(SMALL)
    paths = []
    for name, arrays, _ in BAD_DATA:
        if name == "objects.npz":
            path = tmp / name
            np.savez(path, x=np.array([{"a": 1}], dtype=object), next=np.zeros(4))
        else:
            path = _data(tmp, name, arrays)
        paths.append(path)
    runs = qvr_runs(
        [[str(model), "--steps", "2", "--data", str(path)] for path in paths], ADDRESS_SPACE
    )
    return {name: done for (name, _, _), done in zip(BAD_DATA, runs, strict=True)}


@pytest.mark.parametrize(
    ("name", "arrays", "message"),
    BAD_DATA,
    ids=lambda v: v if isinstance(v, str) and "." in v else "",
)
def test_bad_data_is_one_line_and_exit_1(
    bad_data_runs: dict[str, Done], name: str, arrays: dict[str, Any], message: str
) -> None:
    """Each bad file (`arrays`, written by `bad_data_runs`) ends its run with exit 1 and
    one line that says what is wrong with it."""
    done = bad_data_runs[name]
    assert done.returncode == 1, done.stderr
    assert message in one_line(done.stderr)


def test_a_utf8_csv_with_a_byte_order_mark_is_read(tmp_path: Path) -> None:
    model = tmp_path / "m.qvr"
    model.write_text(SMALL)
    header = ",".join([*(f"x[{i}]" for i in range(8)), "next"])
    rows = [",".join(str((r * 7 + i) % 8) for i in range(9)) for r in range(4)]
    path = tmp_path / "bom.csv"
    path.write_bytes(("\ufeff" + "\n".join([header, *rows]) + "\n").encode("utf-8"))
    done = qvr_run(str(model), "--method", "prior", "--steps", "2", "--data", str(path))
    assert done.returncode == 0, done.stderr
    assert "on " + str(path) in done.stdout and "(batch 4)" in done.stdout


def test_a_fifo_named_as_data_is_refused_not_waited_on(tmp_path: Path) -> None:
    model = tmp_path / "m.qvr"
    model.write_text(SMALL)
    fifo = tmp_path / "data.csv"
    os.mkfifo(fifo)
    done = qvr_run(str(model), "--steps", "2", "--data", str(fifo))
    assert done.returncode == 1 and "is not a regular file" in one_line(done.stderr)
