"""The stiff solver against the explicit one on a stiff problem: `ode_bdf` against
`ode_rk45` on Robertson's chemical kinetics (rates 0.04, 3e7, 1e4; the classic stiff test).

Dormand-Prince's steps are held by stability to about 3 / |lambda| of the fastest decay
long after it has died out; ROS34PW2's (L-stable) only by the accuracy of the slow
solution. Both solve the same compiled right-hand side with the same tolerances and their
tangents (the gradient's sensitivities) in one run; prints each one's steps kept and
rejected, the wall time of a solve (the best of `--repeat`) and the ratios, and each
one's largest relative difference from scipy's Radau at 1e-12.

    .venv/bin/python bench/ode_stiff.py [--end 40] [--rtol 1e-6] [--repeat 3]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch
from scipy.integrate import solve_ivp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from qvr_core.check import check  # noqa: E402
from qvr_core.check.model import Let  # noqa: E402
from qvr_core.check.terms import Body, Call, subterms  # noqa: E402
from qvr_core.runtime import ode_c  # noqa: E402
from qvr_core.runtime.functions import FUNCTION_IMPLEMENTATIONS  # noqa: E402

SOURCE = """\
object Species : FinSet 3
object Rate : FinSet 3
object Time : FinSet 4

define robertson(t : Real, z : Species -> Real, k : Rate -> Real) : Species -> Real !{} =
    let made = k[2] * z[1] * z[2]
    let a = -k[0] * z[0] + made
    let c = k[1] * z[1] * z[1]
    return [a, -a - c, c]

program m : Time -> Time
    sample k : Rate <- LogNormal(0.0, 1.0)
    let z = ode_bdf(robertson, [1.0, 0.0, 0.0], 0.0, ts, k)
    observe y : Time * Species <- Normal(z, 1.0)
    return z

export m
"""
K = [0.04, 3e7, 1e4]


def _body() -> Body:
    module = check(SOURCE)
    (model,) = module.models.values()
    for step in model.steps:
        if isinstance(step, Let):
            for t in subterms(step.term):
                if isinstance(t, Call) and t.function is not None:
                    return t.function
    raise SystemExit(f"no solver call: {[d.message for d in module.diagnostics]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--end", type=float, default=40.0, help="the last output time")
    parser.add_argument("--rtol", type=float, default=1e-6, help="rtol and atol of both")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    body = _body()
    solver = ode_c.compiled(body)
    if solver is None:
        raise SystemExit("no C compiler: the bench compares the compiled solvers")
    times = [args.end * f for f in (0.01, 0.1, 0.5, 1.0)]
    f64 = torch.float64
    z0, t0, ts = (
        torch.tensor([1.0, 0.0, 0.0], dtype=f64),
        torch.tensor(0.0, dtype=f64),
        torch.tensor(times, dtype=f64),
    )
    k = torch.tensor(K, dtype=f64, requires_grad=True)
    tol = [torch.tensor(v, dtype=f64) for v in (args.rtol, args.rtol, 1e8)]

    def rhs(_t: float, y: np.ndarray) -> list[float]:
        made, c = K[2] * y[1] * y[2], K[1] * y[1] ** 2
        return [-K[0] * y[0] + made, K[0] * y[0] - made - c, c]

    exact = solve_ivp(
        rhs, (0.0, times[-1]), [1.0, 0.0, 0.0], t_eval=times, method="Radau", rtol=1e-12, atol=1e-16
    ).y.T
    figures = {}
    for name in ("ode_bdf_tol", "ode_rk45_tol"):
        solve = FUNCTION_IMPLEMENTATIONS[name]
        solve(body, z0, t0, ts, *tol, k)  # warm: the library loaded
        best = float("inf")
        for _ in range(args.repeat):
            solver.steps()
            start = time.perf_counter()
            out = solve(body, z0, t0, ts, *tol, k)
            out.sum().backward()
            best = min(best, time.perf_counter() - start)
            kept, rejected = solver.steps()
        values = out.detach().numpy()
        error = float(np.max(np.abs(values - exact) / np.maximum(np.abs(exact), 1e-12)))
        figures[name] = (kept, rejected, best, error)
        print(
            f"{name:>13}: {kept:>9} steps kept, {rejected:>6} rejected, {best * 1e3:10.2f} ms "
            f"(value and gradient), largest relative difference from Radau {error:.1e}"
        )
    bdf, rk45 = figures["ode_bdf_tol"], figures["ode_rk45_tol"]
    print(
        f"Robertson to t = {args.end:g} at {args.rtol:g}: rk45 / bdf = {rk45[0] / bdf[0]:.0f}x the "
        f"steps, {rk45[2] / bdf[2]:.1f}x the time"
    )


if __name__ == "__main__":
    main()
