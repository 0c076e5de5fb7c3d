"""A Gaussian process's linear algebra in a model's lets: `gp_exp_quad_cov`, `add_diag`,
`cholesky` and `matvec` (issue 49), typed with their sizes and run as Stan runs them.

The covariance of N points is an N x N matrix; the Cholesky factor keeps its type; a
matrix times a vector is shaped as the vector (`z : Point` gives `Point -> R`). A matrix
that is not square, or a vector as long as the matrix is not wide, is QVR207 where both
sizes are known. A matrix that is not positive definite has a factor of NaN, so the log
density is not a number and a sampler rejects the point instead of the run failing.
"""

from __future__ import annotations

import math

import pytest

from qvr_core.check import check
from qvr_core.check.model import Let

GP = """\
object Point : FinSet 4
object Other : FinSet 3

program gp : Point -> Point
    sample rho <- Gamma(25.0, 4.0)
    sample alpha <- HalfNormal(2.0)
    sample z : Point <- Normal(0.0, 1.0)
    sample w : Other <- Normal(0.0, 1.0)
    let cov = add_diag(gp_exp_quad_cov(x, alpha, rho), 1e-10)
    let L = cholesky(cov)
    {lets}
    observe k : Point <- Poisson(rate)
    return z

export gp
"""
STAN_LIKE = "let f = matvec(L, z)\n    let rate = exp(f)"


def lets_of(text: str) -> dict[str, Let]:
    model = check(text).models["gp"]
    return {s.name: s for s in model.steps if isinstance(s, Let)}


def test_the_covariance_its_factor_and_the_product_are_typed() -> None:
    text = GP.format(lets=STAN_LIKE)
    module = check(text)
    assert [d.code for d in module.diagnostics] == []
    lets = lets_of(text)
    # x is data: the checker does not know how many points it holds until the run
    assert lets["cov"].type is not None and lets["cov"].type.element.event == (-1, -1)
    assert lets["L"].type == lets["cov"].type
    assert lets["f"].type is not None and lets["f"].type.label == "Point -> R"


def test_the_covariance_of_a_value_over_a_plate_is_as_wide_as_the_plate() -> None:
    text = GP.format(lets=STAN_LIKE).replace("gp_exp_quad_cov(x,", "gp_exp_quad_cov(z,")
    lets = lets_of(text)
    assert lets["cov"].type is not None and lets["cov"].type.element.event == (4, 4)


@pytest.mark.parametrize(
    "lets, where, said",
    [
        ("let f = matvec(cholesky(z), z)\n    let rate = exp(f)", "z), z)", "square"),
        (
            "let M = gp_exp_quad_cov(z, alpha, rho)\n    let f = matvec(M, w)\n"
            "    let rate = exp(z)",
            "w)\n",
            "4 x 4 matrix by w, 3 long",
        ),
    ],
)
def test_a_matrix_that_is_not_square_or_a_vector_of_another_length_is_qvr207(
    lets: str, where: str, said: str
) -> None:
    text = GP.format(lets=lets)
    module = check(text)
    (error,) = [d for d in module.diagnostics if d.code == "QVR207"]
    assert said in error.message
    assert text[error.span.start :].startswith(where)  # at the argument it is about


