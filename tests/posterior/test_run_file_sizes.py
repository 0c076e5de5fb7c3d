"""Run files sized from their headers before they are read (issue #46).

A netCDF file can declare a variable of any size in a few kilobytes (HDF5 stores
no chunk that was never written) and an `.npz` can hold gigabytes of compressed
zeros in a few megabytes. `qvr compare` read such a file whole (a 140 KB file
declaring a 3 GB `log_likelihood`: 6.4 GB and 71 s, then a traceback); now it and
`qvr plot` size every array from the file's headers first, with
`qvr_core.posterior.run_files`, and refuse a file over the memory budget in one
line naming the file, the variable and its bytes.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tracemalloc
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from numpy.lib import format as npy

from qvr_core.posterior.comparison import RunFileError, read_run, read_runs
from qvr_core.posterior.run_files import RunFileTooLargeError, size_run_file
from tests.runs.test_data_bounds import MIB, _member, _zip

ROOT = Path(__file__).resolve().parents[2]
GIB = 1 << 30
#: `log_likelihood/y` of 4 chains, 1,000 draws and 93,750 observations: 3 GB of float64.
OBSERVATIONS = 93_750
DECLARED = 4 * 1000 * OBSERVATIONS * 8

#: Runs a command under an address-space limit (as the server's worker runs) and prints
#: its exit status, stderr and peak RSS as JSON.
MEASURE = """
import json, resource, subprocess, sys
limit = int(sys.argv[1])
def cap():
    if limit:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
