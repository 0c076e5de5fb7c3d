"""A recurrence over time at 250 and 1,000 steps: GARCH(1,1) fitted by qvr's NUTS (issue 49).

    .venv/bin/python bench/recurrence.py [--steps 250,1000] [--draws 1000] [--warmup 1000]
        [--chains 4] [--seed 1] [--evals 200]

The model is examples/posteriordb/garch-garch11.qvr (posteriordb's garch11 as a user
writes it: its variance carried by `linear_recurrence`, the previous residual by `lag`,
beta1 flat on (0, 1 - alpha1)), its `Time` plate set to each length; the data are a
GARCH(1,1) series of that length drawn here (mu 5, alpha0 1.5, alpha1 0.5, beta1 0.3,
sigma1 0.5, numpy seed 0), so each length's posterior is a real one of the same model.

Printed per length, all in this run on this machine:
- one log-joint gradient (log joint and backward at the posterior mean, one torch
  thread, the median of `--evals`): qvr's compiled program (the doubling scan), and the
  same log joint with the variance computed by a Python loop of T steps (what a
  recurrence costs without a scan), the baseline;
- the whole one-click NUTS run (`qvr_core.runs.run.run_program`, `--chains` x (`--warmup`
  + `--draws`), default settings): seconds of sampling, mean leapfrog steps (gradients)
  per draw, sampling seconds per (draw x leapfrog step), min bulk ESS, ESS per second,
  divergences, max R-hat;
- the ratios of the longest length to the shortest: linear in T is the length ratio (4.0
  for 1,000 / 250); the loop's per-gradient ratio beside it.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from qvr_core.check import check  # noqa: E402
from qvr_core.inference.results import RunResults  # noqa: E402
from qvr_core.runs.run import run_program  # noqa: E402
from qvr_core.runtime.model import compile_model  # noqa: E402

EXAMPLE = ROOT / "examples" / "posteriordb" / "garch-garch11.qvr"
TRUTH = {"mu": 5.0, "alpha0": 1.5, "alpha1": 0.5, "beta1": 0.3}
SIGMA1 = 0.5


def series(steps: int) -> list[float]:
    """A GARCH(1,1) series of `steps` values, drawn as the model says."""
    rng = np.random.default_rng(0)
    y, sigma = [], SIGMA1
    for t in range(steps):
        if t:
            sigma = math.sqrt(
                TRUTH["alpha0"]
                + TRUTH["alpha1"] * (y[-1] - TRUTH["mu"]) ** 2
                + TRUTH["beta1"] * sigma**2
            )
        y.append(float(rng.normal(TRUTH["mu"], sigma)))
    return y


def source(steps: int) -> str:
    """The example with its `Time` plate `steps` long."""
    text = EXAMPLE.read_text(encoding="utf-8")
    head, sep, rest = text.partition("object Time : FinSet ")
    return head + sep + str(steps) + rest[rest.index("\n") :]


def _timed(fn: object, evals: int) -> float:
    for _ in range(5):  # first calls allocate and warm caches: not timed
        fn()  # type: ignore[operator]
    times = []
    for _ in range(evals):
        began = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append(time.perf_counter() - began)
    return statistics.median(times)


def gradient_seconds(text: str, y: list[float], evals: int) -> tuple[float, float]:
    """One log-joint gradient: qvr's compiled program, and the same joint with the
    variance computed by a loop of T steps (the baseline)."""
    module = check(text)
    program = compile_model(module, module.exports[0])
    yt = torch.tensor(y, dtype=torch.float64)
    point = {k: torch.tensor(v, dtype=torch.float64, requires_grad=True) for k, v in TRUTH.items()}
    data = {"sigma1": torch.tensor(SIGMA1, dtype=torch.float64)}

    def qvr() -> None:
        for v in point.values():
            v.grad = None
        program.log_joint(data, {**point, "y": yt}).sum().backward()

    def loop() -> None:
        for v in point.values():
            v.grad = None
        mu, a0, a1, b1 = (point[k] for k in ("mu", "alpha0", "alpha1", "beta1"))
        variance = [torch.tensor(SIGMA1**2, dtype=torch.float64)]
        for t in range(1, len(y)):
            variance.append(a0 + a1 * (yt[t - 1] - mu) ** 2 + b1 * variance[-1])
        sigma = torch.sqrt(torch.stack(variance))
        torch.distributions.Normal(mu, sigma).log_prob(yt).sum().backward()

    torch.set_num_threads(1)
    return _timed(qvr, evals), _timed(loop, evals)


def fit(text: str, y: list[float], args: argparse.Namespace) -> dict[str, float]:
    import arviz as az

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "garch.json"
        path.write_text(json.dumps({"y": y, "sigma1": SIGMA1}), encoding="utf-8")
        results = RunResults()
        summary = run_program(
            text,
            path=str(EXAMPLE),
            data=str(path),
            method="nuts",
            steps=args.warmup + args.draws,
            chains=args.chains,
            seed=args.seed,
            results=results,
        )
    assert summary.nuts is not None
    posterior = results.groups["posterior"]
    draws = {k: np.asarray(posterior[k]) for k in TRUTH}
    ess = min(float(az.ess(v)) for v in draws.values())
    rhat = max(float(az.rhat(v)) for v in draws.values())
    steps = np.asarray(results.groups["sample_stats"]["n_steps"])
    return {
        "seconds": summary.seconds,
        "leapfrog": float(steps.mean()),
        "ess": ess,
        "rhat": rhat,
        "divergences": float(summary.nuts.divergences),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", default="250,1000")
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--warmup", type=int, default=1000)
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--evals", type=int, default=200)
    args = parser.parse_args()
    lengths = [int(s) for s in args.steps.split(",")]
    rows = []
    for steps in lengths:
        y = series(steps)
        text = source(steps)
        scan, loop = gradient_seconds(text, y, args.evals)
        torch.set_num_threads(1)
        got = fit(text, y, args)
        rows.append((steps, scan, loop, got))
    print(f"GARCH(1,1), {args.chains} chains x ({args.warmup} + {args.draws}), seed {args.seed}")
    print(
        "| T | gradient ms (scan) | gradient ms (loop) | loop / scan | sampling s "
        "| leapfrog / draw | ms per draw-step | min bulk ESS | ESS / s | div | R-hat |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for steps, scan, loop, got in rows:
        iterations = args.chains * (args.warmup + args.draws)
        per = 1e3 * got["seconds"] / (iterations * got["leapfrog"])
        print(
            f"| {steps} | {1e3 * scan:.3f} | {1e3 * loop:.3f} | {loop / scan:.1f}x "
            f"| {got['seconds']:.2f} | {got['leapfrog']:.1f} | {per:.3f} | {got['ess']:.0f} "
            f"| {got['ess'] / got['seconds']:.1f} | {got['divergences']:.0f} | {got['rhat']:.4f} |"
        )
    if len(rows) > 1:
        (t0, s0, l0, g0), (t1, s1, l1, g1) = rows[0], rows[-1]
        print(
            f"{t1} / {t0} steps ({t1 / t0:.1f}x): gradient (scan) {s1 / s0:.2f}x, "
            f"gradient (loop) {l1 / l0:.2f}x, sampling seconds {g1['seconds'] / g0['seconds']:.2f}x"
        )


if __name__ == "__main__":
    main()
