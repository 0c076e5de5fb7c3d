"""Scaling of `qvr run` SVI: one process, two data-parallel processes (torchrun), a GPU.

    .venv/bin/python bench/scaling.py [--quick] [--workload all|rnn|regression]
        [--batch 256] [--seq-len 128] [--rnn-steps 30]
        [--rows 200000] [--reg-steps 500] [--lr 0.05] [--subsample-rows 1024]
        [--rounds 3] [--json OUT]

Two workloads, each run as a user runs it, a fresh `qvr run ... --json` command per
configuration (seed 1 for all):

- the vanilla RNN LM (examples/vanilla_rnn_lm.qvr), a seed program on synthetic
  data (`--batch`, `--seq-len`), `--rnn-steps` SVI steps; two processes split the
  examples of the batch;
- a Bayesian linear regression with `--rows` rows (the .qvr and an .npz of the data
  are written to a temporary folder: alpha, beta ~ Normal(0, 10), sigma ~
  HalfNormal(5), y ~ Normal(alpha + beta * x, sigma) with x standard normal and
  y = 1.5 + 2x + 0.7 noise), `--reg-steps` steps at `--lr`, fitted on the full
  data and minibatched with `--subsample Row=ROWS` (each step scores ROWS random
  rows, scaled by rows/ROWS); two processes split the plate's rows.

Configurations: 1 process; 2 processes under `torchrun --nproc-per-node 2` (gloo,
a free port found by binding port 0); and `--device cuda`, 1 process, only when
`torch.cuda.is_available()`. Threads: `OMP_NUM_THREADS` is set to the cores this
script may use for 1 process and to half of them for each of 2 processes, so both
use the same cores (the threads column: processes x torch threads each). `qvr run`
runs model programs (the regression) on one torch thread whatever the variable
says (`qvr_core.runs.model_data.one_thread`), and the table says so. On a 2-core
machine the RNN's 2 processes have one thread each where the 1 process has two,
so the comparison is of the same cores used two ways, the all-reduce's cost
included; a third RNN row, 1 process on half the threads, separates what the
second process adds from what the threads of one process do (on a busy machine
torch's threads in one process can wait on each other for a core, and that row
shows it).

Each configuration runs `--rounds` times, the configurations alternating so load
on the machine falls on all alike; the table gives the median of each figure
(the losses are the same in every round: one seed).

Figures per run:
- steps/s: the summary's `steps_per_second`, SVI steps only (no start-up, no
  compilation, no summary);
- wall s: the whole command, start-up of the interpreter(s), torch, the
  process group, compilation and the summary included;
- to ELBO s: seconds of SVI until the loss, smoothed by a trailing moving average
  of 10 steps, first falls to a target, counted as (steps taken) x (the run's
  seconds per step = `seconds` / number of losses). The target is set by the
  workload's baseline, the 1-process (full-data) run: its last smoothed loss L
  loosened by 5 %, L + 0.05 |L| (L x 1.05 for a positive loss, the usual case of a
  negative ELBO), so the baseline reaches it by construction and every other
  configuration is timed to the same ELBO. For the minibatched regression the
  loss is the scaled estimate of the full-data loss, noisier (the summary's
  `elbo_sd`), which the moving average tames. "-" when a run never gets there;
- peak RSS: the largest resident set of the run's processes (the waited-for
  process or, under torchrun, the largest of the launcher and its ranks), from
  `/usr/bin/time -v`, or without it from `getrusage(RUSAGE_CHILDREN)` in a fresh
  child per run.

Ratios are speed-ups against the workload's baseline measured in this run
(baseline figure / this figure for times, this / baseline for steps/s): above 1
is faster. Nothing is asserted; load on the machine (printed) moves the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
RNN = ROOT / "examples" / "vanilla_rnn_lm.qvr"
TIME = Path("/usr/bin/time")
#: the trailing moving average of "to ELBO" and its loosening of the baseline's end
WINDOW = 10
SLACK = 0.05

REGRESSION = """\
# Bayesian linear regression on many rows (written by bench/scaling.py).

object Row : FinSet {rows}

