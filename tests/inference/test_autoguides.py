"""AutoDelta, AutoMultivariateNormal and AutoLowRankMultivariateNormal against a posterior
known in closed form with correlated latents; `--guide` through run_inference."""

from __future__ import annotations

import json

import pytest
import torch
from torch import distributions as D

from qvr_core.inference import ELBO, SVI, InferenceError
from qvr_core.inference.autoguides import (
    AutoDeltaGuide,
    AutoLowRankMultivariateNormalGuide,
    AutoMultivariateNormalGuide,
)
from qvr_core.runs.run import run_inference

from .conftest import ROOT
from .toy_models import Site, ToyProgram

SIGMA, N = 0.5, 4


class SumOfTwo(ToyProgram):
    """z ~ N(0, I_2), y_i ~ N(z_0 + z_1, sigma): the data only see the sum, so the
    posterior of z is strongly (negatively) correlated."""

    def __init__(self) -> None:
        super().__init__()
        self.sites = (Site("z", "sample", "real", (2,), 1), Site("y", "observe", "real", (N,), 1))
        self.returns = "y"

    def dist(self, name, x, values):
        if name == "z":
            return D.Normal(torch.zeros(x.shape[0], 2), 1.0, validate_args=False)
        total = values["z"].sum(-1, keepdim=True).expand(x.shape[0], N)
        return D.Normal(total, SIGMA, validate_args=False)


def exact(y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    ones = torch.ones(2, 1)
    precision = torch.eye(2) + (N / SIGMA**2) * ones @ ones.T
    cov = torch.linalg.inv(precision)
    mean = cov @ (ones * y.sum() / SIGMA**2)
    return mean.reshape(2), cov


def fitted(guide_type, steps: int = 1500):
    torch.manual_seed(0)
    model = SumOfTwo()
    y = torch.tensor([[1.1, 0.8, 1.3, 0.9]])
    guide = guide_type(model, observed_names={"y"})
    optim = torch.optim.Adam(guide.parameters(), lr=0.02)
    svi = SVI(model, guide, optim, ELBO(num_particles=16))
    x = torch.zeros(1, 1)
    for step in range(steps):
        if step == steps * 2 // 3:
            optim.param_groups[0]["lr"] = 0.002
        svi.step(x, {"y": y})
    return guide, y


@pytest.mark.parametrize(
    "guide_type", [AutoMultivariateNormalGuide, AutoLowRankMultivariateNormalGuide]
)
def test_full_and_low_rank_normals_find_the_correlated_posterior(guide_type) -> None:
    guide, y = fitted(guide_type)
    mean, cov = exact(y)
    q = guide.distribution()
    torch.testing.assert_close(q.mean.detach(), mean, atol=0.05, rtol=0)
    torch.testing.assert_close(q.covariance_matrix.detach(), cov, atol=0.04, rtol=0)
    assert float(q.covariance_matrix[0, 1].detach()) < -0.3  # a mean field has none


def test_delta_is_the_map() -> None:
    guide, y = fitted(AutoDeltaGuide, steps=600)
    mean, _ = exact(y)  # a Gaussian posterior: its mode is its mean
    torch.testing.assert_close(guide.median()["z"], mean, atol=0.02, rtol=0)
    x = torch.zeros(3, 1)
    values, log_q = guide.sample_with_log_prob(x)
    assert values["z"].shape == (3, 2) and torch.equal(log_q, torch.zeros(3))


def test_log_prob_of_a_draw_is_the_density_it_was_drawn_with() -> None:
    model = SumOfTwo()
    for guide in (
        AutoMultivariateNormalGuide(model, {"y"}),
        AutoLowRankMultivariateNormalGuide(model, {"y"}, rank=1),
    ):
        x = torch.zeros(5, 1)
        values, log_q = guide.sample_with_log_prob(x)
        torch.testing.assert_close(guide.log_prob(x, values), log_q)


@pytest.mark.parametrize(
    "guide_type", [AutoMultivariateNormalGuide, AutoLowRankMultivariateNormalGuide]
)
def test_draws_without_their_density_follow_the_guides_distribution(guide_type) -> None:
    """`rsample` (the summary's 200 draws) skips the density and, for the low-rank guide,
    the capacitance factorisation; its draws must still have the guide's mean and
    covariance."""
    guide, _ = fitted(guide_type, steps=300)
    torch.manual_seed(1)
    with torch.no_grad():
        z = guide.rsample(torch.zeros(20000, 1))["z"]
    q = guide.distribution()
    torch.testing.assert_close(z.mean(0), q.mean.detach(), atol=0.01, rtol=0)
    torch.testing.assert_close(z.T.cov(), q.covariance_matrix.detach(), atol=0.01, rtol=0)


def test_bad_rank_is_refused() -> None:
    with pytest.raises(InferenceError, match="rank"):
        AutoLowRankMultivariateNormalGuide(SumOfTwo(), {"y"}, rank=0)


@pytest.mark.parametrize("guide", ["delta", "mvn", "lowrank-mvn"])
def test_run_inference_fits_each_guide_and_summarises_its_draws(guide: str) -> None:
    source = (ROOT / "examples" / "vanilla_rnn_lm.qvr").read_text(encoding="utf-8")
    s = run_inference(source, method="svi", steps=5, batch=2, seq_len=3, guide=guide)
    assert s["guide"] == guide and len(s["losses"]) == 5
    posterior = s["posterior"]
    assert posterior["chains"] == 1 and posterior["draws"] == 200
    assert posterior["sites"]["h"]["shape"] == [2, 128]
    assert "r_hat" not in posterior["rows"][0]  # independent draws: no convergence columns
    json.dumps(s)
