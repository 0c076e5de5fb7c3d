"""The resource model against measured memory, and what sizing costs the checker.

For each configuration a fresh process imports torch, compiles nothing yet,
records its resident memory, runs 3 steps of `run_inference` (the budget
check passes: it is raised to 1 PB) and records its peak resident memory;
the figure printed is peak minus baseline next to the model's estimate, and
their ratio (estimate / measured: above 1 the model errs on the safe side).
Seed programs are sized by `qvr_core.sizing.resources`, model programs (plates,
`marginalize` scopes) by `qvr_core.sizing.model_resources`.

Then the checker: `check` on generated files of 5,000 and 50,000 lines with
QVR601's pass (sizing every exported program) and with it switched off, the
same run.

    .venv/bin/python bench/resources.py
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from tests.resources.hostile import BASE  # noqa: E402
from tests.resources.hostile_models import PLATE, nested  # noqa: E402

CONFIGS = [
    ("vanilla svi b16 L8", "examples/vanilla_rnn_lm.qvr", {"batch": 16, "seq_len": 8}),
    ("vanilla svi b256 L64", "examples/vanilla_rnn_lm.qvr", {"batch": 256, "seq_len": 64}),
    ("vanilla nuts b16 L8", "examples/vanilla_rnn_lm.qvr", {"method": "nuts", "steps": 6}),
    ("vanilla prior b256", "examples/vanilla_rnn_lm.qvr", {"method": "prior", "batch": 256}),
    ("bert svi b64 L16", "examples/bert_mlm.qvr", {"batch": 64, "seq_len": 16}),
    ("Hidden 1,000,000 svi", BASE.format(hidden=1_000_000, middle=""), {}),
    ("stack(step, 2000) svi", BASE.format(hidden=16, middle="stack(step, 2000) >> "), {}),
    ("repeat(step, 20000) svi", BASE.format(hidden=16, middle="repeat(step, 20000) >> "), {}),
    ("model hmm svi", "examples/models/hmm.qvr", {"steps": 20}),
    ("model plate 100,000 svi", PLATE.format(size=100_000), {}),
    ("model plate 100,000 nuts", PLATE.format(size=100_000), {"method": "nuts", "steps": 40}),
    ("model plate 1,000,000 prior", PLATE.format(size=1_000_000), {"method": "prior"}),
    ("model 10 scopes x 10 svi", nested(10), {}),
    ("model 6 scopes x 100,000 svi", nested(6, points=100_000), {}),
]

CHILD = r"""
import json, resource, sys
import torch
from qvr_core.check import check
from qvr_core.runs.run import run_inference
from qvr_core.sizing.model_resources import estimate_model
from qvr_core.sizing.resources import estimate
source, kwargs = json.loads(sys.stdin.read())
torch.set_num_threads(1)
module = check(source)
name = module.default_export
args = {"steps": 3, **kwargs}
if name in module.models:  # one chain: the chains' processes are not this one's memory
    args["chains"] = 1
    need = estimate_model(module, name, method=args.get("method", "svi"), steps=args["steps"])
else:
    need = estimate(module, name, method=args.get("method", "svi"), batch=args.get("batch", 16),
                    seq_len=args.get("seq_len", 8), steps=args["steps"])
with open("/proc/self/statm") as f:
    base = int(f.read().split()[1]) * resource.getpagesize()
run_inference(source, memory_budget=1 << 50, **args)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"estimate": need.total, "measured": peak - base}))
"""


def measure(source: str, kwargs: dict) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", CHILD],
        input=json.dumps([source, kwargs]),
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def mb(n: float) -> str:
    return f"{n / 1e6:9.1f} MB"


def memory() -> None:
    print(f"{'configuration':28} {'estimate':>12} {'measured':>12} {'ratio':>7}")
    for label, where, kwargs in CONFIGS:
        source = (ROOT / where).read_text() if where.endswith(".qvr") else where
        r = measure(source, kwargs)
        ratio = r["estimate"] / max(r["measured"], 1)
        print(f"{label:28} {mb(r['estimate'])} {mb(r['measured'])} {ratio:7.2f}")


def checker() -> None:
    from generated import generate

    import qvr_core.check.checker as checker_module
    from qvr_core.check import check
    from qvr_core.check.incremental import IncrementalChecker

    real = checker_module.size_warnings
    for lines in (5_000, 50_000):
        text = generate(lines)
        mid = len(text) // 2
        edited = text[:mid] + "x" + text[mid:]
        timings = {}
        for label, sizing in (("with QVR601", real), ("without", lambda *a: [])):
            checker_module.size_warnings = sizing
            scratch = min(_timed(check, text) for _ in range(3))
            incremental = IncrementalChecker()
            incremental.check(text)
            edits = [_timed(incremental.check, t) for t in (edited, text) * 3]
            timings[label] = (scratch, min(edits))
        checker_module.size_warnings = real
        for i, what in enumerate(("check from scratch", "re-check after an edit")):
            with_, without = timings["with QVR601"][i], timings["without"][i]
            print(
                f"{lines:6,} lines, {what:22}: {with_ * 1000:8.1f} ms with sizing, "
                f"{without * 1000:8.1f} ms without (x{with_ / without:.2f})"
            )


def _timed(fn, *args) -> float:
    start = time.perf_counter()
    fn(*args)
    return time.perf_counter() - start


if __name__ == "__main__":
    memory()
    checker()
