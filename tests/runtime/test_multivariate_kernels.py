"""Kernels whose one draw is a vector or a matrix filling the codomain (quivers' conditional
MultivariateNormal, LowRankMVN, Wishart, InverseWishart, MatrixNormal and GP): each scores
as scipy does at known parameters, draws the shape the checker states, keeps a latent
matrix positive-definite through NUTS's map, and fits; the six quivers fixtures run."""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from scipy import stats
from torch import distributions as D

from qvr_core import dsl
from qvr_core.builtins import FAMILIES
from qvr_core.check import check
from qvr_core.check.types import ObjectType, Product
from qvr_core.inference import SVI, AutoNormalGuide
from qvr_core.inference.many import ManyPotential
from qvr_core.plan.run_arguments import RunArguments
from qvr_core.runs import run_program
from qvr_core.runs.prepare import prepare
from qvr_core.runtime.distributions import FlatPositiveDefinite, bijection, unvalidated
from qvr_core.runtime.families import GP_JITTER, Family, make_family
from qvr_core.runtime.program import ProgramModule
from qvr_core.runtime.wishart import RecordableWishart, multivariate_lgamma
from qvr_core.text import rules
from tests.conformance.shared import families_fixture
from tests.inference.batched_agreement import assert_rows_are_eager, eager_potential


@pytest.fixture(autouse=True)
def _float64() -> Iterator[None]:
    """Densities compared with scipy's in its precision."""
    before = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(before)


#: family -> (codomain size, option block, the draw's shape the checker states)
CASES = {
    "MultivariateNormal": (4, "", (4,)),
    "LowRankMVN": (5, ", rank=2", (5,)),
    "Wishart": (9, "", (3, 3)),
    "InverseWishart": (9, "", (3, 3)),
    "MatrixNormal": (12, ", over=[Row, Col]", (3, 4)),
    "GP": (2, ", kernel=rbf, length_scale=0.7", (2,)),
}


def _source(family: str) -> str:
    size, options, _ = CASES[family]
    return (
        "object Row : FinSet 3\nobject Col : FinSet 4\n"
        f"object In : Real 6\nobject Out : Real {size}\n"
        f"morphism k : In -> Out [role=kernel{options}] ~ {family}\n"
        "program p : In -> Out\n    sample x <- k\n    return x\nexport p\n"
    )


def _program(family: str) -> ProgramModule:
    model = dsl.loads(_source(family)).morphism
    assert isinstance(model, ProgramModule)
    return model


def _family(family: str) -> Family:
    size, _, draw = CASES[family]
    info = check(_source(family)).morphisms["k"]
    cod = Product((ObjectType("Out", "real", size),), ("Out",))
    return make_family(family, cod, draw, info.family_options)


def _tril(raw: torch.Tensor, n: int) -> torch.Tensor:
    """The Cholesky factor a network's entries stand for: row by row, diagonal softplus'd."""
    out = torch.zeros(n, n)
    rows, cols = torch.tril_indices(n, n)
    out[rows, cols] = raw
    out.diagonal().copy_(F.softplus(out.diagonal()) + 1e-6)
    return out


def _a(t: torch.Tensor) -> np.ndarray:
    return t.detach().numpy()


# ------------------------------------------------------------- what the checker says


@pytest.mark.parametrize("family", sorted(CASES))
def test_the_checker_states_the_shape_of_one_draw_and_the_draw_has_it(family: str) -> None:
    module = check(_source(family))
    assert module.ok, module.errors
    info = module.morphisms["k"]
    assert info.draw == CASES[family][2]
    model = _program(family)
    torch.manual_seed(0)
    value = model.run(torch.randn(7, 6)).values["x"]
    assert tuple(value.shape) == (7, math.prod(info.draw))
    kernel = model.morphisms["k"]
    params = kernel.params(torch.randn(7, 6))  # type: ignore[operator]  # a Kernel
    if family != "GP":
        dist = kernel.family.dist(params)  # type: ignore[union-attr]  # a Whole family
        assert tuple(dist.event_shape) == info.draw
    assert torch.isfinite(model.log_joint(torch.randn(7, 6), {"x": value})).all()


