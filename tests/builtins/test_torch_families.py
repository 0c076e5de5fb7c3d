"""Every family of the registry, built in torch from its example call: draws lie in the
support the registry states, score finitely, and have the shape its event rule gives."""

from __future__ import annotations

import inspect

import pytest
import torch
from torch import distributions as D

from qvr_core.builtins import FAMILIES
from qvr_core.runtime.distributions import make_distribution, torch_constraint

# torch itself re-draws a Wishart sample it finds singular, and says so
pytestmark = pytest.mark.filterwarnings("ignore:Singular sample detected")

STOCHASTIC = sorted(n for n, f in FAMILIES.items() if f.has_distribution)


def _args(name: str, batch: tuple[int, ...] = ()) -> dict[str, torch.Tensor]:
    """The registry's example arguments as tensors, with `batch` leading axes (a number
    beside a vector or matrix parameter is left to broadcast, as torch expects)."""
    spec = FAMILIES[name]
    out = {}
    for key, value in spec.example.items():
        t = torch.tensor(value, dtype=torch.get_default_dtype())
        widen = spec.event_rank == 0 or spec.param(key).rank > 0 or len(spec.params) == 1  # type: ignore[union-attr]
        out[key] = t.expand((*batch, *t.shape)) if widen else t
    return out


@pytest.mark.parametrize("name", STOCHASTIC)
def test_examples_satisfy_their_parameter_constraints(name: str) -> None:
    spec = FAMILIES[name]
    args = _args(name)
    for key, value in args.items():
        param = spec.param(key)
        assert param is not None, f"{name}: the example names '{key}', not a parameter"
        ok = torch_constraint(param.constraint, args).check(value)
        assert bool(ok.all()), f"{name}.{key} = {value.tolist()} breaks {param.constraint}"


@pytest.mark.parametrize("name", STOCHASTIC)
@pytest.mark.parametrize("batch", [(), (4,)])
def test_draws_lie_in_the_support_score_finitely_and_have_the_event_shape(
    name: str, batch: tuple[int, ...]
) -> None:
    torch.manual_seed(0)
    spec = FAMILIES[name]
    args = _args(name, batch)
    dist = make_distribution(name, args, spec.example_space)
    if not spec.params:  # no argument to carry the batch (Flat): the runtime expands it
        dist = dist.expand(batch)
    example_shapes = {k: tuple(_args(name)[k].shape) for k in args}
    event = spec.event_shape(example_shapes, spec.example_space)
    assert tuple(dist.event_shape) == event
    assert tuple(dist.batch_shape) == batch
    x = dist.sample((7,))
    assert tuple(x.shape) == (7, *batch, *event)
    inside = torch_constraint(spec.support, args).check(x)
    assert bool(inside.all()), f"{name} drew outside {spec.support}: {x}"
    assert bool(dist.support.check(x).all())
    lp = dist.log_prob(x)
    assert tuple(lp.shape) == (7, *batch)
    assert bool(torch.isfinite(lp).all()), f"{name}: log_prob {lp}"
    assert (x.dtype.is_floating_point and not spec.discrete) or spec.discrete


@pytest.mark.parametrize("name", STOCHASTIC)
def test_names_match_torch_where_torch_has_the_family(name: str) -> None:
    """The registry's parameter names are torch's where torch's class has the same name."""
    cls = getattr(D, name, None)
    if cls is None:
        pytest.skip(f"torch has no {name}")
    names = {p.name for schema in FAMILIES[name].schemas for p in schema}
    assert names <= set(inspect.signature(cls.__init__).parameters)


def test_truncated_normal_scores_like_the_renormalised_normal() -> None:
    mu, sigma, low, high = (torch.tensor(v) for v in (0.5, 1.5, -1.0, 2.0))
    dist = make_distribution(
        "TruncatedNormal", {"mu": mu, "sigma": sigma, "low": low, "high": high}
    )
    x = torch.linspace(-0.9, 1.9, 9)
    normal = D.Normal(mu, sigma)
    expected = normal.log_prob(x) - torch.log(normal.cdf(high) - normal.cdf(low))
    assert torch.allclose(dist.log_prob(x), expected, atol=1e-5)


def test_half_student_t_is_twice_the_student_t_density_on_the_half_line() -> None:
    df, scale = torch.tensor(3.0), torch.tensor(2.0)
    dist = make_distribution("HalfStudentT", {"df": df, "scale": scale})
    x = torch.tensor([0.1, 1.0, 5.0])
    expected = D.StudentT(df, 0.0, scale).log_prob(x) + torch.log(torch.tensor(2.0))
    assert torch.allclose(dist.log_prob(x), expected)
    assert dist.log_prob(torch.tensor(-1.0)) == -torch.inf


def test_logistic_has_the_logistic_density() -> None:
    loc, scale = torch.tensor(1.0), torch.tensor(2.0)
    dist = make_distribution("Logistic", {"loc": loc, "scale": scale})
    x = torch.tensor([-3.0, 0.0, 1.0, 4.0])
    z = (x - loc) / scale
    expected = -z - 2 * torch.nn.functional.softplus(-z) - torch.log(scale)
    assert torch.allclose(dist.log_prob(x), expected, atol=1e-5)


def test_beta_binomial_sums_to_one_and_matches_the_beta_mixture() -> None:
    n, a, b = torch.tensor(6.0), torch.tensor(2.0), torch.tensor(3.0)
    dist = make_distribution(
        "BetaBinomial", {"total_count": n, "concentration1": a, "concentration0": b}
    )
    ks = torch.arange(7.0)
    probs = dist.log_prob(ks).exp()
    assert torch.allclose(probs.sum(), torch.tensor(1.0), atol=1e-5)
    # against a quadrature of Binomial(n, p) Beta(a, b) over p
    p = torch.linspace(1e-4, 1 - 1e-4, 20001)
    dens = D.Beta(a, b).log_prob(p).exp()
    mix = torch.stack([(D.Binomial(n, probs=p).log_prob(k).exp() * dens).mean() for k in ks])
    assert torch.allclose(probs, mix / mix.sum(), atol=1e-3)


