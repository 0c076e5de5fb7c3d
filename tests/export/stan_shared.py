"""One Stan program for the two tests that compile one each to score a construct: flat
priors (tests/export/test_flat_exports.py) and literal indices with observed transformed
data (tests/export/test_transformed_data.py).

PyStan compiles every program with g++ (about 30 CPU seconds each, and httpstan's cache
is keyed on the interpreter's path, so a fresh environment always compiles): one program
holding both constructs is compiled once, by whichever of the two tests comes first
(`stan_warm.build` holds a lock per program, so two workers never compile it together),
and found in the cache by the other. Each test moves only its own latents between the
two points it compares, so the other part of the program cancels in the difference.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from qvr_core.check import check
from qvr_core.export import TARGETS, export_program
from qvr_core.runs.model_data import split_data
from qvr_core.runtime.model import compile_model
from tests.models import regressions

#: flat priors on a plated intercept, a slope and a scale (a regression on x, grouped by
#: g); beside them posteriordb's earnings-logearn_interaction in small: literal indices
#: and lets of the data that Stan computes in `transformed data`
SOURCE = regressions.flat_groups_and_earnings(6)
DATA: dict[str, list[float]] = {
    "x": [0.1, -0.4, 1.2, 0.7, -1.0, 0.3],
    "g": [0, 1, 2, 1, 0, 2],
    "y": [0.3, 0.5, 2.0, 1.1, -0.2, 1.4],
    "earn": [50000, 60000, 30000, 50000, 51000, 9000],
    "height": [74, 66, 64, 63, 63, 64],
    "male": [1, 0, 0, 0, 0, 1],
}
#: a point of every latent, as qvr shapes them; each test moves its own from here
POINT: dict[str, Any] = {
    "alpha": [0.2, -0.5, 1.0],
    "b": 0.8,
    "tau": 0.6,
    "beta": [8.0, 0.02, -0.1, 0.01, 0.3],
    "sigma": 0.9,
}


def exported() -> str:
    module = check(SOURCE)
    assert module.ok, module.errors
    result = export_program(module, TARGETS["stan"], "both", source="both.qvr")
    assert result.text is not None, result.diagnostics
    return result.text


def stan_model() -> Any:
    """The program built by PyStan (compiled once, then found in httpstan's cache)."""
    from tests.export.stan_warm import build

    return build(exported(), DATA, random_seed=1)


def unconstrained(model: Any, point: dict[str, Any]) -> list[float]:
    return list(model.unconstrain_pars({k: np.asarray(v).tolist() for k, v in point.items()}))


def qvr_log_joint(point: dict[str, Any]) -> float:
    """qvr's log joint at `point`, the data read as `qvr run` reads them (every constant
    kept, the flat terms 0, in the constrained space: no Jacobian)."""
    module = check(SOURCE)
    assert module.ok, module.errors
    program = compile_model(module, "both")
    data = {  # whole numbers as whole numbers (g indexes), the others in float64
        k: torch.tensor(v, dtype=torch.float64 if any(isinstance(e, float) for e in v) else None)
        for k, v in DATA.items()
    }
    x, observed = split_data(program, data, "data.json")
    values = {k: torch.as_tensor(v, dtype=torch.float64) for k, v in point.items()}
    with torch.no_grad():
        return float(program.log_joint(x, {**values, **observed}).reshape(-1)[0])