def test_a_wishart_draw_is_a_positive_definite_matrix_row_by_row() -> None:
    for family in ("Wishart", "InverseWishart"):
        torch.manual_seed(1)
        value = _program(family).run(torch.randn(50, 6)).values["x"]
        assert FlatPositiveDefinite(3).check(value).all()


def test_rank_is_the_covariance_factors_on_a_low_rank_mvn_not_the_networks() -> None:
    info = check(_source("LowRankMVN")).morphisms["k"]
    assert info.rank is None and dict(info.family_options)["rank"] == 2
    model = _program("LowRankMVN")
    kernel = model.morphisms["k"]
    assert kernel.net.out.weight.shape[0] == 5 + 5 * 2 + 5  # type: ignore[union-attr]  # an MLP
    linear = check(_source("LowRankMVN").replace(", rank=2", ", rank=3, param_source=linear"))
    assert linear.ok and linear.morphisms["k"].rank is None


@pytest.mark.parametrize(
    ("family", "size", "options", "words"),
    [
        ("Wishart", 8, "", "needs a square number of them"),
        ("MatrixNormal", 12, "", "name them, rows then columns, with over=[Row, Col]"),
        ("MatrixNormal", 10, ", over=[Row, Col]", "needs 12 of them"),
        ("GP", 4, "", "the 6 features of In do not split so"),
    ],
)
def test_a_draw_that_does_not_fill_the_codomain_is_refused(
    family: str, size: int, options: str, words: str
) -> None:
    source = _source(family).replace(f"Real {CASES[family][0]}", f"Real {size}")
    source = source.replace(CASES[family][1], options)
    (error,) = check(source).errors
    assert error.code == rules.FAMILY_CODOMAIN.code and words in error.message


def test_a_gp_is_a_morphisms_family_its_hyperparameters_learned() -> None:
    module = check(_source("GP").replace("~ GP", "~ GP(1.0, 2.0)"))
    assert [e.code for e in module.errors] == [rules.FAMILY_ARGUMENTS.code]
    step = "object N : FinSet 3\nprogram p : N -> N\n    sample f <- GP(1.0, 1.0)\n    return f\n"
    assert [e.code for e in check(step).errors] == [rules.WRONG_KIND.code]
    kernel = _program("GP").morphisms["k"]
    assert {n for n, _ in kernel.named_parameters()} == {"raw_length_scale", "raw_amplitude"}
    start = F.softplus(kernel.raw_length_scale.detach())
    assert float(start) == pytest.approx(0.7, rel=1e-5)


def test_the_gp_covariance_functions_are_the_registrys_choices() -> None:
    from qvr_core.runtime.families import _GP_COVARIANCES

    option = FAMILIES["GP"].kernel.option("kernel")  # type: ignore[union-attr]  # a form
    assert option is not None and set(_GP_COVARIANCES) == set(option.choices)


# ------------------------------------------------------- densities at known parameters


def test_multivariate_normal_scores_as_scipy() -> None:
    fam = _family("MultivariateNormal")
    torch.manual_seed(2)
    raw = torch.randn(4 + 10)
    value = torch.randn(4)
    tril = _tril(raw[4:], 4)
    want = stats.multivariate_normal(_a(raw[:4]), _a(tril @ tril.T)).logpdf(_a(value))
    assert float(fam.log_prob(raw, None, value)) == pytest.approx(want, rel=1e-9)
    assert torch.equal(fam.mean(raw, None), raw[:4])


def test_low_rank_mvn_scores_as_scipy() -> None:
    fam = _family("LowRankMVN")
    torch.manual_seed(3)
    raw = torch.randn(5 + 10 + 5)
    value = torch.randn(5)
    loc, factor = raw[:5], raw[5:15].reshape(5, 2)
    cov = factor @ factor.T + torch.diag(F.softplus(raw[15:]) + 1e-6)
    want = stats.multivariate_normal(_a(loc), _a(cov)).logpdf(_a(value))
    assert float(fam.log_prob(raw, None, value)) == pytest.approx(want, rel=1e-9)


