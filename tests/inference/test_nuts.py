"""NUTS and MCMC: exactness on known posteriors, gradients, adaptation, divergences."""

from __future__ import annotations

import math

import pytest
import torch

from qvr_core.dsl import load, loads
from qvr_core.inference import MCMC, InferenceError, NUTSKernel, bayesian_lift_parameters
from qvr_core.inference.mcmc import ProgramPotential
from qvr_core.inference.sites import FlatLayout, make_sites

from .conftest import ROOT
from .qvr_sources import NORMAL_NORMAL, conjugate_posterior, set_normal_normal
from .toy_models import Constrained, NormalNormal, Regression, ScaledNormal, finite_difference_grad


def within_mc_error(samples: torch.Tensor, mean: float, var: float, ess: float) -> None:
    """Sample mean and variance against the truth, at 4 Monte Carlo standard errors."""
    m, v = float(samples.mean()), float(samples.var())
    assert abs(m - mean) < 4 * math.sqrt(var / ess), (m, mean, ess)
    assert abs(v / var - 1) < 4 * math.sqrt(2 / ess), (v, var, ess)


@pytest.mark.slow
def test_conjugate_normal_posterior_written_in_qvr() -> None:
    torch.manual_seed(0)
    model = loads(NORMAL_NORMAL).morphism
    set_normal_normal(model, prior_loc=0.5)
    x = model.example_input(3, 1)
    y = torch.tensor([[1.0], [-2.0], [0.2]]) + 0.5 * torch.randn(3, 8)
    result = MCMC(NUTSKernel(), num_warmup=150, num_samples=500, num_chains=2).run(
        model, x, {"y": y}
    )
    assert result.samples["mu"].shape == (2, 500, 3, 1)
    mean, var = conjugate_posterior(y, prior_loc=0.5)
    for b in range(3):
        ess = float(result.ess["mu"][b, 0])
        assert ess > 150
        within_mc_error(result.samples["mu"][:, :, b, 0], float(mean[b]), var, ess)
    assert float(result.r_hat["mu"].max()) < 1.05
    assert int(result.divergence_counts.sum()) == 0


@pytest.mark.slow
def test_constrained_supports_sample_their_priors() -> None:
    # No data: the posterior is the prior, so any Jacobian mistake shows up.
    torch.manual_seed(1)
    result = MCMC(NUTSKernel(), num_warmup=100, num_samples=500).run(
        Constrained(), torch.zeros(1, 1), {}
    )
    s = result.samples
    # rate ~ LogNormal(0, 0.5): its log is Normal(0, 0.25), whose moments test cleanly
    within_mc_error(s["rate"][..., 0].log(), 0.0, 0.25, float(result.ess["rate"][0, 0]))
    within_mc_error(s["p"][..., 1], 0.4, 0.04, float(result.ess["p"][0, 1]))
    # Dirichlet(1, 2, 3, 4): mean alpha / 10, variance a(10 - a) / (100 * 11)
    within_mc_error(s["w"][..., 3], 0.4, 4 * 6 / 1100, float(result.ess["w"][0, 3]))
    assert (s["rate"] > 0).all() and torch.allclose(s["w"].sum(-1), torch.ones(1))


def test_potential_and_gradient_agree_with_direct_torch_on_the_seed_model() -> None:
    torch.manual_seed(0)
    model = load(ROOT / "examples" / "vanilla_rnn_lm.qvr").morphism
    x = model.example_input(3, 5)
    obs = {"next_token": model.rsample(x)}
    h_shape = tuple(model._step_h.rsample(x).shape)
    lifted, lx, lobs = bayesian_lift_parameters(
        model, x, obs, prior_scale=0.7, additional_latents={"h": h_shape}
    )
    init = lifted.initial_values(lx, lobs)
    layout = FlatLayout(make_sites(lifted, init, lifted.site_names))
    potential = ProgramPotential(lifted, lx, lobs, layout)
    z = layout.pack(init) + 0.01 * torch.randn(layout.size)
    u, grad = potential(z)

    # Direct: put the values into the module, score, back-propagate.
    values, _ = layout.unpack(z)
    params = dict(model.named_parameters())
    with torch.no_grad():
        for name, p in params.items():
            p.copy_(values[name])
    h = values["h"].clone().requires_grad_(True)
    for p in params.values():
        p.grad = None
    prior = sum(torch.distributions.Normal(0.0, 0.7).log_prob(p).sum() for p in params.values())
    log_p = prior + model.log_joint(x, {**obs, "h": h}).sum()
    log_p.backward()
    assert math.isclose(u, -float(log_p.detach()), rel_tol=1e-5)
    direct = {name: p.grad for name, p in params.items()} | {"h": h.grad}
    for site, (a, b) in zip(layout.sites, layout.offsets, strict=True):
        expected = -direct[site.name].reshape(-1)
        assert torch.allclose(grad[a:b], expected, rtol=1e-4, atol=1e-4 * expected.abs().max()), (
            site.name
        )