def test_inverse_wishart_mean_is_psi_over_df_minus_d_minus_one() -> None:
    torch.manual_seed(1)
    tril = torch.tensor([[1.0, 0.0], [0.5, 1.0]])
    df = torch.tensor(8.0)
    dist = make_distribution("InverseWishart", {"df": df, "scale_tril": tril})
    mean = dist.sample((20000,)).mean(0)
    assert torch.allclose(mean, tril @ tril.T / (df - 2 - 1), atol=0.03)


def test_matrix_normal_has_kronecker_covariance() -> None:
    torch.manual_seed(2)
    u = torch.tensor([[1.0, 0.3], [0.3, 2.0]])
    v = torch.tensor([[1.0, 0.0, 0.0], [0.0, 2.0, 0.5], [0.0, 0.5, 1.0]])
    dist = make_distribution(
        "MatrixNormal", {"loc": torch.zeros(2, 3), "row_covariance": u, "col_covariance": v}
    )
    x = dist.sample((40000,))
    # Cov(X[i, j], X[k, l]) = U[i, k] V[j, l]
    cov = torch.einsum("nij,nkl->ijkl", x, x) / x.shape[0]
    assert torch.allclose(cov, torch.einsum("ik,jl->ijkl", u, v), atol=0.06)


def test_ordered_logistic_category_probabilities_are_sigmoid_differences() -> None:
    eta, cuts = torch.tensor(0.3), torch.tensor([-1.0, 0.0, 1.5])
    dist = make_distribution("OrderedLogistic", {"predictor": eta, "cutpoints": cuts})
    cdf = torch.cat([torch.sigmoid(cuts - eta), torch.ones(1)])
    expected = cdf - torch.cat([torch.zeros(1), cdf[:-1]])
    assert torch.allclose(dist.log_prob(torch.arange(4)).exp(), expected)


def test_zero_inflated_and_hurdle_poisson_put_their_mass_where_they_say() -> None:
    pi, rate = torch.tensor(0.3), torch.tensor(2.5)
    ks = torch.arange(60.0)
    zip_ = make_distribution("ZeroInflatedPoisson", {"zero_prob": pi, "rate": rate})
    hurdle = make_distribution("HurdlePoisson", {"zero_prob": pi, "rate": rate})
    for dist in (zip_, hurdle):
        assert torch.allclose(dist.log_prob(ks).exp().sum(), torch.tensor(1.0), atol=1e-5)
    assert torch.allclose(zip_.log_prob(torch.tensor(0.0)).exp(), pi + (1 - pi) * torch.exp(-rate))
    assert torch.allclose(hurdle.log_prob(torch.tensor(0.0)).exp(), pi)
    torch.manual_seed(3)
    draws = hurdle.sample((20000,))
    assert abs(float((draws == 0).float().mean()) - 0.3) < 0.02


def test_mixture_normal_scores_the_weighted_sum_of_its_components() -> None:
    w, loc, scale = torch.tensor([0.2, 0.8]), torch.tensor([-1.0, 2.0]), torch.tensor([0.5, 1.0])
    dist = make_distribution("MixtureNormal", {"weights": w, "loc": loc, "scale": scale})
    x = torch.tensor([-1.0, 0.5, 3.0])
    expected = (w * D.Normal(loc, scale).log_prob(x.unsqueeze(-1)).exp()).sum(-1).log()
    assert torch.allclose(dist.log_prob(x), expected)


def test_von_mises_draws_at_a_huge_concentration_end_and_sit_at_the_mean() -> None:
    """torch's rejection sampler never accepts at concentration 1e20 (the fuzzer's hang);
    past 1e6 a draw is the wrapped normal approximation, below that torch's own."""
    loc = torch.tensor([3.1, -1.0, 0.5])
    concentration = torch.tensor([1e20, 1e8, 2.0])
    dist = make_distribution("VonMises", {"loc": loc, "concentration": concentration})
    torch.manual_seed(0)
    draws = dist.sample((4000,))
    assert draws.shape == (4000, 3)
    assert bool(((draws >= -torch.pi) & (draws < torch.pi)).all())
    torch.testing.assert_close(draws[:, 0], loc[0].expand(4000), atol=1e-6, rtol=0)
    assert float((draws[:, 1] - loc[1]).std()) == pytest.approx(1e-4, rel=0.1)
    circular_mean = torch.atan2(draws[:, 2].sin().mean(), draws[:, 2].cos().mean())
    assert float(circular_mean) == pytest.approx(0.5, abs=0.05)


@pytest.mark.parametrize("name", STOCHASTIC)
def test_every_family_expands_over_new_batch_axes(name: str) -> None:
    """The runtime expands a family to its plates and to observed values; torch asks
    each subclass with its own constructor for an `expand` (the fuzzer's HalfStudentT)."""
    try:
        dist = make_distribution(name, _args(name))
    except Exception as e:  # LKJCholesky needs its object's size
        pytest.skip(f"{name} is built with its object: {e}")
    if FAMILIES[name].chain:  # its last batch axis is the chain's: the new axes lead it
        dist = dist.expand((3,))
    wider = dist.expand((2, *dist.batch_shape))
    assert type(wider) is type(dist)
    assert tuple(wider.batch_shape) == (2, *dist.batch_shape)
    draw = wider.sample()
    torch.testing.assert_close(wider.log_prob(draw)[1], dist.log_prob(draw[1]))
