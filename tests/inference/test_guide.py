"""AutoNormalGuide: parameters, shapes, supports and densities."""

from __future__ import annotations

import math

import pytest
import torch
from torch import distributions as D

from qvr_core.dsl import loads
from qvr_core.inference import ELBO, SVI, AutoNormalGuide, InferenceError

from .qvr_sources import NORMAL_NORMAL
from .toy_models import Constrained, DiscreteLatent, NormalNormal, SequenceLatent


def test_parameters_exist_at_construction_with_the_event_shape() -> None:
    model = loads(NORMAL_NORMAL).morphism
    guide = AutoNormalGuide(model, observed_names={"y"}, init_scale=0.2)
    params = dict(guide.named_parameters())
    assert set(params) == {"locs.mu", "log_scales.mu"}
    assert params["locs.mu"].shape == (1,)
    assert torch.allclose(params["log_scales.mu"].exp(), torch.tensor(0.2))


def test_guide_does_not_repeat_the_model_parameters() -> None:
    model = loads(NORMAL_NORMAL).morphism
    guide = AutoNormalGuide(model, observed_names={"y"})
    model_ids = {id(p) for p in model.parameters()}
    assert not any(id(p) in model_ids for p in guide.parameters())


def test_draws_are_batched_and_log_prob_is_per_example() -> None:
    model = NormalNormal(n=3, sigma=1.0)
    guide = AutoNormalGuide(model, observed_names={"y"})
    x = torch.zeros(5, 1)
    values = guide.rsample(x)
    assert values["mu"].shape == (5, 1)
    lq = guide.log_prob(x, values)
    assert lq.shape == (5,)
    expected = D.Normal(torch.zeros(1), 0.1).log_prob(values["mu"]).sum(-1)
    assert torch.allclose(lq, expected, atol=1e-5)


def test_constrained_values_lie_in_their_support() -> None:
    guide = AutoNormalGuide(Constrained(), observed_names=())
    values = guide.rsample(torch.zeros(100, 1))
    assert (values["rate"] > 0).all()
    assert ((values["p"] > 0) & (values["p"] < 1)).all()
    assert values["w"].shape == (100, 4)
    assert torch.allclose(values["w"].sum(-1), torch.ones(100), atol=1e-5)
    # the simplex is reached from R^3 through stick breaking
    assert guide.locs["w"].shape == (3,)


def test_log_prob_includes_the_jacobian_of_each_support() -> None:
    guide = AutoNormalGuide(Constrained(), observed_names=())
    with torch.no_grad():
        for key in guide.locs:
            guide.locs[key].normal_()
            guide.log_scales[key].uniform_(-1.0, 0.0)
    x = torch.zeros(7, 1)
    values, fused = guide.sample_with_log_prob(x)
    expected = torch.zeros(7)
    for name, support in (("rate", "positive"), ("p", "unit"), ("w", "simplex"), ("y", "real")):
        loc, scale = guide.loc_scale(name)
        constraint = {
            "positive": D.constraints.positive,
            "unit": D.constraints.unit_interval,
            "simplex": D.constraints.simplex,
            "real": D.constraints.real,
        }[support]
        q = D.TransformedDistribution(
            D.Independent(D.Normal(loc, scale), 1), [D.biject_to(constraint)]
        )
        expected += q.log_prob(values[name])
    assert torch.allclose(guide.log_prob(x, values), expected, atol=1e-4)
    assert torch.allclose(fused, expected, atol=1e-4)


def test_discrete_latent_is_refused_with_a_clear_message() -> None:
    with pytest.raises(InferenceError, match=r"site 'k' is discrete.*observed_names"):
        AutoNormalGuide(DiscreteLatent(), observed_names={"y"})


def test_discrete_latent_of_a_compiled_program_is_refused() -> None:
    model = loads(
        NORMAL_NORMAL.replace("object Mu : Real 1", "object Mu : FinSet 3")
        .replace(
            "[role=kernel, param_source=linear, scale=1.0] ~ Normal", "[role=kernel] ~ Categorical"
        )
        .replace("param_source=linear, scale=0.5", "scale=0.5")
    ).morphism
    with pytest.raises(InferenceError, match="site 'mu' is discrete"):
        AutoNormalGuide(model, observed_names={"y"})


def test_unknown_observed_name_lists_the_sites() -> None:
    with pytest.raises(InferenceError, match=r"'z' is not a site.*mu, y"):
        AutoNormalGuide(NormalNormal(2, 1.0), observed_names={"z"})


def test_sequence_length_dependent_site_is_created_on_first_call() -> None:
    model = SequenceLatent()
    guide = AutoNormalGuide(model, observed_names={"y"})
    assert list(guide.parameters()) == []
    x = torch.zeros(4, 6)
    values = guide.rsample(x)
    assert values["z"].shape == (4, 6, 2)
    assert guide.locs["z"].shape == (6, 2)


def test_svi_hands_lazily_created_parameters_to_its_optimiser() -> None:
    model = SequenceLatent()
    guide = AutoNormalGuide(model, observed_names={"y"})
    dummy = torch.nn.Parameter(torch.zeros(()))  # Adam refuses an empty parameter list
    optim = torch.optim.Adam([dummy], lr=0.1)
    svi = SVI(model, guide, optim, ELBO())
    x, obs = torch.zeros(8, 3), {"y": torch.full((8, 1), 3.0)}
    svi.step(x, obs)
    before = guide.locs["z"].detach().clone()
    for _ in range(5):
        svi.step(x, obs)
    assert not torch.equal(before, guide.locs["z"].detach())


def test_median_maps_the_loc_onto_the_support() -> None:
    guide = AutoNormalGuide(Constrained(), observed_names=())
    median = guide.median()
    assert torch.allclose(median["rate"], torch.ones(3))
    assert torch.allclose(median["p"], torch.full((2,), 0.5))
    assert torch.allclose(median["w"], torch.full((4,), 0.25), atol=1e-6)
    assert math.isclose(float(median["y"]), 0.0)