def _spd(seed: int, n: int = 3) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(n, n, generator=g)
    return a @ a.T + n * torch.eye(n)


def test_wishart_scores_as_scipy_with_quivers_degrees_of_freedom() -> None:
    fam = _family("Wishart")
    torch.manual_seed(4)
    raw = torch.randn(1 + 6)
    df = float(F.softplus(raw[0])) + 3  # quivers: softplus + K, above K - 1
    tril = _tril(raw[1:], 3)
    value = _spd(5)
    want = stats.wishart(df, _a(tril @ tril.T)).logpdf(_a(value))
    assert float(fam.log_prob(raw, None, value.flatten())) == pytest.approx(want, rel=1e-9)
    assert torch.allclose(fam.mean(raw, None), (df * tril @ tril.T).flatten())


def test_inverse_wishart_scores_as_scipy_invwishart() -> None:
    """The inverse of quivers' Wishart draw: scale Ψ = (L Lᵀ)⁻¹ for the network's L."""
    fam = _family("InverseWishart")
    torch.manual_seed(6)
    raw = torch.randn(1 + 6)
    df = float(F.softplus(raw[0])) + 3
    tril = _tril(raw[1:], 3)
    psi = torch.linalg.inv(tril @ tril.T)
    value = _spd(7)
    want = stats.invwishart(df, _a(psi)).logpdf(_a(value))
    assert float(fam.log_prob(raw, None, value.flatten())) == pytest.approx(want, rel=1e-8)
    stand_in = psi / (df - 3 - 1) if df > 4 else psi / (df + 3 + 1)
    assert torch.allclose(fam.mean(raw, None), stand_in.flatten())


@pytest.mark.parametrize("family", ["Wishart", "InverseWishart"])
def test_a_matrix_draw_that_is_not_positive_definite_scores_minus_infinity(family: str) -> None:
    """Where NUTS moved a latent matrix whose rounding left it not positive definite,
    its density is -inf (the point rejected, as Stan rejects it), not torch's error;
    a positive definite draw in the same batch keeps its density."""
    fam = _family(family)
    torch.manual_seed(8)
    raw = torch.randn(2, 1 + 6)
    good = _spd(9)
    bad = torch.tensor([[1.0, 2.0, 0.0], [2.0, 1.0, 0.0], [0.0, 0.0, 1.0]])  # eigenvalue -1
    scores = fam.log_prob(raw, None, torch.stack([good, bad]).flatten(1))
    assert scores.shape == (2,)
    assert torch.isfinite(scores[0]) and scores[0] == fam.log_prob(raw[0], None, good.flatten())
    assert scores[1] == -math.inf


def test_matrix_normal_scores_as_scipy_row_by_row() -> None:
    fam = _family("MatrixNormal")
    torch.manual_seed(8)
    raw = torch.randn(12 + 6 + 10)
    loc = raw[:12].reshape(3, 4)
    row, col = _tril(raw[12:18], 3), _tril(raw[18:], 4)
    value = torch.randn(3, 4)
    want = stats.matrix_normal(_a(loc), _a(row @ row.T), _a(col @ col.T)).logpdf(_a(value))
    assert float(fam.log_prob(raw, None, value.flatten())) == pytest.approx(want, rel=1e-8)


