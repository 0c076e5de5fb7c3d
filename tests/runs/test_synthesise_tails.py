"""Synthesised data under a wide prior: `qvr data` keeps to a prior draw that looks like
data (`synthesise.PLAUSIBLE`), and `qvr run` reads a data file in float64, as model
programs compute, so a tiny positive observation is not rounded to 0 on the way in."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from qvr_core.check import check
from qvr_core.runs.model_data import split_data
from qvr_core.runs.run import run_program
from qvr_core.runs.synthesise import PLAUSIBLE, synthesise, write_data
from qvr_core.runtime.model import compile_model

pytestmark = pytest.mark.timeout(300)

#: survival_weibull@d36644a: the first prior draw (seed 0) had times 1e-48 .. 7e-12.
SURVIVAL = """\
object Item : FinSet 200

program survival_weibull : Item -> Item
    sample alpha <- Normal(0.0, 5.0)
    sample beta <- Normal(0.0, 5.0)
    sample k <- Gamma(2.0, 1.0)
    let eta = alpha + beta * x
    let scale = exp(-eta / k)
    observe t : Item <- Weibull(scale, k)
    return beta

export survival_weibull
"""

#: No draw of this prior looks like data: the first finite one is kept.
FAR = """\
object Row : FinSet 5

program far : Row -> Row
    sample m <- Normal(1e9, 1.0)
    observe y : Row <- Normal(m, 1.0)
    return m

export far
"""


def test_a_wide_prior_gives_observations_of_data_like_size() -> None:
    arrays = synthesise(check(SURVIVAL), "survival_weibull", seed=0).arrays()
    low, high = PLAUSIBLE
    assert bool((arrays["t"] >= low).all()) and bool((arrays["t"] <= high).all())


def test_a_prior_with_no_data_like_draw_keeps_its_first_finite_draw() -> None:
    arrays = synthesise(check(FAR), "far", seed=0).arrays()
    assert np.isfinite(arrays["y"]).all() and float(arrays["y"].min()) > 1e8


def test_a_tiny_positive_observation_is_read_in_float64() -> None:
    """float32 rounded 1e-48 to 0, outside the Weibull's support."""
    program = compile_model(check(SURVIVAL), "survival_weibull")
    data = {
        "x": torch.zeros(200, dtype=torch.float64),
        "t": torch.full((200,), 1e-48, dtype=torch.float64),
    }
    x, observed = split_data(program, data, "data")
    assert x["x"].dtype == torch.float64 and bool((observed["t"] > 0).all())
    values = {"alpha": torch.tensor(0.0), "beta": torch.tensor(0.0), "k": torch.tensor(1.0)}
    assert bool(torch.isfinite(program.log_joint(x, {**values, **observed})))


def test_the_survival_model_fits_its_synthesised_data(tmp_path: Path) -> None:
    """NUTS started with no finite gradient on the first prior draw's times."""
    path = write_data(synthesise(check(SURVIVAL), "survival_weibull", seed=0), tmp_path / "d.npz")
    summary = run_program(SURVIVAL, method="svi", steps=30, data=path, seed=0)
    assert summary.final_loss is not None and np.isfinite(summary.final_loss)
