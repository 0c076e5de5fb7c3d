"""What joining a recorded potential's operations saves (`inference.simplify`, `join`).

    .venv/bin/python bench/potential_operations.py [--calls 1500] [--rounds 5] [NAME ...]

For each posteriordb posterior written in examples/posteriordb (or those named), the
potential and gradient of four chains is recorded as NUTS records it
(`inference.many.compiled_potential`) twice: with the runs of operations by constants,
the shape changes and the gradient's slices joined (what `qvr run` uses), and without
(the baseline). Printed per model: the operations of each graph, the microseconds a call
of each on one torch thread (median of `--rounds` alternating rounds), their ratio, and
whether the two give the same values and gradients bit for bit, which the joins promise.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.sampling_threads import recorded  # noqa: E402

MODELS = ROOT / "examples" / "posteriordb"
DATA = ROOT.parent / "shared" / "posteriordb"
Call = Callable[[torch.Tensor], tuple[torch.Tensor, ...]]


def both(name: str) -> tuple[Call, Call, torch.Tensor] | None:
    """The joined and the unjoined recorded potential of four chains, and their starts."""
    data = DATA / name / "data.json"
    model = MODELS / f"{name}.qvr"
    joined, starts = recorded(model, data if data.is_file() else None)
    written, _ = recorded(model, data if data.is_file() else None, join=False)
    if joined is None or written is None:
        return None
    return joined, written, starts


def operations(function: Call) -> int | None:
    """The aten operations a call of a recorded potential runs (Static Runtime's graph, or
    the traced module's where Static Runtime did not take it)."""
    counted = getattr(function, "operations", None)
    if isinstance(counted, int):
        return counted
    graph = getattr(function, "graph", None)
    if graph is None:
        return None
    return sum(1 for n in graph.nodes() if n.kind().startswith("aten::"))


def per_call(function: Call, starts: torch.Tensor, calls: int) -> float:
    for _ in range(20):
        function(starts)
    began = time.perf_counter()
    for _ in range(calls):
        function(starts)
    return (time.perf_counter() - began) / calls * 1e6


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("names", nargs="*", help="posteriordb names (default: every example)")
    parser.add_argument("--calls", type=int, default=1500)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    names = args.names or sorted(p.stem for p in MODELS.glob("*.qvr"))
    print(f"{'model':<42} {'ops':>9} {'us joined':>10} {'us as written':>14} {'ratio':>6}  same")
    ratios = []
    for name in names:
        found = both(name)
        if found is None:
            print(f"{name:<42} not recorded (runs eagerly)")
            continue
        joined, written, starts = found
        same = all(torch.equal(a, b) for a, b in zip(joined(starts), written(starts), strict=True))
        seen: dict[str, list[float]] = {"joined": [], "written": []}
        for _ in range(args.rounds):
            seen["written"].append(per_call(written, starts, args.calls))
            seen["joined"].append(per_call(joined, starts, args.calls))
        a, b = statistics.median(seen["joined"]), statistics.median(seen["written"])
        ratios.append(a / b)
        ops = f"{operations(joined)}/{operations(written)}"
        print(f"{name:<42} {ops:>9} {a:>10.1f} {b:>14.1f} {a / b:>6.3f}  {same}")
    if ratios:
        print(f"median ratio joined / as written: {statistics.median(ratios):.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
