"""quivers' Horseshoe and LKJCorrelationFactor as step families.

Read from quivers 0.25.2: `dsl/family_schemas.py` (`Horseshoe(scale)`,
`LKJCorrelationFactor(concentration)`), `continuous/families.py` (the horseshoe's log
density is a 16-point Gauss-Legendre rule over lambda = tan(pi t / 2) of the Normal(0,
tau lambda) density times the HalfCauchy(1) density and the map's derivative;
`LKJCorrelationFactor` scores and draws Cholesky factors with torch's LKJCholesky).
The programs are our own, parsed by quivers' HEAD grammar. The rule is written out
here as quivers writes it, with the three factors apart; qvr's runtime simplifies their
product to 1, so the two agreeing to rounding checks the simplification.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy import integrate, stats
from torch import distributions as D

from qvr_core import dsl
from qvr_core.check import check
from qvr_core.runtime.horseshoe import Horseshoe
from qvr_core.runtime.model import compile_model
from tests.conformance import oracle

F64 = torch.float64

SPARSE = """object Coef : FinSet 4

program sparse : Coef -> Coef
    sample tau <- HalfCauchy(1.0)
    sample beta : Coef <- Horseshoe(tau)
    return beta

export sparse
"""

CORRELATED = """object Dim : Real 3

program corr : Dim -> Dim
    sample L : Dim <- {family}(2.0)
    return L

