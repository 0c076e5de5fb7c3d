"""The torch side of the improper flat priors: log density 0 on the support (-inf off it),
and for a draw Stan's starting point, uniform on (-2, 2) in unconstrained space mapped
onto the support. A model's log joint is then its likelihood alone."""

from __future__ import annotations

import math

import pytest
import torch
from torch import distributions as D

from qvr_core.check import check
from qvr_core.runtime.distributions import make_distribution
from qvr_core.runtime.model import compile_model
from tests.models import regressions

SOURCE = regressions.flat_groups(5)
X = torch.tensor([0.1, -0.4, 1.2, 0.7, -1.0], dtype=torch.float64)
G = torch.tensor([0, 1, 2, 1, 0])
Y = torch.tensor([0.3, 0.5, 2.0, 1.1, -0.2], dtype=torch.float64)


@pytest.mark.parametrize(("name", "support"), [("Flat", D.constraints.real), ("HalfFlat", None)])
def test_the_density_is_zero_on_the_support_and_minus_inf_off_it(
    name: str, support: object
) -> None:
    d = make_distribution(name, {}).expand((3,))
    values = torch.tensor([[0.5, 2.0, 1e8], [-1.0, 0.0, math.nan]], dtype=torch.float64)
    lp = d.log_prob(values)
    assert lp.shape == (2, 3)
    assert torch.equal(lp[0], torch.zeros(3, dtype=torch.float64))
    if name == "Flat":
        assert torch.equal(lp[1, :2], torch.zeros(2, dtype=torch.float64))
    else:  # a positive value only: 0 and below are off the support
        assert torch.equal(lp[1, :2], torch.full((2,), -math.inf, dtype=torch.float64))
    assert lp[1, 2] == -math.inf  # NaN is no value


def test_a_draw_is_stans_starting_point_in_unconstrained_space() -> None:
    flat = make_distribution("Flat", {}).expand((2000,)).sample()
    half = make_distribution("HalfFlat", {}).expand((2000,)).sample()
    assert flat.dtype == torch.get_default_dtype()
    assert bool(((flat > -2) & (flat < 2)).all())
    assert bool(((half > math.exp(-2)) & (half < math.exp(2))).all())
    assert not make_distribution("Flat", {}).has_rsample


def test_the_gradient_through_a_flat_prior_alone_is_zero_not_missing() -> None:
    value = torch.tensor([0.3, -1.2], requires_grad=True)
    (grad,) = torch.autograd.grad(make_distribution("Flat", {}).log_prob(value).sum(), value)
    assert torch.equal(grad, torch.zeros(2))


def test_the_log_joint_is_the_likelihood_alone() -> None:
    module = check(SOURCE)
    assert module.ok, module.errors
    program = compile_model(module, "grouped")
    alpha = torch.tensor([0.2, -0.5, 1.0], dtype=torch.float64)
    b, tau = torch.tensor(0.8, dtype=torch.float64), torch.tensor(0.6, dtype=torch.float64)
    values = {"alpha": alpha, "b": b, "tau": tau, "y": Y}
    got = program.log_joint({"x": X, "g": G}, values)
    want = D.Normal(alpha[G] + b * X, tau).log_prob(Y).sum()
    torch.testing.assert_close(got.reshape(()), want)


def test_a_run_starts_each_latent_where_stan_does() -> None:
    program = compile_model(check(SOURCE), "grouped")
    start = program.initial_values({"x": X, "g": G}, {"y": Y})
    assert start["alpha"].shape == (3,) and start["b"].shape == ()
    assert bool((start["alpha"].abs() < 2).all()) and -2 < float(start["b"]) < 2
    assert math.exp(-2) < float(start["tau"]) < math.exp(2)
    assert program.site_support("tau") == "positive" and program.site_support("alpha") == "real"