def test_gradient_matches_finite_differences_in_float64() -> None:
    torch.manual_seed(0)
    model = Regression().double()
    x = torch.randn(4, 3, dtype=torch.float64)
    obs = {"y": torch.randn(4, 1, dtype=torch.float64)}
    z_shape = (4, 2)
    lifted, lx, lobs = bayesian_lift_parameters(model, x, obs, additional_latents={"z": z_shape})
    init = lifted.initial_values(lx, lobs)
    layout = FlatLayout(make_sites(lifted, init, lifted.site_names))
    potential = ProgramPotential(lifted, lx, lobs, layout)
    z = layout.pack(init)
    _, grad = potential(z)
    numeric = finite_difference_grad(lambda v: potential(v)[0], z)
    assert torch.allclose(grad, numeric, atol=1e-5)


def test_u_turn_criterion_keeps_trees_short_on_a_gaussian() -> None:
    result = MCMC(NUTSKernel(max_tree_depth=10), 100, 200).run(
        ScaledNormal([1.0]), torch.zeros(1, 1), {}
    )
    # Without the U-turn test every tree would run to depth 10 (1023 steps).
    assert float(result.tree_depths.double().mean()) < 4
    assert int(result.num_leapfrog_steps.max()) < 64


def test_step_size_adaptation_reaches_the_target_acceptance() -> None:
    result = MCMC(NUTSKernel(step_size=5.0, target_accept=0.8), 300, 300).run(
        ScaledNormal([1.0, 2.0]), torch.zeros(1, 1), {}
    )
    assert 0.65 < float(result.acceptance_rates[0]) < 0.99


def test_mass_matrix_learns_the_scales() -> None:
    torch.manual_seed(3)
    model = ScaledNormal([0.1, 10.0])
    x = torch.zeros(1, 1)
    init = model.run(x).values
    layout = FlatLayout(make_sites(model, init, ["z"]))
    potential = ProgramPotential(model, x, {}, layout)
    chain = NUTSKernel(max_tree_depth=8).chain(potential, layout.pack(init), 200)
    for _ in range(200):
        chain.step()
    ratio = chain.inv_mass / torch.tensor([0.01, 100.0])
    assert ((ratio > 0.3) & (ratio < 3)).all(), chain.inv_mass


def test_divergences_are_detected_and_counted() -> None:
    kernel = NUTSKernel(step_size=50.0, adapt_step_size=False, adapt_mass_matrix=False)
    result = MCMC(kernel, num_warmup=0, num_samples=20).run(
        ScaledNormal([0.1]), torch.zeros(1, 1), {}
    )
    assert int(result.divergence_counts[0]) >= 15
    assert float(result.acceptance_rates[0]) < 0.1


def test_log_densities_are_the_log_joint_at_each_draw() -> None:
    model = NormalNormal(n=2, sigma=1.0)
    x, obs = torch.zeros(2, 1), {"y": torch.ones(2, 2)}
    result = MCMC(NUTSKernel(), 20, 5, num_chains=2).run(model, x, obs)
    assert result.log_densities.shape == (2, 5)
    for c in range(2):
        for d in range(5):
            lp = model.log_joint(x, {**obs, "mu": result.samples["mu"][c, d]}).sum()
            assert math.isclose(float(result.log_densities[c, d]), float(lp), rel_tol=1e-5)
    assert result.acceptance_rates.shape == (2,) and result.divergence_counts.shape == (2,)


def test_should_stop_returns_the_draws_so_far() -> None:
    calls = []
    result = MCMC(NUTSKernel(), 5, 100).run(
        NormalNormal(n=2, sigma=1.0),
        torch.zeros(1, 1),
        {"y": torch.zeros(1, 2)},
        on_progress=lambda i, total, u: calls.append((i, total)),
        should_stop=lambda: len(calls) >= 15,
    )
    assert result.stopped
    assert result.samples["mu"].shape == (1, 10, 1, 1)
    assert calls[-1] == (15, 105)


def test_non_finite_start_is_refused() -> None:
    model = NormalNormal(n=2, sigma=1.0)
    with pytest.raises(InferenceError, match="not finite at the initial point"):
        MCMC(NUTSKernel(), 5, 5).run(model, torch.zeros(1, 1), {"y": torch.full((1, 2), 1e30)})


def test_discrete_latent_is_refused_by_mcmc() -> None:
    from .toy_models import DiscreteLatent

    with pytest.raises(InferenceError, match="site 'k' is discrete"):
        MCMC(NUTSKernel(), 5, 5).run(DiscreteLatent(), torch.zeros(1, 1), {"y": torch.zeros(1, 1)})


def test_a_program_without_latents_has_nothing_to_sample() -> None:
    from .toy_models import LinearObservation

    with pytest.raises(InferenceError, match="nothing to sample"):
        MCMC(NUTSKernel(), 5, 5).run(
            LinearObservation(), torch.zeros(2, 3), {"y": torch.zeros(2, 1)}
        )
