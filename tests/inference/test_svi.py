"""ELBO and SVI: the objective's value, failures, and fits with known answers."""

from __future__ import annotations

import pytest
import torch

from qvr_core.dsl import loads
from qvr_core.inference import ELBO, SVI, AutoNormalGuide, InferenceError, NonFiniteLossError

from .qvr_sources import (
    N_OBS,
    NORMAL_NORMAL,
    REGRESSION,
    SIGMA,
    conjugate_posterior,
    set_normal_normal,
)
from .toy_models import NormalNormal


def test_elbo_is_minus_the_mean_of_log_joint_minus_log_q() -> None:
    model = NormalNormal(n=4, sigma=0.5)
    guide = AutoNormalGuide(model, observed_names={"y"})
    x, y = torch.zeros(3, 1), torch.randn(3, 4)
    torch.manual_seed(5)
    loss = ELBO().loss(model, guide, x, {"y": y})
    torch.manual_seed(5)
    values = guide.rsample(x)
    log_p = model.log_joint(x, {"y": y, **values})
    assert torch.allclose(loss, -(log_p - guide.log_prob(x, values)).mean(), atol=1e-5)


def test_particles_of_a_batched_program_are_extra_rows_of_the_batch() -> None:
    model = NormalNormal(n=4, sigma=0.5)
    guide = AutoNormalGuide(model, observed_names={"y"})
    x, y = torch.zeros(3, 1), torch.randn(3, 4)
    torch.manual_seed(5)
    loss = ELBO(num_particles=4).loss(model, guide, x, {"y": y})
    torch.manual_seed(5)
    xs, ys = x.repeat(4, 1), y.repeat(4, 1)
    values = guide.rsample(xs)
    log_p = model.log_joint(xs, {"y": ys, **values})
    assert torch.allclose(loss, -(log_p - guide.log_prob(xs, values)).mean(), atol=1e-5)


def test_particle_average_without_a_batch_axis() -> None:
    model = NormalNormal(n=4, sigma=0.5)
    model.batch_shape = lambda x: ()  # one joint state, like the lifted program
    guide = AutoNormalGuide(model, observed_names={"y"})
    x, y = torch.zeros(1, 1), torch.randn(1, 4)
    torch.manual_seed(5)
    loss = ELBO(num_particles=3).loss(model, guide, x, {"y": y})
    torch.manual_seed(5)
    terms = []
    for _ in range(3):
        values = guide.rsample(x)
        assert values["mu"].shape == (1,)
        log_p = model.log_joint(x, {"y": y, **values})
        terms.append((log_p - guide.log_prob(x, values)).mean())
    assert torch.allclose(loss, -torch.stack(terms).mean(), atol=1e-5)


def test_elbo_gradient_reaches_guide_and_model() -> None:
    model = loads(NORMAL_NORMAL).morphism
    guide = AutoNormalGuide(model, observed_names={"y"})
    x = model.example_input(4, 1)
    loss = ELBO().loss(model, guide, x, {"y": torch.randn(4, N_OBS)})
    loss.backward()
    assert guide.locs["mu"].grad is not None and guide.locs["mu"].grad.abs() > 0
    assert all(p.grad is not None for p in model.parameters())


def test_missing_observation_is_named() -> None:
    model = NormalNormal(n=2, sigma=1.0)
    guide = AutoNormalGuide(model, observed_names={"y"})
    with pytest.raises(InferenceError, match="'y'"):
        ELBO().loss(model, guide, torch.zeros(2, 1), {})


def test_non_finite_loss_stops_with_the_step_number() -> None:
    model = NormalNormal(n=2, sigma=1.0)
    guide = AutoNormalGuide(model, observed_names={"y"})
    optim = torch.optim.Adam(guide.parameters(), lr=0.01)
    svi = SVI(model, guide, optim, ELBO())
    x = torch.zeros(2, 1)
    svi.step(x, {"y": torch.zeros(2, 2)})
    before = guide.locs["mu"].detach().clone()
    with pytest.raises(NonFiniteLossError, match="at step 2") as info:
        svi.step(x, {"y": torch.full((2, 2), 1e30)})  # squares overflow to inf
    assert info.value.step == 2
    assert torch.equal(before, guide.locs["mu"].detach())  # no step on a bad loss


def test_svi_recovers_regression_weights() -> None:
    torch.manual_seed(0)
    model = loads(REGRESSION).morphism
    w_true, b_true = torch.tensor([[1.5, -2.0, 0.5]]), torch.tensor([0.7])
    x = torch.randn(256, 3)
    y = x @ w_true.T + b_true + 0.1 * torch.randn(256, 1)
    guide = AutoNormalGuide(model, observed_names={"y"})
    optim = torch.optim.Adam(list(model.parameters()) + list(guide.parameters()), lr=0.05)
    svi = SVI(model, guide, optim, ELBO())
    losses = [svi.step(x, {"y": y}) for _ in range(400)]
    # Read the fitted map's coefficients off its mean, whatever its parameterisation.
    with torch.no_grad():
        mean = model.steps["y"].mean
        b_fit = mean(torch.zeros(1, 3))[0]
        w_fit = (mean(torch.eye(3)) - b_fit).T
    assert torch.allclose(w_fit, w_true, atol=0.05), w_fit
    assert torch.allclose(b_fit, b_true, atol=0.05), b_fit
    assert losses[-1] < losses[0]


def test_svi_recovers_a_prior_mean_through_a_latent_site() -> None:
    torch.manual_seed(1)
    model = loads(NORMAL_NORMAL).morphism
    set_normal_normal(model, prior_loc=1.5)
    x = model.example_input(200, 1)
    with torch.no_grad():
        y = model.run(x).values["y"]
    set_normal_normal(model, prior_loc=-1.0, learn_prior=True)  # forget the truth
    guide = AutoNormalGuide(model, observed_names={"y"})
    params = [p for p in model.parameters() if p.requires_grad] + list(guide.parameters())
    svi = SVI(model, guide, torch.optim.Adam(params, lr=0.05), ELBO())
    for _ in range(400):
        svi.step(x, {"y": y})
    with torch.no_grad():
        learned = model.steps["mu"].mean(x)  # the prior kernel's mean, whatever its weights
    assert torch.allclose(learned, torch.tensor(1.5), atol=0.25)


def test_svi_guide_matches_the_conjugate_posterior() -> None:
    torch.manual_seed(2)
    model = loads(NORMAL_NORMAL).morphism
    set_normal_normal(model, prior_loc=0.3)
    x = model.example_input(1, 1)
    y = 1.2 + SIGMA * torch.randn(1, N_OBS)
    guide = AutoNormalGuide(model, observed_names={"y"})
    optim = torch.optim.Adam(guide.parameters(), lr=0.03)
    svi = SVI(model, guide, optim, ELBO(num_particles=8))
    for step in range(900):
        if step == 600:  # anneal: Adam's stationary jitter shrinks with the rate
            optim.param_groups[0]["lr"] = 0.003
        svi.step(x, {"y": y})
    mean, var = conjugate_posterior(y, prior_loc=0.3)
    loc, scale = (t.detach() for t in guide.loc_scale("mu"))
    assert abs(float(loc) - float(mean)) < 0.03
    assert abs(float(scale) / var**0.5 - 1.0) < 0.1
