"""Each family's draws, means and log-densities over its codomain."""

from __future__ import annotations

import math
from typing import Any

import pytest
import torch
from torch import distributions as D

from qvr_core.builtins import FAMILIES
from qvr_core.runtime.distributions import torch_constraint
from qvr_core.runtime.families import make_family, stand_in
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


@pytest.mark.parametrize("name", PARAMETRIC)
def test_the_stand_in_of_every_family_is_computed_without_reading_its_values(
    name: str,
) -> None:
    """NUTS evaluates the chains' densities together under `vmap` and records them: a
    stand-in that read its mean back into Python (to ask whether it is finite) failed
    there, for every family, and kept quivers' GRU language models eager. Batched over
    a leading axis of four (one of them where a Cauchy's or a Pareto's mean is not
    finite), each row's stand-in is the one computed alone."""
    torch.manual_seed(1)
    spec = FAMILIES[name]
    kind = {"unit_interval": "unit", "positive": "positive", "nonnegative": "positive"}
    fam = make_family(name, real("Y", 3, kind.get(spec.support.kind, "real")))
    params = torch.randn(4, 2, fam.param_width)
    params[0] = -4.0  # shapes and degrees of freedom near 0: heavy tails, no finite mean
    batched = torch.func.vmap(lambda p: fam.mean(p, None))(params)
    for row in range(4):
        alone = fam.mean(params[row], None)
        assert torch.allclose(batched[row], alone, equal_nan=False), row


@pytest.mark.parametrize(
    ("make", "want"),
    [
        # alpha = exp(p) <= 1 where p <= 0: no finite mean, the mode (the scale) stands in
        (lambda p: D.Pareto(p.exp(), p.exp()), lambda p: p <= 0),
        (lambda p: D.Categorical(logits=p), None),
        (lambda p: D.FisherSnedecor(p.exp() + 1.0, p.exp() + 1.0), None),
        (lambda p: D.Independent(D.StudentT(p.exp() * 0.5, p, 1.0), 1), None),
        (lambda p: D.LogNormal(p, 40.0 * p.exp()), None),  # means past float range
    ],
    ids=["Pareto", "Categorical", "FisherSnedecor", "StudentT", "LogNormal"],
)
def test_a_stand_in_that_may_be_the_mode_is_chosen_element_by_element_under_vmap(
    make: Any, want: Any
) -> None:
    """The families whose mean may not be finite choose mean or mode per element, under
    `vmap` as alone, whatever wraps them; each row is finite where its mean or mode is."""
    params = torch.tensor([[-0.5, 0.3, 1.2], [0.4, -1.5, 2.0]], dtype=torch.float64)
    batched = torch.func.vmap(lambda p: stand_in(make(p)))(params)
    for row in range(2):
        alone = stand_in(make(params[row]))
        assert torch.allclose(batched[row].to(alone.dtype), alone, equal_nan=True)
    if want is not None:  # Pareto: the mode (the scale) exactly where alpha <= 1
        scale = params.exp()
        is_mode = want(params)
        assert torch.equal(batched[is_mode], scale[is_mode])
    if make(params).mean.dtype.is_floating_point and bool(torch.isfinite(make(params).mode).all()):
        assert bool(torch.isfinite(batched).all())  # a finite mode stands in where needed
