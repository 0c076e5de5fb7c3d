"""Recurrences over time at 250 and 1,000 steps, fitted by qvr's NUTS (issue 49): a
GARCH(1,1) variance and a hidden Markov chain.

    .venv/bin/python bench/recurrence.py [--model garch,hmm] [--steps 250,1000]
        [--draws 1000] [--warmup 1000] [--chains 4] [--seed 1] [--evals 200]

The models are the posteriordb examples as a user writes them, their `Time` plate set to
each length:
- garch: examples/posteriordb/garch-garch11.qvr (the variance carried by
  `linear_recurrence`, the previous residual by `lag`, beta1 flat on (0, 1 - alpha1));
  data a GARCH(1,1) series drawn here (mu 5, alpha0 1.5, alpha1 0.5, beta1 0.3, sigma1
  0.5);
- hmm: examples/posteriordb/hmm_example-hmm_example.qvr (two hidden states summed out by
  `MarkovChain`'s forward algorithm, positive ordered means); data a chain drawn here
  (transition rows (0.7, 0.3) and (0.07, 0.93), means 3 and 9, scale 1).
Each series is drawn with numpy seed 0, so each length's posterior is a real one of the
same model.

Printed per model and length, all in this run on this machine:
- one log-joint gradient (log joint and backward at the truth, one torch thread, the
  median of `--evals`): qvr's compiled program (a doubling scan, a pairwise reduction),
  and the same log joint computed by a Python loop of T steps (the variance recursion;
  the textbook forward recursion), the baseline;
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
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from qvr_core.check import check  # noqa: E402
from qvr_core.inference.results import RunResults  # noqa: E402
from qvr_core.runs.run import run_program  # noqa: E402
from qvr_core.runtime.model import compile_model  # noqa: E402

EXAMPLES = ROOT / "examples" / "posteriordb"
F64 = torch.float64
Point = dict[str, torch.Tensor]


@dataclass(frozen=True)
class Case:
    """One model: its example, its truth (where the gradient is timed), the data of a
    series of T steps drawn from it, and its log joint by a loop of T steps."""

    title: str
    example: Path
    truth: dict[str, Any]
    data: Callable[[int], dict[str, Any]]
    loop: Callable[[Point, dict[str, torch.Tensor]], torch.Tensor]


GARCH_TRUTH = {"mu": 5.0, "alpha0": 1.5, "alpha1": 0.5, "beta1": 0.3}
SIGMA1 = 0.5


def garch_data(steps: int) -> dict[str, Any]:
    """A GARCH(1,1) series of `steps` values, drawn as the model says."""
    rng = np.random.default_rng(0)
    t = GARCH_TRUTH
    y: list[float] = []
    sigma = SIGMA1
    for step in range(steps):
        if step:
            sigma = math.sqrt(
                t["alpha0"] + t["alpha1"] * (y[-1] - t["mu"]) ** 2 + t["beta1"] * sigma**2
            )
        y.append(float(rng.normal(t["mu"], sigma)))
    return {"y": y, "sigma1": SIGMA1}


def garch_loop(point: Point, data: dict[str, torch.Tensor]) -> torch.Tensor:
    """The likelihood with the variance computed one step at a time."""
    y = data["y"]
    mu, a0, a1, b1 = (point[k] for k in ("mu", "alpha0", "alpha1", "beta1"))
    variance = [data["sigma1"] ** 2]
    for t in range(1, len(y)):
        variance.append(a0 + a1 * (y[t - 1] - mu) ** 2 + b1 * variance[-1])
    sigma = torch.sqrt(torch.stack(variance))
    return torch.distributions.Normal(mu, sigma).log_prob(y).sum()


HMM_TRUTH = {"theta": [[0.7, 0.3], [0.07, 0.93]], "mu": [3.0, 9.0]}


def hmm_data(steps: int) -> dict[str, Any]:
    """A two-state chain of `steps` steps (uniform start) and its normal emissions."""
    rng = np.random.default_rng(0)
    theta, mu = np.array(HMM_TRUTH["theta"]), np.array(HMM_TRUTH["mu"])
    z = int(rng.integers(2))
    y = []
    for step in range(steps):
        if step:
            z = int(rng.choice(2, p=theta[z]))
        y.append(float(rng.normal(mu[z], 1.0)))
    return {"y": y}


def hmm_loop(point: Point, data: dict[str, torch.Tensor]) -> torch.Tensor:
    """The textbook forward recursion, one step at a time."""
    log_theta = point["theta"].log()
    emit = torch.distributions.Normal(point["mu"], 1.0).log_prob(data["y"][:, None])
    alpha = math.log(0.5) + emit[0]
    for t in range(1, len(data["y"])):
        alpha = torch.logsumexp(alpha[:, None] + log_theta, 0) + emit[t]
    return torch.logsumexp(alpha, 0)


CASES = {
    "garch": Case(
        "GARCH(1,1)", EXAMPLES / "garch-garch11.qvr", GARCH_TRUTH, garch_data, garch_loop
    ),
    "hmm": Case(
        "Two-state HMM", EXAMPLES / "hmm_example-hmm_example.qvr", HMM_TRUTH, hmm_data, hmm_loop
    ),
}


def source(case: Case, steps: int) -> str:
    """The example with its `Time` plate `steps` long."""
    text = case.example.read_text(encoding="utf-8")
    head, sep, rest = text.partition("object Time : FinSet ")
    return head + sep + str(steps) + rest[rest.index("\n") :]


def _timed(fn: Callable[[], None], evals: int) -> float:
    for _ in range(5):  # first calls allocate and warm caches: not timed
        fn()
    times = []
    for _ in range(evals):
        began = time.perf_counter()
        fn()
        times.append(time.perf_counter() - began)
    return statistics.median(times)


def gradient_seconds(
    case: Case, text: str, data: dict[str, Any], evals: int
) -> tuple[float, float]:
    """One log-joint gradient: qvr's compiled program, and the same joint by a loop of T
    steps (the baseline)."""
    module = check(text)
    program = compile_model(module, module.exports[0])
    tensors = {k: torch.tensor(v, dtype=F64) for k, v in data.items()}
    point = {k: torch.tensor(v, dtype=F64, requires_grad=True) for k, v in case.truth.items()}

    def qvr() -> None:
        for v in point.values():
            v.grad = None
        given = {k: v for k, v in tensors.items() if k in program.site_names}
        rest = {k: v for k, v in tensors.items() if k not in given}
        program.log_joint(rest, {**point, **given}).sum().backward()

    def loop() -> None:
        for v in point.values():
            v.grad = None
        case.loop(point, tensors).backward()

    torch.set_num_threads(1)
    return _timed(qvr, evals), _timed(loop, evals)


def fit(case: Case, text: str, data: dict[str, Any], args: argparse.Namespace) -> dict[str, float]:
    import arviz as az

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "data.json"
        path.write_text(json.dumps(data), encoding="utf-8")
        results = RunResults()
        summary = run_program(
            text,
            path=str(case.example),
            data=str(path),
            method="nuts",
            steps=args.warmup + args.draws,
            chains=args.chains,
            seed=args.seed,
            results=results,
        )
    assert summary.nuts is not None
    posterior = results.groups["posterior"]
    columns = [  # each entry of each parameter: (chain, draw)
        column
        for k in case.truth
        for column in np.moveaxis(
            np.asarray(posterior[k]).reshape(args.chains, args.draws, -1), -1, 0
        )
    ]
    ess = min(float(az.ess(c)) for c in columns)
    rhat = max(float(az.rhat(c)) for c in columns)
    steps = np.asarray(results.groups["sample_stats"]["n_steps"])
    return {
        "seconds": summary.seconds,
        "leapfrog": float(steps.mean()),
        "ess": ess,
        "rhat": rhat,
        "divergences": float(summary.nuts.divergences),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--model", default="garch,hmm", help=f"of {', '.join(CASES)}")
    parser.add_argument("--steps", default="250,1000")
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--warmup", type=int, default=1000)
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--evals", type=int, default=200)
    args = parser.parse_args()
    for name in args.model.split(","):
        report(CASES[name], [int(s) for s in args.steps.split(",")], args)


def report(case: Case, lengths: list[int], args: argparse.Namespace) -> None:
    rows = []
    for steps in lengths:
        data = case.data(steps)
        text = source(case, steps)
        fast, loop = gradient_seconds(case, text, data, args.evals)
        torch.set_num_threads(1)
        rows.append((steps, fast, loop, fit(case, text, data, args)))
    print(f"{case.title}, {args.chains} chains x ({args.warmup} + {args.draws}), seed {args.seed}")
    print(
        "| T | gradient ms (qvr) | gradient ms (loop) | loop / qvr | sampling s "
        "| leapfrog / draw | ms per draw-step | min bulk ESS | ESS / s | div | R-hat |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for steps, fast, loop, got in rows:
        iterations = args.chains * (args.warmup + args.draws)
        per = 1e3 * got["seconds"] / (iterations * got["leapfrog"])
        print(
            f"| {steps} | {1e3 * fast:.3f} | {1e3 * loop:.3f} | {loop / fast:.1f}x "
            f"| {got['seconds']:.2f} | {got['leapfrog']:.1f} | {per:.3f} | {got['ess']:.0f} "
            f"| {got['ess'] / got['seconds']:.1f} | {got['divergences']:.0f} | {got['rhat']:.4f} |"
        )
    if len(rows) > 1:
        (t0, s0, l0, g0), (t1, s1, l1, g1) = rows[0], rows[-1]
        print(
            f"{t1} / {t0} steps ({t1 / t0:.1f}x): gradient (qvr) {s1 / s0:.2f}x, "
            f"gradient (loop) {l1 / l0:.2f}x, sampling seconds {g1['seconds'] / g0['seconds']:.2f}x"
        )
    print()


if __name__ == "__main__":
    main()
