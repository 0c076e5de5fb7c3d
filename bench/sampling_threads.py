"""A small model's recorded potential on one and on two torch threads, on an idle machine
and beside busy processes (why `qvr_core.inference.threads` samples such a model on one).

    .venv/bin/python bench/sampling_threads.py [--calls 300] [--busy 2]

The model is posteriordb's gp_pois_regr as `examples/posteriordb` writes it (a Cholesky
factor of an 11 x 11 covariance per chain), its potential and gradient recorded for four
chains as NUTS records them (`inference.many.compiled_potential`). Printed: microseconds a
call on one and on two intra-op threads, the two alternating, first with nothing else
running, then beside `--busy` processes that factor small matrices on torch's default threads (a
second run, a test suite's other worker), and the ratio of two threads to one.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch

from qvr_core.inference.chains import chain_layout
from qvr_core.inference.many import compiled_potential
from qvr_core.inference.mcmc import ProgramPotential, initial_values
from qvr_core.plan.run_arguments import RunArguments
from qvr_core.runs.prepare import prepare

ROOT = Path(__file__).resolve().parents[1]
NAME = "gp_pois_regr-gp_pois_regr"
MODEL = ROOT / "examples" / "posteriordb" / f"{NAME}.qvr"
DATA = ROOT.parent / "shared" / "posteriordb" / NAME / "data.json"
#: What a busy process runs: another small model's chains on torch's default threads (a
#: batched Cholesky factorisation, over and over), as a second run or a test worker does.
SPIN = (
    "import torch\n"
    "a = torch.randn(16, 8, 8, dtype=torch.float64)\n"
    "k = a @ a.mT + torch.eye(8, dtype=torch.float64)\n"
    "while True:\n"
    "    torch.linalg.cholesky(k)\n"
)


def recorded(
    model: Path, data: Path | None, *, join: bool = True
) -> tuple[Callable[[torch.Tensor], tuple[torch.Tensor, ...]] | None, torch.Tensor]:
    """A model's recorded potential of four chains (None where it cannot be recorded)
    and four starts beside one another; `join` as `inference.simplify` takes it."""
    source = model.read_text(encoding="utf-8")
    run = prepare(source, RunArguments(method="nuts"), data=str(data) if data else None)
    layout = chain_layout(run.program, run.x, run.observations)
    potential = ProgramPotential(run.program, run.x, run.observations, layout)
    torch.manual_seed(0)
    start = layout.pack(initial_values(run.program, run.x, dict(run.observations)))
    starts = torch.stack([start + 0.1 * k for k in range(4)])
    return compiled_potential(potential, potential.log_density, starts, join=join), starts


def recorded_potential() -> tuple[Callable[[torch.Tensor], object], torch.Tensor]:
    """gp_pois_regr's recorded potential of four chains and four starts."""
    function, starts = recorded(MODEL, DATA)
    if function is None:
        raise SystemExit("the potential could not be recorded")
    return function, starts


def per_call(function: Callable[[torch.Tensor], object], starts: torch.Tensor, calls: int) -> float:
    for _ in range(10):
        function(starts)
    began = time.perf_counter()
    for _ in range(calls):
        function(starts)
    return (time.perf_counter() - began) / calls * 1e6


def measure(
    function: Callable[[torch.Tensor], object], starts: torch.Tensor, calls: int
) -> dict[int, float]:
    """Median microseconds a call on one and two threads, over three alternating rounds."""
    seen: dict[int, list[float]] = {1: [], 2: []}
    for _ in range(3):
        for threads in (1, 2):
            torch.set_num_threads(threads)
            seen[threads].append(per_call(function, starts, calls))
    return {t: statistics.median(v) for t, v in seen.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--busy", type=int, default=2, help="busy torch processes beside it")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args(argv)
    if not DATA.exists():
        raise SystemExit(f"posteriordb's data is not at {DATA}")
    function, starts = recorded_potential()
    figures = {"idle": measure(function, starts, args.calls)}
    spinning = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(args.busy)]
    try:
        time.sleep(3.0)  # torch imported and the loops running
        figures[f"{args.busy} busy"] = measure(function, starts, args.calls)
    finally:
        for p in spinning:
            p.kill()
            p.wait()
    print(f"{NAME}: recorded potential of 4 chains, us a call (median of 3 rounds)")
    print(f"{'machine':>10} {'1 thread':>10} {'2 threads':>10} {'2 / 1':>7}")
    for label, us in figures.items():
        print(f"{label:>10} {us[1]:10.1f} {us[2]:10.1f} {us[2] / us[1]:7.2f}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