done = subprocess.run(sys.argv[2:], capture_output=True, text=True, preexec_fn=cap)
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
print(json.dumps({"rc": done.returncode, "stderr": done.stderr, "peak": peak}))
"""


def qvr_measured(*args: str, address_space: int = 0) -> dict[str, Any]:
    """`qvr ARGS` in a process of its own (under `address_space` bytes when given)."""
    threads = {k: "1" for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}
    env = {**os.environ, "PYTHONPATH": str(ROOT), **threads}
    command = [sys.executable, "-m", "qvr_cli.main", *args]
    done = subprocess.run(
        [sys.executable, "-c", MEASURE, str(address_space), *command],
        capture_output=True,
        text=True,
        timeout=280,
        env=env,
        cwd=ROOT,
        check=True,
    )
    measured: dict[str, Any] = json.loads(done.stdout)
    return measured


def one_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    return lines[0]


def declared_netcdf(path: Path, observations: int = OBSERVATIONS) -> Path:
    """InferenceData in netCDF whose `log_likelihood/y` is declared `(4, 1000,
    observations)` float64 and never written: a few kilobytes on disk. Its posterior
    holds real draws."""
    import h5netcdf

    rng = np.random.default_rng(0)
    with h5netcdf.File(path, "w") as f:
        for name in ("posterior", "log_likelihood"):
            group = f.create_group(name)
            group.dimensions = {"chain": 4, "draw": 1000}
            for dim, size in (("chain", 4), ("draw", 1000)):
                group.create_variable(dim, (dim,), "i8")[:] = np.arange(size)
            if name == "posterior":
                group.create_variable("mu", ("chain", "draw"), "f8")[:] = rng.normal(size=(4, 1000))
            else:
                group.dimensions["y_dim_0"] = observations
                group.create_variable(
                    "y",
                    ("chain", "draw", "y_dim_0"),
                    "f8",
                    chunks=(1, 100, min(observations, 1000)),
                )
    return path


def npz_of_zeros(path: Path, nbytes: int) -> Path:
    """An `.npz` as `qvr run` writes one without ArviZ, whose `log_likelihood/y` is
    `nbytes` of float64 zeros compressed to about a thousandth: one compressed MiB
    repeated, never holding the zeros."""
    observations = nbytes // (8 * 4 * 1000)
    header = io.BytesIO()
    npy.write_array_header_1_0(
        header, {"descr": "<f8", "fortran_order": False, "shape": (4, 1000, observations)}
    )
    head, size = header.getvalue(), 4 * 1000 * observations * 8
    first = zlib.compressobj(9, zlib.DEFLATED, -15)
    start = first.compress(head) + first.flush(zlib.Z_FULL_FLUSH)
    block = zlib.compressobj(9, zlib.DEFLATED, -15)
    zeros = bytes(MIB)
    repeated = block.compress(zeros) + block.flush(zlib.Z_FULL_FLUSH)
    tail = zlib.compressobj(9, zlib.DEFLATED, -15)
    rest = bytes(size % MIB)
    end = tail.compress(rest) + tail.flush()
    crc = zlib.crc32(head)
    for _ in range(size // MIB):
        crc = zlib.crc32(zeros, crc)
    crc = zlib.crc32(rest, crc)
    body = start + repeated * (size // MIB) + end
    posterior = io.BytesIO()
    npy.write_array(posterior, np.random.default_rng(0).normal(size=(4, 1000)))
    path.write_bytes(
        _zip(
            [
                ("log_likelihood/y.npy", body, crc, len(head) + size),
                _member("posterior/mu.npy", posterior.getvalue()),
            ]
        )
    )
    return path


@pytest.fixture(scope="module")
def declared(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return declared_netcdf(tmp_path_factory.mktemp("declared") / "declared.nc")


@pytest.fixture(scope="module")
def zeros(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return npz_of_zeros(tmp_path_factory.mktemp("zeros") / "zeros.npz", DECLARED)


def test_the_files_are_small_and_declare_3_gb(declared: Path, zeros: Path) -> None:
    assert declared.stat().st_size < 200_000
    assert zeros.stat().st_size < 4 * MIB
    for path in (declared, zeros):
        (y,) = [v for v in size_run_file(path).variables_of("log_likelihood") if v.name == "y"]
        assert y.shape == (4, 1000, OBSERVATIONS) and y.nbytes == DECLARED


@pytest.mark.parametrize("which", ["netcdf", "npz"])
def test_compare_refuses_a_3_gb_log_likelihood_in_one_line_within_the_address_space(
    which: str, declared: Path, zeros: Path
) -> None:
    """The issue's files under a 3 GiB address space (the default budget is no more than
    what is left of it): refused by their headers, never read (it ran out of memory
    with a traceback, or for 71 s without a limit)."""
    path = declared if which == "netcdf" else zeros
    done = qvr_measured("compare", str(path), address_space=3 * GIB)
    assert done["rc"] == 2, done["stderr"]
    line = one_line(done["stderr"])
    assert line.startswith(f"qvr compare: {path}: reading it needs about ")
    assert "'log_likelihood/y': 375,000,000 float64 values" in line
    assert "3 GB by its header" in line and "over the memory budget" in line
    assert done["peak"] < GIB, done


def test_compare_and_plot_take_a_memory_budget(declared: Path) -> None:
    for command in ("compare", "plot"):
        done = qvr_measured(command, str(declared), "--memory-budget", "1GB")
        assert done["rc"] == 2, done["stderr"]
        line = one_line(done["stderr"])
        assert str(declared) in line and "'log_likelihood/y'" in line
        assert "over the memory budget of 1.07 GB" in line
        assert done["peak"] < GIB, done


def test_sizing_reads_headers_only(declared: Path, zeros: Path) -> None:
    tracemalloc.start()
    try:
        for path in (declared, zeros):
            with pytest.raises(RunFileTooLargeError, match=r"'log_likelihood/y'"):
                read_run(path, need_log_likelihood=True, budget=GIB)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 16 * MIB


def test_a_run_that_fits_is_read(tmp_path: Path) -> None:
    """The same layout at 400 observations: sized, under the budget, compared."""
    small = declared_netcdf(tmp_path / "small.nc", observations=400)
    size = size_run_file(small, {"log_likelihood": 32})
    assert 4 * 1000 * 400 * 40 < size.total < 4 * 1000 * 400 * 40 + MIB
    idata = read_run(small, budget=GIB)
    assert idata.log_likelihood["y"].shape == (4, 1000, 400)


def test_runs_are_read_together_within_the_budget(tmp_path: Path) -> None:
    """A comparison holds every run it reads: two runs that fit one by one may not."""
    a = declared_netcdf(tmp_path / "a.nc", observations=1000)
    b = declared_netcdf(tmp_path / "b.nc", observations=1000)
    need = size_run_file(a, {"log_likelihood": 32}).total
    assert set(read_runs([a], budget=need + MIB)) == {"a"}
    with pytest.raises(RunFileTooLargeError, match=r"b\.nc: .* besides the .* of the runs before"):
        read_runs([a, b], budget=need + MIB)


def test_an_npz_member_that_declares_more_than_it_holds_is_refused_unread(
    tmp_path: Path,
) -> None:
    """A header of 3 GB over a member of a few bytes: numpy would make the 3 GB array
    before finding the member short."""
    header = io.BytesIO()
    npy.write_array_header_1_0(
        header, {"descr": "<f8", "fortran_order": False, "shape": (4, 1000, OBSERVATIONS)}
    )
    path = tmp_path / "short.npz"
    path.write_bytes(_zip([_member("log_likelihood/y.npy", header.getvalue() + bytes(64))]))
    with pytest.raises(RunFileError, match=r"'log_likelihood/y' declares 3,000,000,000 bytes"):
        size_run_file(path)


def test_a_netcdf_link_to_another_file_is_refused(tmp_path: Path) -> None:
    import h5py

    other = declared_netcdf(tmp_path / "other.nc", observations=10)
    path = declared_netcdf(tmp_path / "linked.nc", observations=10)
    with h5py.File(path, "a") as f:
        f["log_likelihood"]["z"] = h5py.ExternalLink(str(other), "/log_likelihood/y")
    with pytest.raises(RunFileError, match=r"'log_likelihood/z' links to another file"):
        size_run_file(path)
