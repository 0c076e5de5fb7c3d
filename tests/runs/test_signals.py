"""Ctrl-C and SIGTERM during `qvr run`: every chain stops, the summary so far is printed
and marked partial, `--output` gets the draws so far marked partial, the exit status is
128 + the signal, and no process prints a traceback or outlives the run.

The signal goes to the whole process group, as a terminal's Ctrl-C does, once the run
has said (on stderr) that it is sampling: never after a sleep.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch

from qvr_core.cli.run import format_summary
from qvr_core.inference import results as results_module
from qvr_core.inference.mcmc import _ChainRecord, _result, kept_chains
from qvr_core.inference.results import RunResults, have_arviz
from qvr_core.runs.summary import NutsStats, RunSummary, run_attributes, stopped_after
from tests.conftest import EXAMPLES

ROOT = Path(__file__).resolve().parents[2]
SCHOOLS = EXAMPLES / "models" / "eight_schools_noncentered.qvr"
SCHOOLS_DATA = EXAMPLES / "models" / "eight_schools.json"
REGRESSION = EXAMPLES / "models" / "linear_regression.qvr"
REGRESSION_DATA = EXAMPLES / "models" / "linear_regression.json"

pytestmark = pytest.mark.timeout(600)

# How long the runs below are (were 20000 steps each). A test stops its run at its signal
# point, so it pays for the run up to there; the rest of the run is the margin that keeps
# the signal from arriving after the run has ended (a line reaches the signal within
# milliseconds). Progress lines come every tenth of the run's steps (stderr is not a
# terminal). An SVI run is signalled at its first line, a tenth of the way in, with nine
# tenths to go. NUTS runs half its steps as warmup, and its line shows draws from the first
# live snapshot, a second of wall clock after the first draw (`inference.live`): a NUTS run
# is signalled after its warmup, a second of draws and at most a tenth of the run more,
# with most of its draws to go. Timed on a 2-core machine (iterations/s a chain); on one
# twice as fast the margin is still over a second.
#: eight schools, two chains at tree depth 2 (~3,300/s a chain, advanced together and
#: compiled; at 10,000 steps the draws took 1.5 s): warmup 20000 draws 20000 a chain,
#: signalled ~1 s into the draws, which take over 5 s
SCHOOLS_STEPS = 40000
#: the 50-row regression, one NUTS chain (~3,200/s since it starts at Pathfinder's draws,
#: where 8,000 steps left a quarter of a second between the signal's line and the end):
#: warmup 20000 draws 20000, signalled ~1 s into the draws, which take over 5 s
REGRESSION_NUTS_STEPS = 40000
#: the 50-row regression's SVI (~900 steps/s): signalled at step 500, 4500 steps to go
REGRESSION_SVI_STEPS = 5000


def qvr_run(*args: str) -> subprocess.Popen[str]:
    """`qvr run ARGS` as the leader of its own process group (a terminal's job)."""
    return subprocess.Popen(
        [sys.executable, "-m", "qvr_cli.main", "run", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env={**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"},
    )


def signal_when(
    proc: subprocess.Popen[str], ready: Callable[[str], bool], signum: int
) -> tuple[str, str]:
    """Read stderr until a line is `ready`, signal the process group, return (out, err)."""
    assert proc.stderr is not None
    seen = []
    for line in proc.stderr:
        seen.append(line)
        if ready(line):
            os.killpg(proc.pid, signum)
            break
    else:
        out, err = proc.communicate(timeout=60)
        pytest.fail(f"the run ended before it was signalled:\n{''.join(seen)}{err}\n{out}")
    out, err = proc.communicate(timeout=300)
    return out, "".join(seen) + err


def assert_group_is_gone(proc: subprocess.Popen[str]) -> None:
    """No process of the run's group (its chain processes) is left."""
    with pytest.raises(ProcessLookupError):
        os.killpg(proc.pid, 0)


def draws_in_every_chain(line: str) -> bool:
    found = re.search(r"draws/chain ([\d,]+)", line)
    return found is not None and all(int(n) > 0 for n in found.group(1).split(","))


def read_output(path: Path) -> tuple[dict[str, object], dict[str, np.ndarray]]:
    """The attributes and the posterior of a file `--output` wrote (netCDF or .npz)."""
    if path.suffix != ".npz":
        import arviz as az

        idata = az.from_netcdf(path)  # type: ignore[no-untyped-call]
        posterior = {k: v.values for k, v in idata.posterior.data_vars.items()}
        return dict(idata.posterior.attrs), posterior
    with np.load(path) as arrays:
        attrs = {k[6:]: arrays[k].item() for k in arrays.files if k.startswith("attrs/")}
        posterior = {k[10:]: arrays[k] for k in arrays.files if k.startswith("posterior/")}
    return attrs, posterior


@pytest.mark.slow
def test_ctrl_c_stops_every_chain_and_keeps_the_draws_so_far(tmp_path: Path) -> None:
    out_file = tmp_path / ("run.nc" if have_arviz() else "run.npz")
    half = SCHOOLS_STEPS // 2  # warmup and draws per chain
    proc = qvr_run(
        str(SCHOOLS),
        *("--data", str(SCHOOLS_DATA), "--method", "nuts", "--chains", "2"),
        *("--steps", str(SCHOOLS_STEPS), "--max-tree-depth", "2", "--output", str(out_file)),
    )  # the chains run fast (chains together, compiled): the run is long enough that the
    # first line with draws in every chain leaves most of the draws to come (SCHOOLS_STEPS)
    out, err = signal_when(proc, draws_in_every_chain, signal.SIGINT)
    assert proc.returncode == 130, err
    assert "Traceback" not in out + err and "KeyboardInterrupt" not in out + err
    assert "[stopped]" in out
    stopped = re.search(
        rf"partial: stopped after (\d+) of {half} draws per chain(?: \((1) of 2 chains\))?", out
    )
    assert stopped is not None, out
    # every chain's draws so far, cut to the shortest; a chain with under half the draws
    # of the other (its process ran slower) is left out, and the line says so
    draws, chains = int(stopped.group(1)), int(stopped.group(2) or 2)
    assert 0 < draws < half
    assert f"x (warmup {half}, draws {draws})" in out and "mu" in out  # the table so far
    assert "partial to" in err
    attrs, posterior = read_output(out_file)
    assert attrs["status"] == "partial" and int(str(attrs["partial"])) == 1
    assert int(str(attrs["draws"])) == draws and int(str(attrs["draws_requested"])) == half
    assert posterior["mu"].shape == (chains, draws)
    assert_group_is_gone(proc)


@pytest.mark.slow
def test_sigterm_stops_the_chains_and_exits_143(tmp_path: Path) -> None:
    out_file = tmp_path / "run.npz"
    proc = qvr_run(
        str(SCHOOLS),
        *("--data", str(SCHOOLS_DATA), "--method", "nuts", "--chains", "2"),
        *("--steps", "2000", "--max-tree-depth", "2", "--output", str(out_file), "--json"),
    )
    out, err = signal_when(proc, lambda line: "nuts step" in line, signal.SIGTERM)
    assert proc.returncode == 143, err
    assert "Traceback" not in out + err
    summary = json.loads(out)
    assert summary["stopped"] is True and summary["method"] == "nuts"
    attrs, _ = read_output(out_file)
    assert attrs["status"] == "partial" and str(attrs["stopped"]).startswith("stopped")
    assert_group_is_gone(proc)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("method", "steps"), [("svi", REGRESSION_SVI_STEPS), ("nuts", REGRESSION_NUTS_STEPS)]
)
def test_a_run_in_this_process_stops_the_same_way(method: str, steps: int, tmp_path: Path) -> None:
    """SVI and a single NUTS chain run in the `qvr` process itself."""
    out_file = tmp_path / "run.npz"
    proc = qvr_run(
        str(REGRESSION),
        *("--data", str(REGRESSION_DATA), "--method", method, "--chains", "1"),
        *("--steps", str(steps), "--output", str(out_file)),
    )
    ready = draws_in_every_chain if method == "nuts" else (lambda line: "svi step" in line)
    out, err = signal_when(proc, ready, signal.SIGINT)
    assert proc.returncode == 130, err
    assert "Traceback" not in out + err
    assert "[stopped]" in out and "partial: stopped after" in out
    attrs, _ = read_output(out_file)
    assert attrs["status"] == "partial"
    assert_group_is_gone(proc)


@pytest.mark.slow
def test_sigterm_during_svi_exits_143_with_the_summary(tmp_path: Path) -> None:
    proc = qvr_run(
        str(REGRESSION),
        *("--data", str(REGRESSION_DATA), "--method", "svi"),
        *("--steps", str(REGRESSION_SVI_STEPS)),
    )
    out, err = signal_when(proc, lambda line: "svi step" in line, signal.SIGTERM)
    assert proc.returncode == 143, err
    assert "Traceback" not in out + err
    assert re.search(rf"partial: stopped after \d+ of {REGRESSION_SVI_STEPS} steps", out), out


# ------------------------------------------------------------------ the pieces, in-process


def record(draws: int, complete: bool = False) -> _ChainRecord:
    r = _ChainRecord(complete=complete)
    r.zs = [torch.zeros(1)] * draws
    return r


def test_a_stopped_run_keeps_the_chains_stopped_together() -> None:
    assert len(kept_chains([record(5, True), record(5, True)])) == 2
    assert [len(r.zs) for r in kept_chains([record(40), record(31), record(12)])] == [40, 31]
    assert [len(r.zs) for r in kept_chains([record(50, True), record(10)])] == [50]
    assert kept_chains([record(0), record(0)]) == [] and kept_chains([]) == []


def test_chains_stopped_in_two_processes_come_back_together() -> None:
    """Both chains stop mid-way: both are kept, cut to the shorter (was: the longer alone)."""
    from qvr_core.inference.mcmc import chain_layout
    from tests.inference.toy_models import ScaledNormal

    model, x = ScaledNormal([0.5, 2.0]), torch.zeros(1, 1)
    layout = chain_layout(model, x, {})
    records = [record(0) for _ in range(2)]
    for r, n in zip(records, (30, 24), strict=True):
        r.zs = [torch.zeros(2)] * n
        r.potentials, r.accept, r.diverging = [0.0] * n, [1.0] * n, [False] * n
        r.depths, r.steps, r.energies = [1] * n, [1] * n, [0.0] * n
    result = _result(layout, records)
    assert result.stopped and result.samples["z"].shape[:2] == (2, 24)


def summary(stopped: bool, method: str = "nuts", draws: int = 120) -> RunSummary:
    nuts = None
    if method == "nuts":
        nuts = NutsStats(
            chains=2, chains_requested=2, processes=2, num_warmup=250, num_samples=draws,
            acceptance=0.9, divergences=0, warmup_divergences=0, step_size=0.3,
            r_hat={}, ess={}, traces=(),
        )  # fmt: skip
    return RunSummary(
        method=method,  # type: ignore[arg-type]
        program="p", data="synthetic", batch=1, steps=740, losses=(1.0,),
        seconds=1.0, stopped=stopped, nuts=nuts,
    )  # fmt: skip


def test_the_summary_says_how_far_a_stopped_run_got() -> None:
    assert stopped_after(summary(True), 500) == "stopped after 120 of 250 draws per chain"
    assert stopped_after(summary(True, draws=0), 500).startswith("stopped during warmup")
    assert stopped_after(summary(True, "svi"), 1000) == "stopped after 740 of 1000 steps"
    text = format_summary(summary(True), 500)
    assert "[stopped]" in text and "partial: stopped after 120 of 250 draws" in text
    assert "partial" not in format_summary(summary(False), 500)


def test_the_output_says_whether_it_is_partial(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    attrs = run_attributes(summary(True), 500)
    assert attrs["status"] == "partial" and attrs["partial"] == 1 and attrs["draws"] == 120
    assert run_attributes(summary(False), 500)["status"] == "complete"
    results = RunResults()
    results.add("posterior", {"mu": np.zeros((2, 3))})
    results.attrs.update(attrs)
    monkeypatch.setattr(results_module, "have_arviz", lambda: False)
    got, posterior = read_output(results.write(tmp_path / "run.nc"))
    assert got["status"] == "partial" and got["draws_requested"] == 250
    assert posterior["mu"].shape == (2, 3)
    assert [p.name for p in tmp_path.iterdir()] == ["run.npz"]  # no temporary file left
    if have_arviz():
        monkeypatch.setattr(results_module, "have_arviz", lambda: True)
        got, _ = read_output(results.write(tmp_path / "run.nc"))
        assert got["status"] == "partial" and int(str(got["partial"])) == 1


def test_fit_marks_its_results_complete() -> None:
    from qvr_core.runs import fit

    source = REGRESSION.read_text(encoding="utf-8")
    result = fit(source, method="prior", steps=3, data=str(REGRESSION_DATA))
    assert result.results.attrs["status"] == "complete"
    assert result.results.attrs["steps"] == 3