@pytest.mark.parametrize("kernel", ["rbf", "matern52", "linear"])
def test_a_gp_scores_as_scipy_at_its_input_locations(kernel: str) -> None:
    cod = Product((ObjectType("Out", "real", 2),), ("Out",))
    fam = make_family("GP", cod, (2,), (("kernel", kernel),))
    torch.manual_seed(9)
    x = torch.randn(6)  # two locations of three features
    held = torch.tensor([0.7, 1.3])  # length scale, amplitude
    value = torch.randn(2)
    a, b = _a(x[:3]), _a(x[3:])
    r = float(np.linalg.norm(a - b))
    k01 = {
        "rbf": math.exp(-0.5 * r**2 / 0.7**2),
        "matern52": (1 + math.sqrt(5) * r / 0.7 + 5 * r**2 / (3 * 0.7**2))
        * math.exp(-math.sqrt(5) * r / 0.7),
        "linear": float(a @ b),
    }[kernel]
    diag = [float(a @ a), float(b @ b)] if kernel == "linear" else [1.0, 1.0]
    cov = 1.3**2 * np.array([[diag[0], k01], [k01, diag[1]]]) + GP_JITTER * np.eye(2)
    want = stats.multivariate_normal(np.zeros(2), cov).logpdf(_a(value))
    assert float(fam.log_prob(x, held, value)) == pytest.approx(want, rel=1e-6)


# ------------------------------------------------------------- NUTS's map and fits


def test_the_map_onto_positive_definite_matrices_is_one_to_one_with_its_jacobian() -> None:
    t = bijection("x", FlatPositiveDefinite(3))
    u = torch.randn(4, 6, dtype=torch.float64)
    y = t(u)
    assert FlatPositiveDefinite(3).check(y).all()
    assert torch.allclose(t.inv(y), u)
    rows, cols = torch.tril_indices(3, 3)
    for i in range(4):  # the density lives on the free entries, the lower triangle

        def lower(v: torch.Tensor) -> torch.Tensor:
            return t(v).unflatten(-1, (3, 3))[rows, cols]

        jac = torch.autograd.functional.jacobian(lower, u[i])
        want = torch.linalg.slogdet(jac).logabsdet
        assert float(t.log_abs_det_jacobian(u[i], y[i])) == pytest.approx(float(want))


@pytest.mark.parametrize("family", sorted(CASES))
def test_a_short_fit_lowers_the_loss(family: str) -> None:
    """SVI fits the kernel's network (a GP's hyperparameters) to draws of the kernel."""
    torch.manual_seed(10)
    model = _program(family)
    x = torch.randn(32, 6)
    with torch.no_grad():
        observed = {"x": _program(family).run(x).values["x"]}
    guide = AutoNormalGuide(model, observed_names=["x"])
    svi = SVI(model, guide, torch.optim.Adam(list(model.parameters()), lr=0.02))
    losses = [svi.step(x, observed) for _ in range(60)]
    assert all(math.isfinite(v) for v in losses)
    assert np.mean(losses[-10:]) < np.mean(losses[:10])


@pytest.mark.parametrize("method", ["nuts", "svi"])
def test_a_latent_wishart_draw_moves_on_positive_definite_matrices(method: str) -> None:
    summary = run_program(
        _source("Wishart"), method=method, steps=6, batch=2, chains=1, max_tree_depth=2, seed=1
    )
    assert summary.stopped is False and summary.posterior is not None


#: The corpus's families fixtures of these kernels, all of which check and run.
FIXTURES = ("multivariatenormal", "lowrankmvn", "wishart", "inversewishart", "gp@", "matrixnormal")


@pytest.mark.parametrize("prefix", FIXTURES)
@pytest.mark.parametrize("method", ["prior", "svi", "nuts"])
def test_the_quivers_fixture_runs(prefix: str, method: str) -> None:
    source = families_fixture(prefix)
    assert check(source).ok
    summary = run_program(
        source, method=method, steps=6, batch=2, chains=1, max_tree_depth=2, seed=1
    )
    assert summary.method == method and summary.stopped is False


