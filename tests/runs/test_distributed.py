"""Runs over several processes with `torch.distributed` (`runs.distributed`), launched as a
user launches them: `torchrun --nproc-per-node 2 -m qvr_cli run ...`, gloo on loopback.

What must hold: how the work is split does not change the result. SVI on one process
and on two, same seed and data, gives the same loss trajectory within floating-point
rounding (the guide's parameters are float32: its gradients summed in two parts
differ from one sum in the last bits); NUTS gathers the four chains of two ranks into
the run one process makes, draw for draw. Rank 0 alone prints and writes."""

from __future__ import annotations

import itertools
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from qvr_core.runs import run_program
from qvr_core.runs.distributed import World
from tests.runs.cli import ROOT, qvr
from tests.runs.regression import regression as regression_source
from tests.runs.regression import write_rows

EXAMPLES = ROOT / "examples"
TORCHRUN = Path(sys.executable).with_name("torchrun")
pytestmark = pytest.mark.skipif(
    not TORCHRUN.exists() or not torch.distributed.is_available(),
    reason="torchrun comes with torch.distributed",
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def torchrun(*args: str) -> subprocess.CompletedProcess[str]:
    """`torchrun --nproc-per-node 2 -m qvr_cli run ARGS` on loopback, one thread a rank."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    command = [
        str(TORCHRUN),
        "--nproc-per-node",
        "2",
        "--master-addr",
        "127.0.0.1",
        "--master-port",
        str(_free_port()),
        "-m",
        "qvr_cli",
        "run",
        *args,
    ]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)


@pytest.fixture(scope="module")
def regression(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    folder = tmp_path_factory.mktemp("distributed")
    (folder / "regression.qvr").write_text(regression_source(600))
    return str(folder / "regression.qvr"), str(write_rows(folder / "rows.npz", 600))


def _summary(done: subprocess.CompletedProcess[str]) -> dict[str, object]:
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    assert len(lines) == 1, done.stdout  # rank 0 alone prints
    out: dict[str, object] = json.loads(lines[0])
    return out


def _same_losses(one: dict[str, object], two: dict[str, object]) -> None:
    a, b = one["losses"], two["losses"]
    assert isinstance(a, list) and isinstance(b, list) and len(a) == len(b)
    np.testing.assert_allclose(b, a, rtol=2e-5)


@pytest.mark.parametrize("subsample", [None, "Row=64"])
def test_svi_of_a_model_split_over_two_processes_is_the_one_process_run(
    regression: tuple[str, str], subsample: str | None
) -> None:
    source, data = regression
    args = [source, "--data", data, "--steps", "60", "--lr", "0.05", "--seed", "3", "--json"]
    if subsample is not None:
        args += ["--subsample", subsample]
    one = run_program(
        Path(source).read_text(), data=data, steps=60, lr=0.05, seed=3, subsample=subsample
    ).to_json()
    two = _summary(torchrun(*args))
    assert two["processes"] == 2 and "processes" not in one
    _same_losses(one, two)


def test_svi_of_a_network_splits_the_batch_between_processes() -> None:
    source = EXAMPLES / "vanilla_rnn_lm.qvr"
    one = run_program(source.read_text(), steps=6, batch=6, seq_len=5).to_json()
    two = _summary(
        torchrun(str(source), "--steps", "6", "--batch", "6", "--seq-len", "5", "--json")
    )
    _same_losses(one, two)


def test_nuts_gathers_four_chains_from_two_ranks(tmp_path: Path) -> None:
    source, data = (
        EXAMPLES / "models" / "eight_schools_noncentered.qvr",
        EXAMPLES / "models" / "eight_schools.json",
    )
    args = [str(source), "--data", str(data), "--method", "nuts", "--steps", "60", "--json"]
    one = json.loads(
        json.dumps(
            run_program(
                source.read_text(), data=str(data), method="nuts", steps=60, chains=4
            ).to_json()
        )
    )
    # .npz, not netCDF: what is checked is who writes and what, not the format, and
    # writing InferenceData would import ArviZ in rank 0 (about 2 s of the test's 8)
    output = tmp_path / "two.npz"
    two = _summary(torchrun(*args, "--chains", "4", "--output", str(output)))
    assert two["processes"] == 2 and two["chains"] == 4
    assert two["posterior"] == one["posterior"]
    assert two["traces"] == one["traces"]
    written = [p for p in tmp_path.iterdir() if p.name.startswith("two")]
    assert written == [output]  # rank 0 alone writes
    with np.load(output) as arrays:  # every chain, gathered from both ranks
        assert arrays["posterior/mu"].shape == (4, 30)


@pytest.mark.parametrize(("n", "size"), [(10, 3), (2, 2), (7, 1), (600, 4)])
def test_the_chunks_of_the_ranks_cover_the_rows_once(n: int, size: int) -> None:
    chunks = [World(r, size).chunk(n) for r in range(size)]
    assert chunks[0][0] == 0 and chunks[-1][1] == n
    assert all(a[1] == b[0] for a, b in itertools.pairwise(chunks))
    assert max(b - a for a, b in chunks) - min(b - a for a, b in chunks) <= 1
    assert sorted(c for r in range(size) for c in World(r, size).chains(9)) == list(range(9))


def test_cuda_without_a_gpu_is_one_line_and_status_2(regression: tuple[str, str]) -> None:
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    source, data = regression
    done = qvr("run", source, "--data", data, "--device", "cuda")
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1 and "cuda" in done.stderr
