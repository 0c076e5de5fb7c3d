"""Each family's draws, means and log-densities over its codomain."""

from __future__ import annotations

import math

import pytest
import torch
from torch import distributions as D

from qvr_core.builtins import FAMILIES
from qvr_core.runtime.distributions import torch_constraint
from qvr_core.runtime.families import make_family
from tests.runtime.builders import fin, prod, real


def test_normal_scores_like_torch_and_sums_over_dimensions() -> None:
    fam = make_family("Normal", real("H", 3))
    loc, std, v = torch.randn(4, 3), torch.tensor(0.5), torch.randn(4, 3)
    assert torch.allclose(fam.log_prob(loc, std, v), D.Normal(loc, std).log_prob(v).sum(-1))
    assert fam.rsample(loc, std).shape == (4, 3)
    assert torch.equal(fam.mean(loc, std), loc)


def test_lognormal_mean_is_the_distribution_mean() -> None:
    fam = make_family("LogNormal", real("R", 2, "positive"))
    loc, std = torch.zeros(1, 2), torch.tensor(0.5)
    assert torch.allclose(fam.mean(loc, std), torch.full((1, 2), math.exp(0.125)))
    assert (fam.rsample(loc, std) > 0).all()


def test_logitnormal_lives_in_the_unit_interval() -> None:
    fam = make_family("LogitNormal", real("G", 2, "unit"))
    loc, std = torch.randn(5, 2), torch.tensor(1.0)
    x = fam.rsample(loc, std)
    assert ((x > 0) & (x < 1)).all()
    assert torch.allclose(fam.mean(loc, std), torch.sigmoid(loc))
    assert fam.log_prob(loc, std, x).shape == (5,)


def test_dirichlet_is_one_simplex_per_factor() -> None:
    cod = prod(real("A", 3, "simplex"), real("B", 2, "simplex"))
    fam = make_family("Dirichlet", cod)
    params = torch.randn(4, 5)
    x = fam.rsample(params, None)
    assert torch.allclose(x[:, :3].sum(-1), torch.ones(4), atol=1e-5)
    assert torch.allclose(x[:, 3:].sum(-1), torch.ones(4), atol=1e-5)
    assert fam.log_prob(params, None, x).shape == (4,)


def test_categorical_samples_int64_and_scores_the_logits() -> None:
    fam = make_family("Categorical", fin("Token", 6))
    logits = torch.randn(4, 6)
    x = fam.rsample(logits, None)
    assert x.dtype == torch.int64 and x.shape == (4,)
    expected = torch.log_softmax(logits, -1)[torch.arange(4), x]
    assert torch.allclose(fam.log_prob(logits, None, x), expected)
    assert torch.equal(fam.mean(logits, None), logits.argmax(-1))


def test_categorical_over_a_product_of_finsets_is_independent_per_factor() -> None:
    fam = make_family("Categorical", prod(fin("S", 3), fin("T", 4)))
    assert fam.param_width == 7
    logits = torch.randn(2, 7)
    x = fam.rsample(logits, None)
    assert x.shape == (2, 2) and x.dtype == torch.int64
    lp = fam.log_prob(logits, None, x)
    manual = (
        torch.log_softmax(logits[:, :3], -1)[torch.arange(2), x[:, 0]]
        + torch.log_softmax(logits[:, 3:], -1)[torch.arange(2), x[:, 1]]
    )
    assert torch.allclose(lp, manual)


def test_bernoulli_draws_zero_or_one_int64() -> None:
    fam = make_family("Bernoulli", fin("Coin", 2))
    assert fam.param_width == 1
    logit = torch.randn(100, 1)
    x = fam.rsample(logit, None)
    assert x.dtype == torch.int64 and x.shape == (100,)
    assert set(x.tolist()) <= {0, 1}
    manual = D.Bernoulli(logits=logit[:, 0]).log_prob(x.float())
    assert torch.allclose(fam.log_prob(logit, None, x), manual)


def test_deterministic_is_the_constrained_output_with_zero_density() -> None:
    fam = make_family("Deterministic", prod(real("R", 2), real("P", 2, "positive")))
    params = torch.randn(3, 4)
    out = fam.rsample(params, None)
    assert torch.equal(out[:, :2], params[:, :2])
    assert (out[:, 2:] > 0).all()
    assert torch.equal(fam.log_prob(params, None, out), torch.zeros(3))
    assert not fam.stochastic


PARAMETRIC = sorted(
    n for n, f in FAMILIES.items() if f.kernel is not None and f.kernel.outputs == "parameters"
)


@pytest.mark.parametrize("name", PARAMETRIC)
def test_a_family_of_numbers_takes_its_parameters_from_the_network(name: str) -> None:
    """Every parameter per column, mapped into its constraint; draws and the stand-in
    (mean, or mode where the mean is not finite) lie in the support and score finitely."""
    torch.manual_seed(0)
    spec = FAMILIES[name]
    kind = {"unit_interval": "unit", "positive": "positive", "nonnegative": "positive"}
    cod = real("Y", 3, kind.get(spec.support.kind, "real"))
    fam = make_family(name, cod)
    assert fam.param_width == 3 * len(spec.params)
    params = torch.randn(5, fam.param_width)
    x = fam.rsample(params, None)
    assert x.shape == (5, 3)
    support = torch_constraint(spec.support)
    assert bool(support.check(x).all())
    m = fam.mean(params, None)
    assert m.shape == (5, 3) and bool(torch.isfinite(m).all()) and bool(support.check(m).all())
    lp = fam.log_prob(params, None, x)
    assert lp.shape == (5,) and bool(torch.isfinite(lp).all())
