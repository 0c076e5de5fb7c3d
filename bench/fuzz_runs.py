"""Fuzz `qvr run` with generated model programs and data files (issue #24).

    .venv/bin/python bench/fuzz_runs.py [--cases 1000] [--seed 0] [--jobs 2]
        [--timeout 60] [--keep DIR] [--memory-limit 4GB] [--start 0] [--json FILE]

Case `i` of seed `s` is always the same case (`tests.fuzz.generators.make_case`):
a model program (from the registry's templates, a mutated template, a mutated
real file or an example model) with a data file (JSON, CSV, .npz or .pt;
right or wrong on purpose) and few-step run arguments. Each runs in a worker
process through `qvr run`'s own entry under a per-case timeout
(`tests.fuzz.driver`) and is sorted into ok, clean refusal or failure.

Prints the counts per outcome (and per origin of the program), the time per
case, and every distinct failure (by kind, exception type and innermost qvr
frame) with a minimised repro: its program, data, command line and the last
lines of its traceback; with `--keep DIR` the repro's files go under
DIR/NN-<signature>/. The goal is no failure at all. Exit status 1 when there
is one.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from qvr_core.sizing.resources import parse_size  # noqa: E402
from tests.fuzz.driver import (  # noqa: E402
    DEFAULT_MEMORY_LIMIT,
    DEFAULT_TIMEOUT,
    FAILURE,
    Outcome,
    Worker,
    command_line,
    describe_data,
    minimise,
    run_cases,
    save_repro,
)
from tests.fuzz.generators import make_case  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--start", type=int, default=0, help="the first case's index")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, help="seconds a case")
    parser.add_argument(
        "--memory-limit", default=f"{DEFAULT_MEMORY_LIMIT >> 20}MiB", help="per worker (RLIMIT_AS)"
    )
    parser.add_argument("--keep", type=Path, help="save each failure's minimised repro here")
    parser.add_argument("--scratch", type=Path, help="run the cases here (default: a temp dir)")
    parser.add_argument("--no-minimise", action="store_true")
    parser.add_argument("--json", type=Path, help="write the outcomes as JSON")
    parser.add_argument("--quiet", action="store_true", help="no line per failure as it happens")
    args = parser.parse_args(argv)
    memory_limit = parse_size(args.memory_limit)

    cases = [make_case(args.seed, i) for i in range(args.start, args.start + args.cases)]
    started = time.perf_counter()
    done = 0

    def progress(o: Outcome) -> None:
        nonlocal done
        done += 1
        if o.status == FAILURE and not args.quiet:
            print(f"  case {o.case.index}: {o.signature}", flush=True)
        if done % 50 == 0:
            rate = done / (time.perf_counter() - started)
            print(f"[{done}/{len(cases)}] {rate:.2f} cases/s", file=sys.stderr, flush=True)

    outcomes = run_cases(
        cases,
        jobs=args.jobs,
        timeout=args.timeout,
        memory_limit=memory_limit,
        scratch=args.scratch,
        on_outcome=progress,
    )
    wall = time.perf_counter() - started
    report(outcomes, wall, args.jobs)
    failures = [o for o in outcomes if o.status == FAILURE]
    groups: dict[str, list[Outcome]] = {}
    for o in failures:
        groups.setdefault(o.signature, []).append(o)
    reduced: dict[str, Outcome] = {}
    if groups:
        with tempfile.TemporaryDirectory(prefix="qvr-fuzz-minimise-") as tmp:
            scratch = args.scratch / "minimise" if args.scratch else Path(tmp)
            scratch.mkdir(parents=True, exist_ok=True)
            worker = Worker(args.timeout, memory_limit, scratch)
            try:
                for sig, group in groups.items():
                    first = min(group, key=lambda o: len(o.case.program))
                    reduced[sig] = first if args.no_minimise else minimise(worker, first, scratch)
            finally:
                worker.stop()
    print_failures(groups, reduced, args.keep)
    if args.json is not None:
        args.json.write_text(json.dumps([_as_json(o) for o in outcomes], indent=1) + "\n")
    return 1 if failures else 0


def report(outcomes: list[Outcome], wall: float, jobs: int) -> None:
    n = len(outcomes)
    kinds = Counter(o.kind for o in outcomes)
    status = Counter(o.status for o in outcomes)
    print(f"\n{n} cases in {wall:.1f} s on {jobs} workers ({wall / max(n, 1):.2f} s a case)")
    for s in ("ok", "refusal", FAILURE):
        extra = ""
        if s == FAILURE and status[s]:
            extra = (
                " ("
                + ", ".join(f"{k} {v}" for k, v in kinds.items() if k not in ("ok", "refusal"))
                + ")"
            )
        print(f"  {s:8} {status[s]:5}{extra}")
    by_origin: dict[str, Counter[str]] = {}
    for o in outcomes:
        by_origin.setdefault(o.case.origin, Counter())[o.status] += 1
    print("  by origin:")
    for origin, c in sorted(by_origin.items()):
        print(f"    {origin:9} " + ", ".join(f"{k} {c[k]}" for k in ("ok", "refusal", FAILURE)))
    methods: dict[str, list[float]] = {}
    for o in outcomes:
        methods.setdefault(o.case.args[1], []).append(o.seconds)
    print("  seconds a case (median / mean / max):")
    for m, secs in sorted(methods.items()):
        print(
            f"    {m:6} {len(secs):4} cases  {statistics.median(secs):.2f} / "
            f"{statistics.fmean(secs):.2f} / {max(secs):.2f}"
        )
    wf = [
        o for o in outcomes if o.case.well_formed and o.case.data is not None and o.case.data.right
    ]
    if wf:
        ok = sum(o.status == "ok" for o in wf)
        print(f"  well-formed programs with right data: {ok}/{len(wf)} ran ok")
    remarks = Counter(r for o in outcomes for r in o.remarks)
    if remarks:
        print("  remarks (not failures): " + ", ".join(f"{k} {v}" for k, v in remarks.items()))


def print_failures(
    groups: dict[str, list[Outcome]], reduced: dict[str, Outcome], keep: Path | None
) -> None:
    if not groups:
        print("\nno failures")
        return
    print(f"\n{len(groups)} distinct failures:")
    for n, (sig, group) in enumerate(sorted(groups.items(), key=lambda g: -len(g[1])), 1):
        o = reduced[sig]
        cases = ", ".join(str(g.case.index) for g in group[:12])
        more = f" (+{len(group) - 12})" if len(group) > 12 else ""
        print(f"\n=== {n}. {sig}\n  {len(group)} cases: {cases}{more}")
        argv = ["run", "model.qvr"]
        if o.case.data_file is not None:
            argv += ["--data", o.case.data_file]
        print(f"  command: {command_line(argv + list(o.case.args))}")
        print(f"  data: {describe_data(o.case.data)}")
        print("  program:")
        for line in o.case.program.rstrip().splitlines():
            print(f"    | {line}")
        print("  last lines:")
        for line in o.tail().splitlines():
            print(f"    {line}")
        if keep is not None:
            slug = re.sub(r"[^A-Za-z0-9]+", "-", sig).strip("-")[:80]
            where = save_repro(o, keep / f"{n:02d}-{slug}")
            print(f"  saved: {where}")


def _as_json(o: Outcome) -> dict[str, object]:
    return {
        "index": o.case.index,
        "origin": o.case.origin,
        "status": o.status,
        "kind": o.kind,
        "signature": o.signature,
        "rc": o.rc,
        "seconds": round(o.seconds, 3),
        "args": list(o.case.args),
        "notes": list(o.case.notes),
        "remarks": o.remarks,
        "stderr_tail": o.stderr[-2000:],
    }


if __name__ == "__main__":
    sys.exit(main())
