"""Numbers at the edge of what a float holds: a draw or a positive argument that rounded
onto the bound of its support is moved just inside (a Weibull draw or scale that
underflowed to 0), a draw that overflowed to inf is reported at its site, and the
Logistic scores its far tails; none of them is a torch traceback."""

from __future__ import annotations

import math

import pytest
import torch
from torch.distributions import constraints as C

from qvr_core.check import check
from qvr_core.inference.errors import InferenceError
from qvr_core.runs.run import run_program
from qvr_core.runtime.distributions import (
    Kumaraswamy,
    Logistic,
    into_support,
    make_distribution,
    off_the_edges,
    within_floats,
)
from qvr_core.runtime.model.program import compile_model, draws_stay_in_support

TINY = torch.finfo(torch.float32).tiny


def test_a_positive_draw_of_zero_or_a_denormal_becomes_the_smallest_normal_float() -> None:
    value = torch.tensor([0.0, 1e-41, 2.5, -1.0])
    moved = into_support(value, C.positive)
    assert moved.tolist()[:3] == [TINY, TINY, 2.5]
    assert moved[3] == -1.0  # outside, not at the edge: left for the support check


def test_a_unit_interval_draw_at_either_end_moves_inside() -> None:
    moved = into_support(torch.tensor([0.0, 1.0, 0.5]), C.unit_interval)
    assert bool(((moved > 0) & (moved < 1)).all()) and moved[2] == 0.5


def test_a_bound_that_varies_over_a_plate_moves_each_entry_above_its_own() -> None:
    low = torch.tensor([2.0, 0.0, 1.0])
    moved = into_support(torch.tensor([2.0, 0.0, 3.0]), C.greater_than(low))
    assert bool((moved > low).all()) and moved[2] == 3.0


def test_other_values_and_supports_come_back_as_they_are() -> None:
    counts = torch.tensor([0, 3])
    assert into_support(counts, C.nonnegative_integer) is counts
    real = torch.tensor([0.0, -2.0])
    assert into_support(real, C.real) is real
    inside = torch.tensor([0.5, 2.0])
    assert into_support(inside, C.positive) is inside


def test_moving_a_draw_keeps_its_gradient() -> None:
    z = torch.tensor([0.0, 1.0], requires_grad=True)
    into_support(z * 2.0, C.positive).sum().backward()
    assert z.grad is not None and z.grad.tolist() == [0.0, 2.0]


def test_an_overflowed_draw_is_outside_even_where_torch_takes_inf() -> None:
    value = torch.tensor([[1.0, math.inf], [1.0, 2.0]])
    inside = torch.ones(2, dtype=torch.bool)  # a vector family: one flag per draw
    assert within_floats(value, inside).tolist() == [False, True]
    scalar = torch.tensor([math.inf, -math.inf, math.nan, 1.0])
    assert within_floats(scalar, C.real.check(scalar)).tolist() == [False, False, False, True]


def test_a_positive_argument_that_underflowed_is_lifted_off_zero() -> None:
    dist = make_distribution(
        "Weibull", {"scale": torch.tensor([0.0, 2.0]), "concentration": torch.tensor(1.5)}
    )
    assert dist.scale.tolist() == [TINY, 2.0]  # type: ignore[attr-defined]
    fine = {"loc": torch.tensor(0.0), "scale": torch.tensor(1.0)}
    assert off_the_edges("Normal", fine) is None


def test_a_probability_that_rounded_to_one_is_taken_just_below_it() -> None:
    """torch's NegativeBinomial takes probs in [0, 1): `d / (d + exp(eta))` is 1 in
    float32 once exp(eta) is small beside d."""
    probs = torch.tensor([0.5, 1.0])
    dist = make_distribution("NegativeBinomial", {"total_count": torch.tensor(2.0), "probs": probs})
    assert dist.probs[0] == 0.5 and 0.999 < dist.probs[1] < 1  # type: ignore[attr-defined]


def test_a_negative_argument_is_still_refused() -> None:
    with pytest.raises(ValueError, match="scale"):
        make_distribution("Normal", {"loc": torch.tensor(0.0), "scale": torch.tensor(-1.0)})


