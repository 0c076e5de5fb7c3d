"""Models' recorded potentials on one and on two torch threads, on an idle machine and
beside a busy process, with the thread count NUTS chooses for each
(`qvr_core.inference.threads`: one, unless the arithmetic in operations torch can split
is counted at 1 ms or more).

    .venv/bin/python bench/sampling_threads.py [--calls 300] [--busy 1] [--spin-threads 1]
        [--only NAME]

The models:
- posteriordb's gp_pois_regr as `examples/posteriordb` writes it (a Cholesky factor of
  an 11 x 11 covariance per chain: torch splits the batched factorisation by matrix);
- lifted networks, every weight a coordinate as `qvr run --method nuts` samples them on
  synthetic data: the corpus's `seq2seq@12d1a14`, `transformer_lm@12d1a14` and
  `gru_lm@12d1a14`, the gallery's `vanilla_rnn_lm` and `rlstm_lm`;
- `examples/models/linear_regression.qvr` over 200,000 rows (its plate widened, data
  drawn with a fixed seed): few operations, each a whole column.

Each potential and gradient is recorded for four chains as NUTS records it
(`inference.many.compiled_potential`). Printed per model: the counted arithmetic
(all of it, and the part in operations torch splits), the threads NUTS chooses, and
microseconds a call on one and on two intra-op threads (median of three alternating
rounds), first with nothing else running, then beside `--busy` processes that keep
cores busy (another run, a test suite's other worker: each on `--spin-threads` of
torch's threads), with the ratio of two threads to one.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import cast

import torch

from qvr_core.inference.many import compiled_potential
from qvr_core.inference.mcmc import ProgramPotential, chain_layout, initial_values
from qvr_core.inference.sites import ProgramLike
from qvr_core.inference.threads import sampling_threads
from qvr_core.inference.work import Work, count_work
from qvr_core.plan.run_arguments import RunArguments
from qvr_core.runs.methods import lift_parameters
from qvr_core.runs.prepare import prepare
from qvr_core.runtime.program import ProgramModule

ROOT = Path(__file__).resolve().parents[1]
POSTERIORDB = ROOT.parent / "shared" / "posteriordb"
CORPUS = ROOT.parent / "shared" / "corpus" / "docs__examples__source"
NAME = "gp_pois_regr-gp_pois_regr"
MODEL = ROOT / "examples" / "posteriordb" / f"{NAME}.qvr"
DATA = POSTERIORDB / NAME / "data.json"
#: The rows of the wide regression.
ROWS = 200_000
#: What a busy process runs: small dense arithmetic, over and over, as another run or a
#: test suite's other worker does, on `{threads}` of torch's threads (0: its default).
SPIN = (
    "import torch\n"
    "if {threads}: torch.set_num_threads({threads})\n"
    "a = torch.randn(16, 8, 8, dtype=torch.float64)\n"
    "k = a @ a.mT + torch.eye(8, dtype=torch.float64)\n"
    "while True:\n"
    "    torch.linalg.cholesky(k)\n"
)
Recorded = Callable[[torch.Tensor], tuple[torch.Tensor, ...]]


def recorded(
    model: Path, data: Path | None, *, join: bool = True
) -> tuple[Recorded | None, torch.Tensor]:
    """A model's recorded potential of four chains (None where it cannot be recorded)
    and four starts beside one another; `join` as `inference.simplify` takes it."""
    function, starts, _ = _recorded(model, data, join=join)
    return function, starts


def _recorded(
    model: Path, data: Path | None, *, join: bool = True
) -> tuple[Recorded | None, torch.Tensor, Work]:
    """`recorded`, and the work of one eager evaluation (`inference.work`). A seed
    program's weights are lifted to coordinates, as NUTS samples them."""
    source = model.read_text(encoding="utf-8")
    run = prepare(source, RunArguments(method="nuts"), data=str(data) if data else None)
    program: ProgramLike = run.program
    x, observations = run.x, dict(run.observations)
    if isinstance(run.program, ProgramModule):  # a seed program's input: a tensor
        assert not isinstance(run.x, dict)
        program, x, observations = lift_parameters(run.program, run.x, observations)
    layout = chain_layout(program, x, observations)
    potential = ProgramPotential(program, x, observations, layout)
    torch.manual_seed(0)
    start = layout.pack(initial_values(program, x, observations))
    starts = torch.stack([start + 0.1 * k for k in range(4)])
    work = count_work(lambda: potential(start))
    function = compiled_potential(potential, potential.log_density, starts, join=join)
    return function, starts, work