def test_a_matrix_over_its_codomains_axes_is_their_real_entries() -> None:
    """quivers' fixture draws a MatrixNormal into `Row * Col` with `over=[Row, Col]`: the
    codomain's factors are the matrix's axes, so the value is 3 x 4 reals (row by row), the
    header `Row * Col` is met, and the prior draws that shape."""
    source = families_fixture("matrixnormal")
    module = check(source)
    assert module.ok, module.errors
    info = module.morphisms["mn_kernel"]
    assert info.draw == (3, 4)
    assert info.type.cod.continuous and info.type.cod.width == 12
    assert info.type.cod.label == "Row * Col"
    summary = run_program(source, method="prior", steps=2, batch=5, seed=1)
    assert summary.sites is not None
    assert summary.sites["m"].support == "real" and summary.sites["m"].shape == (5, 12)


def test_a_product_codomain_other_than_the_axes_is_still_refused() -> None:
    source = families_fixture("matrixnormal").replace("over=[Row, Col]", "over=[Col, Row]")
    (error,) = check(source).errors
    assert error.code == rules.FAMILY_CODOMAIN.code
    assert "real 4 x 3 matrix over Col and Row" in error.message


# ------------------------------------------------------------- batched, recorded


@pytest.mark.parametrize("family", ["Wishart", "InverseWishart"])
def test_a_wishart_kernel_scores_under_vmap_as_row_by_row(family: str) -> None:
    """NUTS scores its chains together under `vmap`, which refuses a value read into
    Python: torch's Wishart read its degrees of freedom when built, its log-gamma's
    argument and its support's symmetry. Batched, each row scores as it does alone,
    a matrix that is not positive definite -inf in its own row only."""
    fam = _family(family)
    torch.manual_seed(10)
    raw = torch.randn(3, 1 + 6)
    bad = torch.tensor([[1.0, 2.0, 0.0], [2.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    values = torch.stack([_spd(11), bad, _spd(12)]).flatten(1)
    with unvalidated():
        batched = torch.func.vmap(lambda r, v: fam.log_prob(r, None, v))(raw, values)
    alone = torch.stack([fam.log_prob(raw[i], None, values[i]) for i in range(3)])
    assert batched[1] == -math.inf and torch.isfinite(batched[[0, 2]]).all()
    torch.testing.assert_close(batched, alone, rtol=1e-12, atol=0.0)


def test_the_wishart_density_is_torchs_and_its_checks_are_torchs_when_validated() -> None:
    torch.manual_seed(13)
    tril = torch.randn(4, 3, 3).tril()
    tril.diagonal(dim1=-2, dim2=-1).abs_().add_(0.5)
    df = torch.rand(4) * 5 + 3.5
    ours, torchs = RecordableWishart(df, tril), D.Wishart(df, scale_tril=tril)
    value = torchs.sample((2,))
    torch.testing.assert_close(ours.log_prob(value), torchs.log_prob(value), rtol=1e-12, atol=0)
    torch.testing.assert_close(
        ours.expand((2, 4)).log_prob(value), torchs.expand((2, 4)).log_prob(value)
    )
    x = torch.rand(6) * 10 + 1.5
    torch.testing.assert_close(multivariate_lgamma(x, 3), torch.mvlgamma(x, 3))
    with pytest.raises(ValueError, match="df"):
        RecordableWishart(torch.tensor(1.5), tril[0], validate_args=True)
    with pytest.raises(ValueError, match="value"):
        RecordableWishart(df[0], tril[0], validate_args=True).log_prob(-torch.eye(3))


@pytest.mark.parametrize("prefix", ["wishart", "inversewishart"])
def test_the_wishart_fixtures_potential_is_recorded_for_all_chains(prefix: str) -> None:
    """Not evaluated chain by chain, eagerly (6 ms a step over 1,191 coordinates), and
    one function of the point: the recorded potential gives the eager one's values."""
    run = prepare(families_fixture(prefix), RunArguments(method="nuts"))
    eager = eager_potential(run)
    torch.manual_seed(14)
    starts = 0.1 * torch.randn(2, eager.layout.size)
    many = ManyPotential(eager, eager.log_density, starts)
    assert many.compiled
    points = assert_rows_are_eager(many, eager, starts)
    assert all(math.isfinite(eager(row)[0]) for row in points)