def test_the_model_scores_the_non_centred_gaussian_process_as_numpy_does() -> None:
    torch = pytest.importorskip("torch")
    np = pytest.importorskip("numpy")
    from qvr_core.runtime.model import compile_model

    module = check(GP.format(lets=STAN_LIKE))
    program = compile_model(module, "gp")
    x = np.array([-1.0, 0.0, 1.5, 3.0])
    k = np.array([2.0, 5.0, 1.0, 0.0])
    point = {"rho": 1.3, "alpha": 0.8, "z": np.array([0.3, -1.2, 0.5, 0.1])}
    given = {n: torch.tensor(v, dtype=torch.float64) for n, v in point.items()}
    with torch.no_grad():
        ours = float(
            program.log_joint(
                {"x": torch.tensor(x)}, {**given, "w": torch.zeros(3), "k": torch.tensor(k)}
            ).reshape(-1)[0]
        )
    from scipy import stats

    cov = point["alpha"] ** 2 * np.exp(-0.5 * ((x[:, None] - x[None, :]) / point["rho"]) ** 2)
    f = np.linalg.cholesky(cov + 1e-10 * np.eye(4)) @ point["z"]
    expected = (
        stats.gamma(25.0, scale=1 / 4.0).logpdf(point["rho"])
        + stats.halfnorm(scale=2.0).logpdf(point["alpha"])
        + stats.norm.logpdf(point["z"]).sum()
        + stats.norm.logpdf(np.zeros(3)).sum()
        + stats.poisson(np.exp(f)).logpmf(k).sum()
    )
    assert ours == pytest.approx(expected, rel=1e-10)


def test_a_covariance_that_is_not_positive_definite_has_a_factor_of_nan() -> None:
    torch = pytest.importorskip("torch")
    from qvr_core.runtime.functions import Implementations

    singular = torch.ones(3, 3, dtype=torch.float64)  # rank one
    factor = Implementations.cholesky(singular)
    assert torch.isnan(factor).all()
    good = Implementations.cholesky(singular + torch.eye(3, dtype=torch.float64))
    assert torch.allclose(good @ good.T, singular + torch.eye(3, dtype=torch.float64))
    assert not math.isnan(float(good.sum()))


@pytest.mark.parametrize("kernel", ["gp_matern32_cov", "gp_matern52_cov"])
def test_a_matern_process_is_typed_and_scored_as_stan_defines_it(kernel: str) -> None:
    """Stan's Matérn 3/2 and 5/2 covariances of the points' distances d = |x_i - x_j|:
    alpha² (1 + r) exp(-r) with r = √3 d / rho, and alpha² (1 + r + r² / 3) exp(-r) with
    r = √5 d / rho; typed as the exponentiated quadratic is (N points, N x N)."""
    torch = pytest.importorskip("torch")
    np = pytest.importorskip("numpy")
    from scipy import stats

    from qvr_core.runtime.model import compile_model

    text = GP.format(lets=STAN_LIKE).replace("gp_exp_quad_cov(x,", f"{kernel}(z,")
    module = check(text)
    assert [d.code for d in module.diagnostics] == []
    assert lets_of(text)["cov"].type is not None
    assert lets_of(text)["cov"].type.element.event == (4, 4)  # type: ignore[union-attr]
    program = compile_model(module, "gp")
    k = np.array([2.0, 5.0, 1.0, 0.0])
    point = {"rho": 1.3, "alpha": 0.8, "z": np.array([0.3, -1.2, 0.5, 0.1])}
    given = {n: torch.tensor(v, dtype=torch.float64) for n, v in point.items()}
    with torch.no_grad():
        ours = program.log_joint({}, {**given, "w": torch.zeros(3), "k": torch.tensor(k)})
    z = point["z"]
    d = np.abs(z[:, None] - z[None, :])
    if kernel == "gp_matern32_cov":
        r = np.sqrt(3.0) * d / point["rho"]
        cov = point["alpha"] ** 2 * (1 + r) * np.exp(-r)
    else:
        r = np.sqrt(5.0) * d / point["rho"]
        cov = point["alpha"] ** 2 * (1 + r + r**2 / 3) * np.exp(-r)
    f = np.linalg.cholesky(cov + 1e-10 * np.eye(4)) @ z
    expected = (
        stats.gamma(25.0, scale=1 / 4.0).logpdf(point["rho"])
        + stats.halfnorm(scale=2.0).logpdf(point["alpha"])
        + stats.norm.logpdf(z).sum()
        + stats.norm.logpdf(np.zeros(3)).sum()
        + stats.poisson(np.exp(f)).logpmf(k).sum()
    )
    assert float(ours.reshape(-1)[0]) == pytest.approx(expected, rel=1e-10)