export corr
"""


def _quivers_rule(beta: float, tau: float) -> float:
    """quivers' quadrature, factor by factor: the Normal density at sigma = tau lambda,
    the HalfCauchy(1) density at lambda and d lambda / d t, at the nodes mapped to (0, 1)."""
    nodes, weights = np.polynomial.legendre.leggauss(16)
    terms = []
    for node, weight in zip(nodes, weights, strict=True):
        t = (1.0 + node) / 2.0
        lam = math.tan(math.pi * t / 2.0)
        jacobian = (math.pi / 2.0) / math.cos(math.pi * t / 2.0) ** 2
        half_cauchy = 2.0 / (math.pi * (1.0 + lam * lam))
        normal = stats.norm.pdf(beta, 0.0, tau * lam)
        terms.append(normal * half_cauchy * jacobian * weight / 2.0)
    return math.log(sum(terms))


@pytest.mark.parametrize("source", [SPARSE, CORRELATED.format(family="LKJCorrelationFactor")])
def test_quivers_grammar_parses_it(source: str) -> None:
    oracle.require_head(source)


@pytest.mark.parametrize("beta", [-4.0, -0.3, 0.05, 1.0, 12.0])
def test_the_horseshoe_scores_by_quivers_rule(beta: float) -> None:
    got = Horseshoe(torch.tensor(0.7, dtype=F64)).log_prob(torch.tensor(beta, dtype=F64))
    assert got.item() == pytest.approx(_quivers_rule(beta, 0.7), rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("beta", [0.5, 1.0, 3.0])
def test_the_rule_is_close_to_the_integral_away_from_zero(beta: float) -> None:
    """Away from 0 and from the far tail, 16 nodes carry the integral to 0.2%."""
    exact, _ = integrate.quad(
        lambda lam: stats.norm.pdf(beta, 0.0, 0.7 * lam) * 2.0 / (math.pi * (1.0 + lam * lam)),
        0.0,
        math.inf,
        limit=400,
    )
    got = Horseshoe(torch.tensor(0.7, dtype=F64)).log_prob(torch.tensor(beta, dtype=F64))
    assert got.item() == pytest.approx(math.log(exact), abs=2e-3)


def test_horseshoe_draws_follow_the_density_scored() -> None:
    """The density is a mixture of 16 Normals: P(|beta| < 1) from it, against the share of
    40,000 draws, within 5 standard errors; a draw keeps a gradient in the scale."""
    torch.manual_seed(3)
    tau = torch.tensor(0.7, dtype=F64, requires_grad=True)
    draws = Horseshoe(tau).rsample((40_000,))
    nodes, weights = np.polynomial.legendre.leggauss(16)
    scales = 0.7 * np.tan(math.pi * (1.0 + nodes) / 4.0)
    inside = float(np.sum(weights / 2.0 * (2.0 * stats.norm.cdf(1.0 / scales) - 1.0)))
    share = (draws.detach().abs() < 1.0).double().mean().item()
    assert abs(share - inside) < 5 * math.sqrt(inside * (1 - inside) / 40_000)
    draws.sum().backward()
    assert tau.grad is not None and torch.isfinite(tau.grad)


def test_a_horseshoe_program_scores_its_coefficients() -> None:
    checked = check(SPARSE)
    assert [d.message for d in checked.diagnostics if d.is_error] == []
    program = compile_model(checked, "sparse")
    beta = torch.tensor([0.01, -0.5, 2.0, 7.0], dtype=F64)
    tau = torch.tensor(0.3, dtype=F64)
    got = program.log_joint({}, {"tau": tau, "beta": beta}).double()
    want = D.HalfCauchy(torch.tensor(1.0, dtype=F64)).log_prob(tau) + sum(
        _quivers_rule(float(b), 0.3) for b in beta
    )
    torch.testing.assert_close(got.reshape(()), want.reshape(()), rtol=1e-12, atol=1e-12)


def test_lkj_correlation_factor_is_lkj_cholesky() -> None:
    """quivers' LKJCorrelationFactor is torch's LKJCholesky over the object's size: the
    checker records the site under LKJCholesky, so both programs score a factor alike."""
    by_alias = check(CORRELATED.format(family="LKJCorrelationFactor"))
    assert [d.message for d in by_alias.diagnostics if d.is_error] == []
    assert by_alias.models["corr"].site("L").family == "LKJCholesky"
    factor = D.LKJCholesky(3, torch.tensor(2.0, dtype=F64)).sample()
    scores = [
        compile_model(check(CORRELATED.format(family=f)), "corr").log_joint({}, {"L": factor})
        for f in ("LKJCorrelationFactor", "LKJCholesky")
    ]
    torch.testing.assert_close(scores[0], scores[1], rtol=0.0, atol=0.0)
    want = D.LKJCholesky(3, torch.tensor(2.0, dtype=F64)).log_prob(factor)
    torch.testing.assert_close(scores[0].double().reshape(()), want, rtol=1e-12, atol=1e-12)


MORPHISM = """object Obs : Real 3
object X : FinSet 2
morphism k : X -> Obs ~ {family}

program p : X -> Obs
    sample y <- k(x)
    return y

export p
"""


def test_a_horseshoe_morphism_takes_its_scale() -> None:
    """`~ Horseshoe(0.5)` is a kernel with that scale, no network and nothing learned."""
    given = check(MORPHISM.format(family="Horseshoe(0.5)"))
    assert [d.message for d in given.diagnostics if d.is_error] == []
    kernel = dsl.loads(MORPHISM.format(family="Horseshoe(0.5)")).morphism.morphisms["k"]
    assert [n for n, _ in kernel.named_parameters()] == []


@pytest.mark.parametrize(("options", "start"), [("", 1.0), (" [scale=0.25]", 0.25)])
def test_a_bare_horseshoe_morphism_learns_its_global_scale(options: str, start: float) -> None:
    """quivers' `ConditionalHorseshoe`: no network, one learnable global scale (softplus,
    started at the `scale` option, 1.0 by default); each codomain number an independent
    horseshoe draw, the input giving the batch only. Scored as the step family is, and
    its gradient reaches the scale."""
    source = MORPHISM.format(family="Horseshoe").replace(" ~ Horseshoe", f"{options} ~ Horseshoe")
    oracle.require_head(source)
    checked = check(source)
    assert [d.message for d in checked.diagnostics if d.is_error] == []
    kernel = dsl.loads(source).morphism.morphisms["k"]
    assert [n for n, _ in kernel.named_parameters()] == ["raw_scale"]
    scale = float(torch.nn.functional.softplus(kernel.raw_scale.detach()))
    assert scale == pytest.approx(start, rel=1e-5)
    x = torch.tensor([0, 1, 1])
    value = torch.tensor([[0.1, -2.0, 5.0], [0.0, 0.3, -0.7], [1.5, 1.5, 1.5]])
    got = kernel.log_prob(x, value)
    held = kernel.std()
    assert held is not None
    want = Horseshoe(held[0].detach().expand(3, 3)).log_prob(value).sum(-1)
    torch.testing.assert_close(got.detach(), want, rtol=1e-6, atol=1e-6)
    got.sum().backward()
    assert kernel.raw_scale.grad is not None and torch.isfinite(kernel.raw_scale.grad)
    assert kernel.rsample(x).shape == (3, 3)


JOINED = """object Group : FinSet 5
object Item : FinSet 3