program regression : Row -> Row
    sample alpha <- Normal(0.0, 10.0)
    sample beta <- Normal(0.0, 10.0)
    sample sigma <- HalfNormal(5.0)
    let mu = alpha + beta * x
    observe y : Row <- Normal(mu, sigma)
    return mu

export regression
"""

#: a child that runs the command and reports its children's peak RSS (no /usr/bin/time)
RUSAGE_CHILD = (
    "import resource, subprocess, sys\n"
    "code = subprocess.run(sys.argv[1:]).returncode\n"
    "kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n"
    "print(f'Maximum resident set size (kbytes): {kb}', file=sys.stderr)\n"
    "sys.exit(code)\n"
)


@dataclass
class Config:
    """One way to run a workload."""

    label: str
    processes: int
    device: str
    omp_threads: int
    subsample: int | None = None


@dataclass
class Result:
    workload: str
    label: str
    processes: int
    device: str
    omp_threads: int
    torch_threads: int
    subsample: int | None
    ok: bool = False
    error: str | None = None
    steps: int = 0
    steps_per_second: float | None = None
    svi_seconds: float | None = None
    wall_seconds: float | None = None
    peak_rss_mb: float | None = None
    final_loss: float | None = None
    final_smoothed_loss: float | None = None
    target_loss: float | None = None
    to_elbo_seconds: float | None = None
    to_elbo_steps: int | None = None
    speedup: dict[str, float | None] = field(default_factory=dict)
    losses: list[float] = field(default_factory=list, repr=False)
    #: each round's own figures (the fields above are their medians)
    rounds: list[dict[str, float | None]] = field(default_factory=list)


def cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def free_port() -> int:
    """A port nothing listens on now (the kernel's pick for port 0)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def time_works() -> bool:
    """GNU time with -v (BusyBox's has no -v)."""
    if not TIME.exists():
        return False
    try:
        probe = [str(TIME), "-v", sys.executable, "-c", ""]
        done = subprocess.run(probe, capture_output=True, text=True)
    except OSError:
        return False
    return done.returncode == 0 and "Maximum resident set size" in done.stderr


def torchrun() -> list[str]:
    beside = Path(sys.executable).parent / "torchrun"
    if beside.exists():
        return [str(beside)]
    return [sys.executable, "-m", "torch.distributed.run"]


def command(config: Config, program: list[str]) -> list[str]:
    """`qvr run PROGRAM --json` as this configuration launches it."""
    qvr = ["-m", "qvr_cli", "run", *program, "--json", "--seed", "1", "--device", config.device]
    if config.subsample is not None:
        qvr += ["--subsample", f"Row={config.subsample}"]
    if config.processes == 1:
        return [sys.executable, *qvr]
    launch = [f"--nproc-per-node={config.processes}", f"--master-port={free_port()}"]
    return [*torchrun(), *launch, *qvr]


def smoothed(losses: list[float]) -> list[float]:
    """Trailing moving average over WINDOW steps (over all of them when fewer), from the
    first full window on."""
    w = max(1, min(WINDOW, len(losses)))
    cumulative = np.concatenate([[0.0], np.cumsum(np.asarray(losses, dtype=np.float64))])
    return list((cumulative[w:] - cumulative[:-w]) / w)


def target_of(losses: list[float]) -> float:
    last = smoothed(losses)[-1]
    return last + SLACK * abs(last)


def to_elbo(result: Result, target: float) -> None:
    """Steps and seconds until the smoothed loss first reaches `target`."""
    result.target_loss = target
    w = max(1, min(WINDOW, len(result.losses)))
    for i, loss in enumerate(smoothed(result.losses)):
        if loss <= target:
            steps = i + w
            result.to_elbo_steps = steps
            assert result.svi_seconds is not None
            result.to_elbo_seconds = steps * result.svi_seconds / len(result.losses)
            return


def run_one(
    workload: str, config: Config, program: list[str], use_time: bool, timeout: float
) -> Result:
    threads = 1 if workload == "regression" else config.omp_threads
    result = Result(
        workload,
        config.label,
        config.processes,
        config.device,
        config.omp_threads,
        threads,
        config.subsample,
    )
    measured = [str(TIME), "-v"] if use_time else [sys.executable, "-c", RUSAGE_CHILD]
    cmd = [*measured, *command(config, program)]
    env = {**os.environ, "OMP_NUM_THREADS": str(config.omp_threads)}
    began = time.perf_counter()
    try:
        done = subprocess.run(
            cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        result.error = f"no summary in {timeout:.0f} s"
        return result
    result.wall_seconds = time.perf_counter() - began
    rss = re.findall(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr)
    if rss:
        result.peak_rss_mb = int(rss[-1]) / 1024
    if done.returncode != 0:
        tail = [line for line in done.stderr.splitlines() if line.strip()][-3:]
        result.error = f"exit {done.returncode}: " + " | ".join(tail)
        return result
    try:
        summary: dict[str, Any] = json.loads(done.stdout)
    except json.JSONDecodeError:
        result.error = f"no JSON summary on stdout: {done.stdout[:200]!r}"
        return result
    result.ok = True
    result.losses = [float(v) for v in summary["losses"]]
    result.steps = len(result.losses)
    result.steps_per_second = float(summary["steps_per_second"])
    result.svi_seconds = float(summary["seconds"])
    result.final_loss = float(summary["final_loss"])
    result.final_smoothed_loss = smoothed(result.losses)[-1]
    if summary.get("processes", 1) != config.processes:
        result.error = f"the summary says {summary.get('processes', 1)} process(es)"
    return result


def speedups(result: Result, base: Result) -> None:
    def ratio(ours: float | None, theirs: float | None, higher_better: bool) -> float | None:
        if not ours or not theirs:
            return None
        return ours / theirs if higher_better else theirs / ours

    result.speedup = {
        "steps_per_second": ratio(result.steps_per_second, base.steps_per_second, True),
        "wall": ratio(result.wall_seconds, base.wall_seconds, False),
        "to_elbo": ratio(result.to_elbo_seconds, base.to_elbo_seconds, False),
    }


def configs(
    what: str, subsample: int | None, n_cores: int, gpu: bool, control: bool = False
) -> list[Config]:
    """1 process, 2 processes, and the GPU where there is one; `what` starts the labels.
    `control` adds 1 process on the threads of one of the 2 (for a seed program, whose
    threads follow OMP_NUM_THREADS): the 2 processes' gain without the threads' part."""
    half = max(1, n_cores // 2)
    out = [Config(f"{what}1 process", 1, "cpu", n_cores, subsample)]
    if control and half != n_cores:
        threads = f"{half} thread{'s' if half > 1 else ''}"
        out.append(Config(f"{what}1 process, {threads}", 1, "cpu", half, subsample))
    out += [Config(f"{what}2 processes", 2, "cpu", half, subsample)]
    if gpu:
        out.append(Config(f"{what}GPU", 1, "cuda", n_cores, subsample))
    return out


#: the figures that differ between rounds, combined by their median
PER_ROUND = ("steps_per_second", "svi_seconds", "wall_seconds", "peak_rss_mb", "to_elbo_seconds")


def combine(runs: list[Result]) -> Result:
    """One row for a configuration's rounds: the medians of their figures (the losses are
    the same in every round: one seed); a failed round fails the row."""
    failed = [r for r in runs if not r.ok or r.error]
    if failed:
        return failed[0]
    row = replace(runs[0])
    row.rounds = [{k: getattr(r, k) for k in PER_ROUND} for r in runs]
    for name in PER_ROUND:
        values = [v for v in (getattr(r, name) for r in runs) if v is not None]
        setattr(row, name, statistics.median(values) if values else None)
    return row


def measure(
    workload: str,
    program: list[str],
    configurations: list[Config],
    args: argparse.Namespace,
    use_time: bool,
) -> list[Result]:
    """Every configuration once per round, alternating, so load on the machine falls on
    all of them alike; the first configuration is the baseline."""
    runs: list[list[Result]] = [[] for _ in configurations]
    for round_ in range(args.rounds):
        for config, done in zip(configurations, runs, strict=True):
            sys.stdout.flush()
            print(
                f"  round {round_ + 1}/{args.rounds}, {workload}: {config.label} ...",
                file=sys.stderr,
                flush=True,
            )
            done.append(run_one(workload, config, program, use_time, args.timeout))
    baseline = next((r for r in runs[0] if r.ok), None)
    if baseline is not None:
        target = target_of(baseline.losses)
        for r in (r for done in runs for r in done):
            if r.ok:
                to_elbo(r, target)
    results = [combine(done) for done in runs]
    if results[0].ok:
        for r in results:
            if r.ok:
                speedups(r, results[0])
    return results


def fmt(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def table(title: str, results: list[Result]) -> None:
    print(title)
    base = results[0]
    if base.target_loss is not None:
        print(
            f"  target loss {base.target_loss:.6g} (baseline's last smoothed loss "
            f"{base.final_smoothed_loss:.6g} + {SLACK:.0%})"
        )
    print(
        f"  {'configuration':28}{'threads':>9}{'steps/s':>10}{'wall s':>9}{'to ELBO s':>11}"
        f"{'(steps)':>9}{'peak MB':>9}{'final loss':>12}"
        f"   speed-up: {'steps/s':>8}{'wall':>7}{'ELBO':>7}"
    )
    for r in results:
        threads = f"{r.processes}x{r.torch_threads}"
        if not r.ok and r.error:
            print(f"  {r.label:28}{threads:>9}   failed: {r.error}")
            continue
        s = r.speedup
        print(
            f"  {r.label:28}{threads:>9}{fmt(r.steps_per_second, '.2f'):>10}"
            f"{fmt(r.wall_seconds, '.1f'):>9}{fmt(r.to_elbo_seconds, '.2f'):>11}"
            f"{fmt(r.to_elbo_steps, 'd'):>9}{fmt(r.peak_rss_mb, '.0f'):>9}"
            f"{fmt(r.final_loss, '.6g'):>12}"
            f"   {'':9}{fmt(s.get('steps_per_second'), '.2f'):>8}"
            f"{fmt(s.get('wall'), '.2f'):>7}{fmt(s.get('to_elbo'), '.2f'):>7}"
        )
        if r.error:
            print(f"  {'':28}note: {r.error}")


def data_parallel(results: list[Result]) -> None:
    """The 2 processes against 1 process with the threads of one of them."""
    two = next((r for r in results if r.processes == 2 and r.ok), None)
    one = next((r for r in results[1:] if r.processes == 1 and r.device == "cpu"), None)
    if two is None or one is None or not one.ok:
        return
    if two.steps_per_second and one.steps_per_second:
        print(
            f"  2 processes / 1 process at {one.torch_threads} thread(s) each: "
            f"{two.steps_per_second / one.steps_per_second:.2f}x steps/s"
        )


def memory_ratios(results: list[Result]) -> None:
    """Peak RSS of each subsampled run against the full-data run of its configuration."""
    full = {(r.processes, r.device): r for r in results if r.subsample is None}
    parts = []
    for r in results:
        base = full.get((r.processes, r.device))
        if r.subsample is None or base is None or not r.peak_rss_mb or not base.peak_rss_mb:
            continue
        where = "GPU" if r.device == "cuda" else f"{r.processes} process{'es' * (r.processes > 1)}"
        parts.append(
            f"{where} {r.peak_rss_mb:.0f} / {base.peak_rss_mb:.0f} MB = "
            f"{r.peak_rss_mb / base.peak_rss_mb:.2f}"
        )
    if parts:
        print("  peak RSS, subsampled / full data: " + "; ".join(parts))


def write_regression(folder: Path, rows: int) -> list[str]:
    rng = np.random.default_rng(0)
    x = rng.standard_normal(rows).astype(np.float32)
    y = (1.5 + 2.0 * x + 0.7 * rng.standard_normal(rows)).astype(np.float32)
    source, data = folder / "regression.qvr", folder / "regression.npz"
    source.write_text(REGRESSION.format(rows=rows), encoding="utf-8")
    np.savez(data, x=x, y=y)
    return [str(source), "--data", str(data)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes: a smoke run")
    parser.add_argument("--workload", choices=("all", "rnn", "regression"), default="all")
    parser.add_argument("--batch", type=int, help="RNN synthetic batch (256; quick 8)")
    parser.add_argument("--seq-len", type=int, help="RNN sequence length (128; quick 8)")
    parser.add_argument("--rnn-steps", type=int, help="RNN SVI steps (30; quick 10)")
    parser.add_argument("--rows", type=int, help="regression rows (200000; quick 20000)")
    parser.add_argument("--reg-steps", type=int, help="regression SVI steps (500; quick 40)")
    parser.add_argument("--lr", type=float, default=0.05, help="regression Adam rate")
    parser.add_argument(
        "--subsample-rows", type=int, help="regression minibatch rows (1024; quick 256)"
    )
    parser.add_argument(
        "--rounds", type=int, help="runs of each configuration, alternating (3; quick 1)"
    )
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per command")
    parser.add_argument("--json", type=Path, metavar="OUT", help="save the figures as JSON")
    args = parser.parse_args()
    defaults = {
        "batch": (256, 8),
        "seq_len": (128, 8),
        "rnn_steps": (30, 10),
        "rows": (200_000, 20_000),
        "reg_steps": (500, 40),
        "subsample_rows": (1024, 256),
        "rounds": (3, 1),
    }
    for name, (full, quick) in defaults.items():
        if getattr(args, name) is None:
            setattr(args, name, quick if args.quick else full)

    n_cores = cores()
    gpu = torch.cuda.is_available()
    use_time = time_works()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"qvr run scaling: {n_cores} core(s), load {load:.1f}, "
        f"GPU {torch.cuda.get_device_name(0) if gpu else 'none'}, torch {torch.__version__}, "
        f"peak RSS from {'/usr/bin/time -v' if use_time else 'getrusage(RUSAGE_CHILDREN)'}"
    )
    print(
        f"OMP_NUM_THREADS: {n_cores} for 1 process, {max(1, n_cores // 2)} for each of 2; "
        "threads column = processes x torch threads each (the regression, a model "
        "program, runs on 1 torch thread per process whatever OMP_NUM_THREADS says)"
    )
    print(
        "speed-up: against the workload's first row, measured in this run (>1 faster); "
        f"to ELBO: SVI seconds until the {WINDOW}-step moving average of the loss "
        f"reaches the first row's last one + {SLACK:.0%}"
    )
    report: dict[str, Any] = {
        "cores": n_cores,
        "load": load,
        "gpu": torch.cuda.get_device_name(0) if gpu else None,
        "torch": torch.__version__,
        "window": WINDOW,
        "slack": SLACK,
        "settings": {k: getattr(args, k) for k in [*defaults, "lr", "quick"]},
        "workloads": {},
    }
    failed = False

    if args.workload in ("all", "rnn"):
        program = [
            str(RNN),
            "--batch",
            str(args.batch),
            "--seq-len",
            str(args.seq_len),
            "--steps",
            str(args.rnn_steps),
        ]
        results = measure("rnn", program, configs("", None, n_cores, gpu, True), args, use_time)
        print()
        table(
            f"vanilla RNN LM (seed program), batch {args.batch}, seq {args.seq_len}, "
            f"{args.rnn_steps} SVI steps, median of {args.rounds} round(s)",
            results,
        )
        data_parallel(results)
        report["workloads"]["rnn"] = [asdict(r) for r in results]
        failed |= not all(r.ok for r in results)

    if args.workload in ("all", "regression"):
        with tempfile.TemporaryDirectory(prefix="qvr-scaling-") as tmp:
            program = [
                *write_regression(Path(tmp), args.rows),
                "--steps",
                str(args.reg_steps),
                "--lr",
                str(args.lr),
            ]
            chosen = [
                *configs("full data, ", None, n_cores, gpu),
                *configs(f"subsample {args.subsample_rows}, ", args.subsample_rows, n_cores, gpu),
            ]
            results = measure("regression", program, chosen, args, use_time)
        print()
        table(
            f"linear regression (model program), {args.rows} rows, {args.reg_steps} SVI "
            f"steps, lr {args.lr}, median of {args.rounds} round(s)",
            results,
        )
        memory_ratios(results)
        report["workloads"]["regression"] = [asdict(r) for r in results]
        failed |= not all(r.ok for r in results)

    load_end = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    report["load_end"] = load_end
    print(f"\nload at the end: {load_end:.1f}")
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=1), encoding="utf-8")
        print(f"\nfigures written to {args.json}")
    if failed:
        print("\nsome runs failed (see above)", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
