"""NUTS on latents drawn from quivers' measure algebra finds their exact distributions.

With no data a latent's posterior is its prior, which here has a closed form:

- `Restrict(Normal(1, 2), 0, 3)` at a step is the Normal truncated to [0, 3]: with
  a = (0 - 1) / 2, b = (3 - 1) / 2 and Z = Phi(b) - Phi(a), its mean is
  1 + 2 (phi(a) - phi(b)) / Z and its variance 4 (1 + (a phi(a) - b phi(b)) / Z
  - ((phi(a) - phi(b)) / Z)^2);
- `Pushforward(Normal(0.5, 0.4), Exp)` is the LogNormal(0.5, 0.4): mean exp(0.5 + 0.08),
  sd that times sqrt(exp(0.16) - 1).

NUTS moves the first inside its interval (the support the checker worked out) and the
second on the positive numbers. Means are compared within 5 Monte Carlo standard errors
(the run's own sd / sqrt(bulk ESS)), standard deviations within 10%: nothing rests on
the draws of a seed.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from tests.runs.cli import qvr_here

PROGRAM = """object One : FinSet 1

program built : One -> One
    sample x <- Restrict(Normal(1.0, 2.0), 0.0, 3.0)
    sample w <- Pushforward(Normal(0.5, 0.4), Exp)
    return x

export built
"""


def _phi(z: float) -> float:
    return math.exp(-z * z / 2) / math.sqrt(2 * math.pi)


def _cdf(z: float) -> float:
    return 0.5 * math.erfc(-z / math.sqrt(2))


def exact() -> dict[str, tuple[float, float]]:
    a, b = -0.5, 1.0
    mass = _cdf(b) - _cdf(a)
    shift = (_phi(a) - _phi(b)) / mass
    variance = 4 * (1 + (a * _phi(a) - b * _phi(b)) / mass - shift**2)
    mean_w = math.exp(0.5 + 0.08)
    return {
        "x": (1 + 2 * shift, math.sqrt(variance)),
        "w": (mean_w, mean_w * math.sqrt(math.exp(0.16) - 1)),
    }


def test_nuts_draws_the_truncated_and_the_pushed_forward_normal(tmp_path: Path) -> None:
    source = tmp_path / "built.qvr"
    source.write_text(PROGRAM, encoding="utf-8")
    done = qvr_here(
        "run", str(source), "--method", "nuts", "--steps", "2000", "--seed", "3", "--json"
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["divergences"] == 0
    rows = {r["label"]: r for r in summary["posterior"]["rows"]}
    for site, (mean, sd) in exact().items():
        row = rows[site]
        assert row["r_hat"] < 1.02, row
        mcse = row["sd"] / math.sqrt(row["ess_bulk"])
        assert abs(row["mean"] - mean) < 5 * mcse, (site, row["mean"], mean, 5 * mcse)
        assert abs(row["sd"] - sd) < 0.1 * sd, (site, row["sd"], sd)
    assert rows["x"]["q5"] >= 0.0 and rows["x"]["q95"] <= 3.0
