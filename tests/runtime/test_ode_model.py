"""posteriordb's Lotka-Volterra model as QVR writes it (issue 49): its log joint is the
Stan program's log density, computed here with NumPy and SciPy from the same terms.

Stan's `~` drops a density's constants and QVR's families keep them, so the reference is
written as the QVR program says it: the normal priors of theta as the score term the
program adds (-0.5 z^2, the part `theta ~ normal(mu, sd)` adds to Stan's target, with
theta > 0 from the flat prior on (0, inf)), every lognormal whole. The populations come
from scipy's solve_ivp at 1e-12; the model is solved at 1e-11 for the comparison (at the
Stan program's own 1e-5 and 1e-3 its populations are within those tolerances, as Stan's
are, which moves the log density by some 1e-3).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from scipy.integrate import solve_ivp
from scipy.stats import lognorm

from bench.posteriordb import DEFAULT_DB, MODELS
from qvr_core.check import check
from qvr_core.runtime.model import compile_model

NAME = "hudson_lynx_hare-lotka_volterra"


def _reference_point() -> dict[str, np.ndarray]:
    ref = json.loads((DEFAULT_DB / NAME / "reference.json").read_text())["parameters"]

    def means(name: str, n: int) -> np.ndarray:
        return np.array([ref[f"{name}[{i}]"]["mean"] for i in range(1, n + 1)])

    return {"theta": means("theta", 4), "z_init": means("z_init", 2), "sigma": means("sigma", 2)}


def _stan_log_density(point: dict[str, np.ndarray], data: dict[str, list]) -> float:
    theta, z_init, sigma = point["theta"], point["z_init"], point["sigma"]
    a, b, c, d = theta

    def dz_dt(_t: float, z: np.ndarray) -> list[float]:
        return [(a - b * z[1]) * z[0], (-c + d * z[0]) * z[1]]

    ts = np.asarray(data["ts"], dtype=float)
    solved = solve_ivp(
        dz_dt, (0.0, ts[-1]), z_init, t_eval=ts, rtol=1e-12, atol=1e-12, method="DOP853"
    )
    z = solved.y.T
    y, y_init = np.asarray(data["y"]), np.asarray(data["y_init"])
    prior = -0.5 * (((theta - [1.0, 0.05, 1.0, 0.05]) / [0.5, 0.05, 0.5, 0.05]) ** 2).sum()
    prior += lognorm.logpdf(z_init, s=1.0, scale=10.0).sum()
    prior += lognorm.logpdf(sigma, s=1.0, scale=np.exp(-1.0)).sum()
    likelihood = lognorm.logpdf(y_init, s=sigma, scale=z_init).sum()
    likelihood += lognorm.logpdf(y, s=sigma, scale=z).sum()
    return float(prior + likelihood)


@pytest.mark.skipif(not (DEFAULT_DB / NAME).is_dir(), reason="../shared/posteriordb is not here")
def test_the_log_joint_is_the_stan_program_s_log_density() -> None:
    text = Path(MODELS / f"{NAME}.qvr").read_text(encoding="utf-8")
    assert ", 1e-5, 1e-3, 500, theta)" in text
    module = check(text.replace(", 1e-5, 1e-3, 500, theta)", ", 1e-11, 1e-11, 1000000, theta)"))
    assert not [d for d in module.diagnostics if d.severity.name in ("ERROR", "WARNING")]
    (program,) = module.models
    model = compile_model(module, program)
    data = json.loads((DEFAULT_DB / NAME / "data.json").read_text())
    inputs = {"ts": torch.tensor(data["ts"], dtype=torch.float64)}
    observed = {k: torch.tensor(data[k], dtype=torch.float64) for k in ("y", "y_init")}
    point = _reference_point()
    values = {k: torch.tensor(v, dtype=torch.float64) for k, v in point.items()}
    with torch.no_grad():
        got = float(model.log_joint(inputs, {**values, **observed}).reshape(-1)[0])
    assert got == pytest.approx(_stan_log_density(point, data), abs=1e-7, rel=0.0)
