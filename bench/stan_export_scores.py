"""qvr's Stan export of each posteriordb example, compiled and scored against qvr (issue 49).

    .venv/bin/python bench/stan_export_scores.py [--models NAME,NAME] [--posteriordb DIR]

For each program in examples/posteriordb (the ones bench/posteriordb.py fits): `qvr export
--to stan`, then either the QVR701 problems that say which construct Stan's export cannot
write, or the program built by PyStan 3 on the same data file qvr reads (`Spec.data` of
bench/posteriordb.py applied to posteriordb's data.json) and scored at two points: the
points qvr's NUTS chains start from under seeds 0 and 1 (each latent uniform in (-2, 2)
unconstrained). Stan's `~` statements drop each density's constants, so the figure
compared is the difference of the log density between the two points (no Jacobian on
either side), Stan's against qvr's log joint: their relative gap is printed, with
PyStan's compile time (httpstan caches a build by its text).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.posteriordb import DEFAULT_DB, EXPRESSIBLE, MODELS  # noqa: E402
from qvr_core.check import check  # noqa: E402
from qvr_core.export import TARGETS, export_program, exportable_programs  # noqa: E402
from qvr_core.runs.model_data import split_data  # noqa: E402
from qvr_core.runtime.model import compile_model  # noqa: E402


def qvr_point(module: Any, program: str, data: dict[str, Any], seed: int) -> tuple[dict, float]:
    """The point qvr's NUTS starts from under `seed`, and qvr's log joint there."""
    compiled = compile_model(module, program)
    tensors = {
        k: torch.tensor(
            np.asarray(v), dtype=None if np.asarray(v).dtype.kind == "i" else torch.float64
        )
        for k, v in data.items()
    }
    x, observed = split_data(compiled, tensors, "data.json")
    torch.manual_seed(seed)
    start = compiled.initial_values(x, observed)
    point = {s.name: start[s.name].double() for s in compiled.model.sites if s.kind == "sample"}
    with torch.no_grad():
        joint = float(compiled.log_joint(x, {**point, **observed}).reshape(-1)[0])
    return {k: v.numpy().tolist() for k, v in point.items()}, joint


def main() -> None:
    import stan

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default=",".join(EXPRESSIBLE))
    parser.add_argument("--posteriordb", type=Path, default=DEFAULT_DB)
    args = parser.parse_args()
    print("| posterior | Stan export | compile s | Stan diff | qvr diff | relative gap |")
    print("|---|---|---|---|---|---|")
    for name in args.models.split(","):
        module = check((MODELS / f"{name}.qvr").read_text(encoding="utf-8"))
        (program,) = exportable_programs(module)
        result = export_program(module, TARGETS["stan"], program, source=f"{name}.qvr")
        if result.text is None:
            why = "; ".join(sorted({d.message.split(": ", 1)[-1] for d in result.diagnostics}))
            print(f"| {name} | QVR701: {why} | | | | |")
            continue
        real = json.loads((args.posteriordb / name / "data.json").read_text(encoding="utf-8"))
        data = json.loads(json.dumps(EXPRESSIBLE[name].data(real)))
        began = time.perf_counter()
        model = stan.build(result.text, data=data, random_seed=1)
        compiled = time.perf_counter() - began
        (p1, j1), (p2, j2) = (qvr_point(module, program, data, s) for s in (0, 1))
        u1, u2 = (list(model.unconstrain_pars(p)) for p in (p1, p2))
        ours = model.log_prob(u1, adjust_transform=False) - model.log_prob(
            u2, adjust_transform=False
        )
        theirs = j1 - j2
        gap = abs(ours - theirs) / max(abs(theirs), 1e-12)
        print(f"| {name} | written | {compiled:.1f} | {ours:.6f} | {theirs:.6f} | {gap:.1e} |")


if __name__ == "__main__":
    main()
