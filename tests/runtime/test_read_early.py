"""Drawing a series the model reads before its `observe` (`runtime.model.early`): GARCH's
y, whose variance at t reads y[t - 1]. A prior draw, synthetic data and the posterior
predictive draw it as Stan's loop would, entry by entry; a model that reads later
entries is refused by name.

The draws are checked by the model's own definition, not by a seed's outcome: under
each draw, the standardised residuals (y[t] - mu) / sigma[t], with sigma[t] computed from
the drawn y[t - 1] by the recursion, are independent standard normal; had a draw read
anything but its own earlier entries (the zeros a first run reads), they would not be.
"""

from __future__ import annotations

import math

import pytest
import torch

from qvr_core.check import check
from qvr_core.runs.predictive import posterior_predictive
from qvr_core.runtime.errors import QvrRuntimeError
from qvr_core.runtime.model import compile_model
from qvr_core.runtime.model.program import ModelProgram
from tests.check.test_series import GARCH

F64 = torch.float64
STEPS = 40
POINT = {"mu": 2.0, "alpha0": 0.5, "alpha1": 0.6, "beta1": 0.3}
SIGMA1 = 0.5
POINT_T = {k: torch.tensor(v, dtype=F64) for k, v in POINT.items()}


def _garch() -> ModelProgram:
    return compile_model(check(GARCH.replace("FinSet 6", f"FinSet {STEPS}")), "garch")


def _residuals(y: torch.Tensor) -> torch.Tensor:
    """(y[t] - mu) / sigma[t], sigma[t] by the recursion from the drawn y (rows: draws)."""
    p = POINT
    sigma2 = [torch.full(y.shape[:-1], SIGMA1**2, dtype=F64)]
    for t in range(1, y.shape[-1]):
        e = y[..., t - 1] - p["mu"]
        sigma2.append(p["alpha0"] + p["alpha1"] * e * e + p["beta1"] * sigma2[-1])
    return (y - p["mu"]) / torch.stack(sigma2, -1).sqrt()


def _assert_standard_normal(z: torch.Tensor) -> None:
    """Mean 0 and variance 1 within five standard errors, step by step pooled."""
    n = z.numel()
    assert abs(float(z.mean())) < 5 / math.sqrt(n)
    assert abs(float(z.var()) - 1) < 5 * math.sqrt(2 / n)
    lag_one = float((z[..., 1:] * z[..., :-1]).mean())  # uncorrelated in time
    assert abs(lag_one) < 5 / math.sqrt(z[..., 1:].numel())


def test_posterior_predictive_draws_the_series_as_its_recursion_says() -> None:
    program = _garch()
    draws = 1000
    samples = {k: torch.full((2, draws // 2), v, dtype=F64) for k, v in POINT.items()}
    x = {"sigma1": torch.tensor(SIGMA1, dtype=F64)}
    torch.manual_seed(0)
    y = posterior_predictive(program, x, x, samples, ["y"])["y"]
    assert y.shape == (2, draws // 2, STEPS)
    assert program.early_names == {"y"}
    _assert_standard_normal(_residuals(y.reshape(draws, STEPS)))


def test_one_draw_of_the_whole_model_settles_too() -> None:
    """A prior draw (the latents drawn as well) is run until y settles: each run from the
    same random state, so the latents are the same in every run."""
    program = _garch()
    torch.manual_seed(1)
    ys = []
    for _ in range(300):
        values = program.run({"sigma1": torch.tensor(SIGMA1, dtype=F64)}, {}, POINT_T).values
        ys.append(values["y"])
    _assert_standard_normal(_residuals(torch.stack(ys)))


def test_a_model_that_reads_later_entries_is_refused_by_name() -> None:
    """y's mean reads the whole series' sum: no run fixes an entry, so none agree."""
    text = GARCH.replace("    let e = y - mu\n", "    let total = y.sum()\n    let e = y - total\n")
    program = compile_model(check(text), "garch")
    with pytest.raises(QvrRuntimeError, match="'y', which it reads before the observe, did not"):
        program.run({"sigma1": torch.tensor(SIGMA1, dtype=F64)}, {}, POINT_T)
