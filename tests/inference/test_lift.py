"""bayesian_lift_parameters: sites, density, refusals, and that the model is left alone."""

from __future__ import annotations

import pytest
import torch

from qvr_core.dsl import load
from qvr_core.inference import (
    ELBO,
    SVI,
    AutoNormalGuide,
    InferenceError,
    bayesian_lift_parameters,
)

from .conftest import ROOT
from .toy_models import Regression


@pytest.fixture
def rnn():
    torch.manual_seed(0)
    model = load(ROOT / "examples" / "vanilla_rnn_lm.qvr").morphism
    x = model.example_input(2, 4)
    obs = {"next_token": model.rsample(x)}
    return model, x, obs


def test_every_parameter_and_each_additional_latent_is_a_site(rnn) -> None:
    model, x, obs = rnn
    lifted, lx, lobs = bayesian_lift_parameters(model, x, obs, additional_latents={"h": (2, 128)})
    params = dict(model.named_parameters())
    assert lifted.site_names == (*params, "h")
    assert lx is x and lobs == obs
    for name, p in params.items():
        assert lifted.site_event_shape(name) == tuple(p.shape)
        assert lifted.site_support(name) == "real"
        assert lifted.site_kind(name) == "sample"
    assert lifted.site_event_shape("h") == (2, 128)


def test_log_density_is_prior_plus_inner_log_joint(rnn) -> None:
    model, x, obs = rnn
    lifted, lx, lobs = bayesian_lift_parameters(
        model, x, obs, prior_scale=2.0, additional_latents={"h": (2, 128)}
    )
    values = lifted.initial_values(lx, lobs)
    got = lifted.log_joint(lx, {**lobs, **values})
    assert got.shape == (1,)
    prior = sum(torch.distributions.Normal(0.0, 2.0).log_prob(p).sum() for p in model.parameters())
    inner = model.log_joint(x, {**obs, "h": values["h"]}).sum()
    assert torch.allclose(got, (prior + inner).reshape(1), rtol=1e-5)


def test_substituted_values_do_not_touch_the_module(rnn) -> None:
    model, x, obs = rnn
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    lifted, lx, lobs = bayesian_lift_parameters(model, x, obs, additional_latents={"h": (2, 128)})
    values = lifted.initial_values(lx, lobs)
    shifted = {n: v + 1.0 for n, v in values.items()}
    a = lifted.log_joint(lx, {**lobs, **values})
    b = lifted.log_joint(lx, {**lobs, **shifted})
    assert not torch.allclose(a, b)
    for n, p in model.named_parameters():
        assert torch.equal(p, before[n])


def test_a_name_both_observed_and_lifted_is_an_error(rnn) -> None:
    model, x, obs = rnn
    with pytest.raises(InferenceError, match="both observed and an additional latent"):
        bayesian_lift_parameters(
            model, x, obs, additional_latents={"h": (2, 128), "next_token": (2,)}
        )


def test_an_unlifted_latent_site_is_an_error_that_gives_its_shape(rnn) -> None:
    model, x, obs = rnn
    with pytest.raises(InferenceError, match=r"'h'.*additional_latents=\{'h': \(2, 128\)\}"):
        bayesian_lift_parameters(model, x, obs)


def test_wrong_declared_shape_and_unknown_names_are_errors(rnn) -> None:
    model, x, obs = rnn
    with pytest.raises(InferenceError, match=r"declared shape \(4, 128\).*\(2, 128\)"):
        bayesian_lift_parameters(model, x, obs, additional_latents={"h": (4, 128)})
    with pytest.raises(InferenceError, match="'g' is not a site"):
        bayesian_lift_parameters(model, x, obs, additional_latents={"g": (2,)})
    with pytest.raises(InferenceError, match="prior_scale must be positive"):
        bayesian_lift_parameters(model, x, obs, prior_scale=0.0)


def test_run_draws_parameters_from_the_prior_and_the_latents_from_the_model() -> None:
    torch.manual_seed(0)
    model = Regression()
    x = torch.randn(5, 3)
    lifted, lx, lobs = bayesian_lift_parameters(
        model, x, {"y": torch.zeros(5, 1)}, prior_scale=3.0, additional_latents={"z": (5, 2)}
    )
    draws = torch.stack([lifted.run(lx, lobs).values["enc.weight"] for _ in range(200)])
    assert 2.5 < float(draws.std()) < 3.5
    run = lifted.run(lx, lobs)
    assert run.values["z"].shape == (5, 2) and run.log_probs["z"].shape == (1,)


def test_svi_on_the_lifted_program_is_full_bayesian_vi() -> None:
    torch.manual_seed(0)
    model = Regression()
    x = torch.randn(64, 3)
    with torch.no_grad():
        y = model.run(x).values["y"]
    lifted, lx, lobs = bayesian_lift_parameters(
        model, x, {"y": y}, additional_latents={"z": (64, 2)}
    )
    guide = AutoNormalGuide(lifted, observed_names=())
    assert guide.locs["enc__weight"].shape == (2, 3)
    values = guide.rsample(lx)
    assert values["enc.weight"].shape == (2, 3)  # no batch axis: one joint state
    assert guide.log_prob(lx, values).shape == (1,)
    svi = SVI(lifted, guide, torch.optim.Adam(guide.parameters(), lr=0.02), ELBO())
    losses = [svi.step(lx, lobs) for _ in range(150)]
    assert sum(losses[-10:]) < sum(losses[:10])
