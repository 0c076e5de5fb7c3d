"""A kernel morphism whose family takes arguments (`~ Cauchy(0.0, 1.0)`): the given
parameters are fixed, the network gives the rest; draws, densities, supports, and the
families fixtures of quivers run as `qvr run` runs them (prior, NUTS, SVI)."""

from __future__ import annotations

import math

import pytest
import torch
from torch.distributions import constraints as C

from qvr_core import dsl
from qvr_core.builtins import FAMILIES
from qvr_core.check import check
from qvr_core.runs import run_program
from qvr_core.runtime.distributions import make_distribution
from qvr_core.runtime.program import ProgramModule
from qvr_core.sizing.resources import estimate
from tests.conformance.shared import families_fixture

#: quivers' fixtures `tests/transpile/fixtures/families/*.qvr` (the 13 morphism kernels).
FIXTURES = {
    "Cauchy": (0.0, 1.0),
    "Chi2": (3.0,),
    "ContinuousBernoulli": (0.5,),
    "FisherSnedecor": (5.0, 5.0),
    "GeneralizedPareto": (0.0, 1.0, 0.5),
    "Gumbel": (0.0, 1.0),
    "InverseGamma": (3.0, 1.0),
    "Kumaraswamy": (2.0, 2.0),
    "Laplace": (0.0, 1.0),
    "Pareto": (1.0, 2.0),
    "RelaxedBernoulli": (0.5, 0.3),
    "StudentT": (5.0, 0.0, 1.0),
    "Weibull": (1.5, 1.0),
}


def _source(decl: str, cod: str = "Obs") -> str:
    return (
        "object Obs : Real 4\nobject Mix : Simplex 3\n"
        f"morphism k : Obs -> {cod} {decl}\n"
        f"program p : Obs -> {cod}\n    sample x <- k\n    return x\nexport p\n"
    )


def _program(source: str) -> ProgramModule:
    model = dsl.loads(source).morphism
    assert isinstance(model, ProgramModule)
    return model


@pytest.mark.parametrize("family", sorted(FIXTURES))
def test_a_given_family_draws_and_scores_as_its_torch_distribution(family: str) -> None:
    args = FIXTURES[family]
    model = _program(_source(f"[role=kernel] ~ {family}({', '.join(map(str, args))})"))
    assert list(model.parameters()) == []  # every parameter given: no network
    torch.manual_seed(0)
    x = torch.randn(64, 4)
    draws = model.rsample(x)
    assert draws.shape == (64, 4) and bool(torch.isfinite(draws).all())
    spec = FAMILIES[family]
    tensors = {p.name: torch.tensor(v) for p, v in zip(spec.params, args, strict=True)}
    expected = make_distribution(family, tensors)
    assert bool(expected.support.check(draws).all())
    scored = model.log_joint(x, {"x": draws})
    assert torch.allclose(scored, expected.log_prob(draws).sum(-1), atol=1e-4)
    # the same distribution whatever the input
    assert torch.allclose(model.log_joint(-x, {"x": draws}), scored, atol=1e-4)
    assert bool(torch.isfinite(model.mean(x)).all())


def test_the_parameters_left_out_are_the_networks() -> None:
    model = _program(_source("~ StudentT(df=3.0)"))
    kernel = model.morphisms["k"]
    assert kernel.net is not None
    x = torch.randn(5, 4)
    d = kernel.family.dist(kernel.params(x))
    assert torch.equal(d.df, torch.full((5, 4), 3.0))  # given
    assert d.loc.shape == (5, 4) and bool((d.scale > 0).all())  # the network's, per input
    assert not torch.allclose(d.loc[0], d.loc[1])


def test_an_option_named_after_a_parameter_fixes_it_and_the_network_gives_the_vector() -> None:
    """quivers' relaxed one-hot fixture: temperature 0.5, probabilities from the input."""
    model = _program(_source("[role=kernel, temperature=0.5] ~ RelaxedOneHotCategorical"))
    kernel = model.morphisms["k"]
    x = torch.randn(6, 4)
    d = kernel.family.dist(kernel.params(x))
    assert torch.equal(d.temperature, torch.tensor(0.5))
    z = model.rsample(x)
    assert z.shape == (6, 4) and torch.allclose(z.sum(-1), torch.ones(6), atol=1e-5)
    assert model.site_support("x") == "simplex"
    assert torch.allclose(model.mean(x).sum(-1), torch.ones(6), atol=1e-5)


def test_a_fixed_vector_family_and_numbers_per_coordinate() -> None:
    model = _program(_source("[role=kernel] ~ Dirichlet([1.0, 2.0, 3.0])", cod="Mix"))
    draws = model.rsample(torch.randn(4000, 4))
    assert torch.allclose(draws.mean(0), torch.tensor([1.0, 2.0, 3.0]) / 6, atol=0.02)
    model = _program(_source("~ Normal(loc=[0.0, 10.0, 20.0, 30.0], scale=0.1)"))
    means = model.rsample(torch.randn(2000, 4)).mean(0)
    assert torch.allclose(means, torch.tensor([0.0, 10.0, 20.0, 30.0]), atol=0.05)


def test_a_value_outside_a_given_bound_scores_minus_infinity() -> None:
    """A Pareto above its scale: torch's density is not 0 below it (and its check
    raises), so the kernel masks it; inference moves the site exactly where it reads the
    program's `site_constraint`, else in `positive`."""
    model = _program(_source("~ Pareto(1.0, 2.0)"))
    x = torch.randn(2, 4)
    value = torch.tensor([[0.5, 2.0, 3.0, 4.0], [1.5, 2.0, 3.0, 4.0]])
    scores = model.log_joint(x, {"x": value})
    assert scores[0] == -math.inf and bool(torch.isfinite(scores[1]))
    assert model.site_support("x") == "positive"
    exact = model.site_constraint("x")
    assert isinstance(exact, C.greater_than_eq) and bool((exact.lower_bound == 1).all())


def test_a_program_without_a_bounded_step_keeps_the_named_supports() -> None:
    model = _program(_source("~ Gamma(2.0, 1.0)"))
    assert model.site_constraint("x") is C.positive and model.site_support("x") == "positive"


@pytest.mark.parametrize(
    "decl",
    [
        "[role=kernel] ~ Cauchy(0.0, 1.0)",
        "[role=kernel, hidden_dim=5] ~ StudentT(df=3.0)",
        "[role=kernel, param_source=linear] ~ Normal(scale=0.5)",
        "[role=kernel, temperature=0.5, hidden_dim=3] ~ RelaxedOneHotCategorical",
    ],
)
def test_the_memory_estimate_counts_the_parameters_as_compiled(decl: str) -> None:
    source = _source(decl)
    module = check(source)
    assert module.ok, module.errors
    compiled = sum(p.numel() for p in _program(source).parameters())
    assert estimate(module, "p").parameters == compiled


CORPUS_FILES = [
    *(f"{f.lower()}@" for f in FIXTURES),
    "relaxedonehotcategorical@",
]


@pytest.mark.parametrize("prefix", CORPUS_FILES)
@pytest.mark.parametrize("method", ["prior", "svi", "nuts"])
def test_a_families_fixture_of_quivers_runs(prefix: str, method: str) -> None:
    source = families_fixture(prefix)
    summary = run_program(
        source, method=method, steps=6, batch=2, chains=1, max_tree_depth=2, seed=1
    )
    assert summary.method == method and summary.stopped is False
    if method == "prior":
        assert summary.losses and all(math.isfinite(v) for v in summary.losses)
    else:
        assert summary.posterior is not None