def test_the_logistic_scores_its_far_tails() -> None:
    loc, scale = torch.tensor([0.0, 1.0, 0.0]), torch.tensor([0.13, 2.0, 1.0])
    y = torch.tensor([16.0, -3.0, -40.0])
    got = Logistic(loc, scale).log_prob(y)
    z = ((y - loc) / scale).double()
    expected = -z - 2 * torch.log1p(torch.exp(-z)) - scale.double().log()
    assert bool(torch.isfinite(got).all())
    torch.testing.assert_close(got.double(), expected, rtol=1e-5, atol=1e-4)


def test_the_kumaraswamy_scores_values_near_the_ends_of_its_interval() -> None:
    a, b = torch.tensor([0.5, 2.0, 20.0, 0.05]), torch.tensor([3.0, 0.7, 1.5, 2.0])
    x = torch.tensor([0.3, 0.8, 1e-38, 1 - 6e-8])
    got = Kumaraswamy(a, b).log_prob(x).double()
    a64, b64, x64 = a.double(), b.double(), x.double()
    expected = a64.log() + b64.log() + (a64 - 1) * x64.log() + (b64 - 1) * torch.log1p(-(x64**a64))
    assert bool(torch.isfinite(got).all())  # torch's own: -inf and NaN at the last two
    torch.testing.assert_close(got[[0, 1, 3]], expected[[0, 1, 3]], rtol=1e-4, atol=1e-3)
    torch.testing.assert_close(got[2], torch.tensor(-1659.1, dtype=torch.float64), atol=0.1, rtol=0)
    assert type(Kumaraswamy(a, b).expand((2, 4))) is Kumaraswamy


# ------------------------------------------------------------------ programs

#: exp(-150) is 0 in float32: the scale of every Weibull draw underflowed.
WEIBULL = """\
object Item : FinSet 50

program m : Item -> Item
    sample a <- Normal(-150.0, 1.0)
    let scale = exp(a)
    observe t : Item <- Weibull(scale, 2.0)
    return a

export m
"""

#: sigmoid(40) is 1 in float32: the Beta's second concentration is 0 and its draws 1.
BETA = """\
object Resp : FinSet 20

program m : Resp -> Resp
    sample b <- Normal(40.0, 1.0)
    let mu = sigmoid(b)
    let rest = 1.0 - mu
    observe y : Resp <- Beta(mu, rest)
    return b

export m
"""

#: exp(750) is inf in float64, where model programs compute: a scale that overflowed
#: draws inf at every run, which is reported once the redraws are spent.
OVERFLOW = """\
object Step : FinSet 10

program m : Step -> Step
    sample h <- Normal(1500.0, 1.0)
    let scale = exp(0.5 * h)
    observe r : Step <- Normal(0.0, scale)
    return h

export m
"""


@pytest.mark.parametrize(("source", "site"), [(WEIBULL, "t"), (BETA, "y")])
def test_a_prior_whose_numbers_underflow_onto_a_bound_runs(source: str, site: str) -> None:
    summary = run_program(source, method="prior", steps=20, seed=3)
    assert summary.sites is not None
    drawn = summary.sites[site]
    assert drawn.min is not None and drawn.min > 0
    assert drawn.max is not None and (site != "y" or drawn.max < 1)


def test_underflowed_draws_are_data_a_fit_can_read() -> None:
    program = compile_model(check(WEIBULL), "m")
    torch.manual_seed(0)
    with draws_stay_in_support(), torch.no_grad():
        run = program.run({})
    assert bool((run.values["t"] > 0).all()) and bool(torch.isfinite(run.log_joint))


def test_a_draw_that_overflowed_is_one_located_line() -> None:
    with pytest.raises(InferenceError) as info:
        run_program(OVERFLOW, method="prior", steps=5)
    message = str(info.value)
    assert message.startswith("line 6, observe r: a draw of Normal left its support")
    assert "it drew inf" in message or "it drew -inf" in message
    assert "\n" not in message