def recorded_potential() -> tuple[Callable[[torch.Tensor], object], torch.Tensor]:
    """gp_pois_regr's recorded potential of four chains and four starts."""
    function, starts = recorded(MODEL, DATA)
    if function is None:
        raise SystemExit("the potential could not be recorded")
    return function, starts


def wide_regression(folder: Path) -> tuple[Path, Path]:
    """`examples/models/linear_regression.qvr` over `ROWS` rows, and its data."""
    source = (ROOT / "examples" / "models" / "linear_regression.qvr").read_text(encoding="utf-8")
    model = folder / "wide_regression.qvr"
    model.write_text(source.replace("FinSet 50", f"FinSet {ROWS}"), encoding="utf-8")
    g = torch.Generator().manual_seed(0)
    x = torch.randn(ROWS, generator=g, dtype=torch.float64)
    y = 1.0 + 2.0 * x + torch.randn(ROWS, generator=g, dtype=torch.float64)
    data = folder / "wide_regression.json"
    data.write_text(json.dumps({"x": x.tolist(), "y": y.tolist()}), encoding="utf-8")
    return model, data


def models(folder: Path) -> dict[str, tuple[Path, Path | None]]:
    """The benched models by name: their source and data (None: synthetic)."""
    return {
        "gp_pois_regr": (MODEL, DATA),
        "seq2seq@12d1a14": (CORPUS / "seq2seq@12d1a14.qvr", None),
        "transformer_lm@12d1a14": (CORPUS / "transformer_lm@12d1a14.qvr", None),
        "gru_lm@12d1a14": (CORPUS / "gru_lm@12d1a14.qvr", None),
        "vanilla_rnn_lm": (ROOT / "examples" / "vanilla_rnn_lm.qvr", None),
        "rlstm_lm": (ROOT / "examples" / "rlstm_lm.qvr", None),
        f"regression, {ROWS:,} rows": wide_regression(folder),
    }


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
    parser.add_argument("--busy", type=int, default=1, help="busy processes beside it")
    parser.add_argument(
        "--spin-threads",
        type=int,
        default=1,
        help="torch threads of each busy process (0: torch's default, a thread per core)",
    )
    parser.add_argument("--only", help="only the models whose name has this")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args(argv)
    if not DATA.exists() or not CORPUS.exists():
        raise SystemExit(f"the shared models are not under {ROOT.parent / 'shared'}")
    figures: dict[str, dict[str, object]] = {}
    with tempfile.TemporaryDirectory(prefix="qvr-threads-") as folder:
        chosen = {n: m for n, m in models(Path(folder)).items() if (args.only or "") in n}
        ready = {}
        for name, (model, data) in chosen.items():
            function, starts, work = _recorded(model, data)
            if function is None:
                print(f"{name}: the potential could not be recorded", file=sys.stderr)
                continue
            ready[name] = (function, starts)
            figures[name] = {
                "arithmetic_ms": work.arithmetic_seconds * 1e3,
                "split_ms": work.split_seconds * 1e3,
                "threads": sampling_threads(work),
            }
        for name, (function, starts) in ready.items():
            figures[name]["idle"] = measure(function, starts, args.calls)
        spin = SPIN.format(threads=args.spin_threads)
        spinning = [subprocess.Popen([sys.executable, "-c", spin]) for _ in range(args.busy)]
        try:
            time.sleep(3.0)  # torch imported and the loops running
            for name, (function, starts) in ready.items():
                figures[name]["busy"] = measure(function, starts, args.calls)
        finally:
            for p in spinning:
                p.kill()
                p.wait()
    print("recorded potentials of 4 chains, us a call (median of 3 rounds)")
    threads = args.spin_threads or "default"
    print(
        f"  idle: nothing else running; busy: beside {args.busy} busy process(es)"
        f" on {threads} threads each"
    )
    print(
        f"{'model':>26} {'arith ms':>8} {'split ms':>8} {'chosen':>6}"
        f" {'idle 1':>9} {'idle 2':>9} {'2/1':>5} {'busy 1':>9} {'busy 2':>9} {'2/1':>5}"
    )
    for name, f in figures.items():
        idle, busy = cast(dict[int, float], f["idle"]), cast(dict[int, float], f["busy"])
        print(
            f"{name:>26} {f['arithmetic_ms']:8.2f} {f['split_ms']:8.2f} {f['threads']:>6}"
            f" {idle[1]:9.1f} {idle[2]:9.1f} {idle[2] / idle[1]:5.2f}"
            f" {busy[1]:9.1f} {busy[2]:9.1f} {busy[2] / busy[1]:5.2f}"
        )
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