program joined : Group -> Group
    sample mu <- Normal(0.0, 1.0)
    observe y : Group * Item <- {y}
    observe z : Group <- {z}
    return mu

export joined
"""
INDEPENDENT = JOINED.format(
    y="Independent(Normal(mu, 1.0), 1)", z="Independent(Restrict(Normal(mu, 1.0), 0.0), 1)"
)
ELEMENTWISE = JOINED.format(y="Normal(mu, 1.0)", z="Restrict(Normal(mu, 1.0), 0.0)")


def _scored(source: str) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    checked = check(source)
    assert [d.message for d in checked.diagnostics if d.is_error] == []
    program = compile_model(checked, "joined")
    torch.manual_seed(0)
    observed = {"y": torch.randn(5, 3, dtype=F64), "z": torch.rand(5, dtype=F64) * 2.0}
    mu = {"mu": torch.tensor(0.4, dtype=F64)}
    joint = program.log_joint({}, {**observed, **mu}).double().reshape(())
    return joint, program.log_likelihood({}, observed, mu)


def test_quivers_grammar_parses_independent() -> None:
    oracle.require_head(INDEPENDENT)


def test_independent_keeps_the_density_and_joins_the_pointwise_terms() -> None:
    """quivers' `Independent(base, n)` is torch's: the base's density, its innermost n
    batch axes one event. The joint is the elementwise program's exactly; the pointwise
    log-likelihood has one term per Group (y's Items summed) and one for all of z."""
    joint, terms = _scored(INDEPENDENT)
    plain_joint, plain_terms = _scored(ELEMENTWISE)
    torch.testing.assert_close(joint, plain_joint, rtol=1e-14, atol=1e-12)  # summed apart
    assert terms["y"].shape == (5,) and terms["z"].shape == ()
    torch.testing.assert_close(terms["y"], plain_terms["y"].sum(-1), rtol=1e-15, atol=1e-12)
    torch.testing.assert_close(terms["z"], plain_terms["z"].sum(), rtol=1e-15, atol=1e-12)


@pytest.mark.parametrize(
    ("y", "code", "words"),
    [
        (
            "Mixture([0.5, 0.5], [Independent(Normal(mu, 1.0), 1), Normal(0.0, 1.0)])",
            "QVR104",
            "write it outermost",
        ),
        ("Independent(Normal(mu, 1.0), 3)", "QVR311", "joins 3 plates"),
        ("Independent(Normal(mu, 1.0), mu)", "QVR311", "a whole number written out"),
    ],
)
def test_what_independent_cannot_mean_is_said_at_the_construct(
    y: str, code: str, words: str
) -> None:
    checked = check(JOINED.format(y=y, z="Normal(mu, 1.0)"))
    errors = [d for d in checked.diagnostics if d.is_error]
    assert [d.code for d in errors] == [code], [d.message for d in errors]
    assert words in errors[0].message
