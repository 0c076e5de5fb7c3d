"""A number as an index runs as the entry it names: `beta[0] + beta[1] * x` scores as the
same regression written with two scalar coefficients, and as its densities by hand."""

from __future__ import annotations

import pytest
import torch
from torch import distributions as D

from qvr_core.check import check
from qvr_core.runtime.model import ModelProgram, compile_model
from tests.models import regressions

INDEXED = regressions.kid(6)

SCALARS = """\
object Row : FinSet 6

program kid : Row -> Row
    sample b0 <- Normal(0.0, 10.0)
    sample b1 <- Normal(0.0, 10.0)
    sample sigma <- HalfNormal(5.0)
    let mu = b0 + b1 * mom_iq
    observe kid_score : Row <- Normal(mu, sigma)
    return mu

export kid
"""

X = torch.tensor([1.0, 2.0, 0.5, -1.0, 0.3, 1.7], dtype=torch.float64)
Y = torch.tensor([3.0, 5.1, 2.0, -1.0, 1.5, 4.2], dtype=torch.float64)


def _model(source: str, name: str = "kid") -> ModelProgram:
    checked = check(source)
    assert checked.ok, checked.errors
    return compile_model(checked, name)


def test_a_regression_by_literal_indices_scores_as_written_by_hand() -> None:
    beta = torch.tensor([0.8, 1.9], dtype=torch.float64)
    sigma = torch.tensor(0.7, dtype=torch.float64)
    got = _model(INDEXED).log_joint({"mom_iq": X}, {"beta": beta, "sigma": sigma, "kid_score": Y})
    want = (
        D.Normal(0.0, 10.0).log_prob(beta).sum()
        + D.HalfNormal(5.0).log_prob(sigma)
        + D.Normal(beta[0] + beta[1] * X, sigma).log_prob(Y).sum()
    )
    torch.testing.assert_close(got[0], want)
    scalars = _model(SCALARS).log_joint(
        {"mom_iq": X}, {"b0": beta[0], "b1": beta[1], "sigma": sigma, "kid_score": Y}
    )
    torch.testing.assert_close(got, scalars, rtol=0, atol=1e-12)


def test_the_returned_value_is_computed_from_the_entries() -> None:
    beta = torch.tensor([-2.0, 0.5], dtype=torch.float64)
    run = _model(INDEXED).run({"mom_iq": X}, {"kid_score": Y}, {"beta": beta})
    torch.testing.assert_close(run.output, beta[0] + beta[1] * X)


def _indexed(lets: str, returns: str) -> str:
    return (
        "object One : FinSet 1\nobject Group : FinSet 3\nobject Coef : FinSet 2\n"
        "object K : FinSet 4\n\n"
        "program p : Group -> Group\n"
        "    sample a : One <- Normal(0.0, 1.0)\n"
        "    sample theta : Group * Coef <- Normal(0.0, 1.0)\n"
        "    sample w : K <- Dirichlet(1.0)\n"
        f"{lets}"
        "    observe y : Group <- Normal(0.0, 1.0)\n"
        f"    return {returns}\n\nexport p\n"
    )


THETA = torch.arange(6, dtype=torch.float64).reshape(3, 2)
W = torch.tensor([0.1, 0.2, 0.3, 0.4], dtype=torch.float64)
A = torch.tensor(0.25, dtype=torch.float64)  # a one-entry plate has no axis


@pytest.mark.parametrize(
    ("value", "want"),
    [
        ("theta[0]", THETA[0]),
        ("theta[Group, 1]", THETA[:, 1]),
        ("theta[2, 1]", THETA[2, 1]),
        ("w[1]", W[1]),
        ("a[0]", A),
    ],
)
def test_entries_of_plates_and_of_a_draw_are_the_tensor_s_entries(
    value: str, want: torch.Tensor
) -> None:
    m = _model(_indexed(f"    let v = {value}\n", "v"), "p")
    run = m.run({}, {"y": torch.zeros(3)}, {"theta": THETA, "w": W, "a": A})
    torch.testing.assert_close(run.output, want)


def test_posterior_predictive_runs_literal_indices_together() -> None:
    """The predictive draws of many posterior draws run as one vmapped run: a number as
    an index is no value read into Python that would stop it."""
    from qvr_core.runs import predictive

    m = _model(INDEXED)
    flat = {
        "beta": torch.randn(5, 2, dtype=torch.float64),
        "sigma": torch.rand(5, dtype=torch.float64) + 0.5,
    }
    with torch.no_grad():
        drawn = predictive._together(m, {"mom_iq": X}, {}, flat, ["kid_score"])
    assert drawn is not None and drawn["kid_score"].shape == (5, 6)
