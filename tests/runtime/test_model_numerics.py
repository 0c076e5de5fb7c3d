"""Model programs compute like Stan: in float64, with densities that stay finite where the
model's are (a Weibull far in its tail, a Poisson of rate 0 under a zero-inflation gate),
a `marginalize` over a relaxed Bernoulli summed over its hard values, a forward run
whose numbers leave float64 drawn again, and a `via=` map drawn from a continuous
family refused by name. Each case failed before (the corpus files it came from are
named)."""

from __future__ import annotations

import math

import pytest
import torch
from torch import distributions as D

from qvr_core.check import check
from qvr_core.inference.errors import InferenceError
from qvr_core.plan.runnable import runnability
from qvr_core.runs.run import run_program
from qvr_core.runtime.distributions import Poisson, Weibull, make_distribution
from qvr_core.runtime.errors import QvrError
from qvr_core.runtime.model import ModelProgram
from qvr_core.runtime.model.enumerate import SummedModel
from qvr_core.runtime.model.families import LeftTheFloats
from qvr_core.runtime.model.program import (
    DTYPE,
    RARE,
    compile_model,
    draws_stay_in_support,
)
from tests.runtime.test_support_edges import OVERFLOW


def model(source: str, name: str = "m") -> ModelProgram:
    checked = check(source)
    errors = [d.message for d in checked.diagnostics if d.is_error]
    assert not errors, errors
    return compile_model(checked, name)


# ------------------------------------------------------------------ float64

#: exp(0.5 * h) at h = 200 is inf in float32, 2.7e43 in float64 (stochastic_volatility).
WIDE_SCALE = """\
object Step : FinSet 10

program m : Step -> Step
    sample h <- Normal(200.0, 1.0)
    let scale = exp(0.5 * h)
    observe r : Step <- Normal(0.0, scale)
    return h

export m
"""


def test_a_model_program_draws_and_scores_in_float64() -> None:
    program = model(WIDE_SCALE)
    torch.manual_seed(0)
    with draws_stay_in_support(), torch.no_grad():
        run = program.run({})
    assert run.values["h"].dtype == DTYPE == torch.float64
    assert run.values["r"].dtype == torch.float64 and run.log_joint.dtype == torch.float64
    assert bool(torch.isfinite(run.values["r"]).all()) and bool(torch.isfinite(run.log_joint))
    assert torch.get_default_dtype() == torch.float32  # left as it was


def test_a_float32_value_is_scored_in_float64_and_keeps_its_gradient() -> None:
    program = model(WIDE_SCALE)
    h = torch.tensor(200.0, requires_grad=True)  # a guide's float32 draw
    r = torch.full((10,), 1e40, dtype=torch.float64)
    lj = program.log_joint({}, {"h": h, "r": r})
    assert lj.dtype == torch.float64 and bool(torch.isfinite(lj))
    lj.sum().backward()
    assert h.grad is not None and h.grad.dtype == torch.float32 and bool(torch.isfinite(h.grad))


def test_the_prior_of_a_scale_past_float32_runs() -> None:
    summary = run_program(WIDE_SCALE, method="prior", steps=10, seed=1)
    assert summary.sites is not None and summary.sites["r"].max is not None
    assert math.isfinite(summary.sites["r"].max)


# ------------------------------------------------------------------ Weibull


def test_the_weibull_scores_a_tiny_time_under_a_large_shape_with_a_gradient() -> None:
    """survival_weibull: times of 1e-55 under k = 5 made torch's composition -inf / NaN."""
    scale = torch.tensor([1.0, 2.0, 0.5], dtype=torch.float64, requires_grad=True)
    k = torch.tensor([5.3, 1.5, 0.2], dtype=torch.float64, requires_grad=True)
    x = torch.tensor([5e-55, 3.0, 1e-30], dtype=torch.float64)
    lp = Weibull(scale, k).log_prob(x)
    expected = torch.log(k) - torch.log(scale) + (k - 1) * torch.log(x / scale) - (x / scale) ** k
    torch.testing.assert_close(lp, expected)
    lp.sum().backward()
    assert scale.grad is not None and bool(torch.isfinite(scale.grad).all())
    assert k.grad is not None and bool(torch.isfinite(k.grad).all())
    assert isinstance(make_distribution("Weibull", {"scale": scale, "concentration": k}), Weibull)


def test_the_weibull_agrees_with_torch_where_torch_is_finite() -> None:
    scale, k = torch.tensor([0.7, 3.0]), torch.tensor([0.8, 2.5])
    x = torch.tensor([0.4, 2.0])
    torch.testing.assert_close(Weibull(scale, k).log_prob(x), D.Weibull(scale, k).log_prob(x))
    assert type(Weibull(scale, k).expand((3, 2))) is Weibull


# ------------------------------------------------------------------ Poisson


def test_a_poisson_of_a_rate_past_int64_draws_near_its_rate() -> None:
    """zip_regression's prior: torch drew -9.2e18 for a rate of 3.75e19."""
    rate = torch.tensor([3.75e19, 1e30, 4.0], dtype=torch.float64)
    torch.manual_seed(0)
    drawn = Poisson(rate).sample((50,))
    assert bool((drawn >= 0).all())
    torch.testing.assert_close(drawn[:, :2].mean(0), rate[:2], rtol=1e-6, atol=0)
    assert bool((drawn[:, 2] == drawn[:, 2].round()).all()) and float(drawn[:, 2].max()) < 30


def test_a_poisson_of_rate_zero_scores_with_a_finite_gradient() -> None:
    """A zero-inflated rate `z * rate` at z = 0: torch's xlogy gave a NaN gradient."""
    rate = torch.tensor([0.0, 0.0, 2.0], dtype=torch.float64, requires_grad=True)
    y = torch.tensor([0.0, 3.0, 3.0], dtype=torch.float64)
    lp = Poisson(rate, validate_args=False).log_prob(y)
    assert lp[0] == 0 and lp[1] == -math.inf
    torch.testing.assert_close(lp[2], D.Poisson(rate[2]).log_prob(y[2]))
    lp[[0, 2]].sum().backward()
    assert rate.grad is not None and bool(torch.isfinite(rate.grad).all())


# ------------------------------------------------------------------ relaxations

#: zip_regression: `marginalize z : Resp <- ContinuousBernoulli(p)` gates a Poisson rate.
ZIP = """\
object Resp : FinSet 6

program m : Resp -> Resp
    sample a <- Normal(0.0, 1.0)
    sample b <- Normal(0.0, 1.0)
    let p = sigmoid(a)
    let rate = exp(b)
    marginalize z : Resp <- ContinuousBernoulli(p)
        let gated = z * rate
        observe y : Resp <- Poisson(gated)
    return a

export m
"""


def test_a_relaxed_bernoulli_is_summed_over_its_hard_values_one_per_row() -> None:
    """quivers enumerates a relaxation's atoms 0 and 1 under Bernoulli(p)'s masses, one z
    per entry of the annotation: the zero-inflated Poisson, row by row."""
    program = model(ZIP)
    a = torch.tensor(0.3, dtype=torch.float64, requires_grad=True)
    b = torch.tensor(1.2, dtype=torch.float64, requires_grad=True)
    y = torch.tensor([0.0, 0.0, 1.0, 4.0, 0.0, 2.0], dtype=torch.float64)
    lj = program.log_joint({}, {"a": a, "b": b, "y": y})
    p, rate = torch.sigmoid(a), torch.exp(b)
    poisson = D.Poisson(rate).log_prob(y)
    rows = torch.where(y == 0, torch.log(1 - p + p * poisson.exp()), torch.log(p) + poisson)
    prior = D.Normal(0.0, 1.0).log_prob(torch.stack([a, b])).sum()
    torch.testing.assert_close(lj.reshape(()), prior + rows.sum())
    lj.sum().backward()
    assert a.grad is not None and bool(torch.isfinite(a.grad))
    assert b.grad is not None and bool(torch.isfinite(b.grad))


def test_a_relaxed_bernoulli_scope_draws_its_hard_values() -> None:
    program = model(ZIP)
    torch.manual_seed(0)
    with draws_stay_in_support(), torch.no_grad():
        values = program.run({}).values
    assert values["y"].shape == (6,) and bool((values["y"] >= 0).all())


# ------------------------------------------------------------------ past float64

# OVERFLOW (test_support_edges): exp(750) is inf in float64 at every draw: refused, by
# site, after the redraws.

#: exp(0.5 * h) past float64 in about one draw of 55 (|h| > 1420 for h ~ Normal(0, 600)).
SOMETIMES_PAST = """\
object Step : FinSet 10

program m : Step -> Step
    sample h <- Normal(0.0, 600.0)
    let scale = exp(0.5 * h)
    observe r : Step <- Normal(0.0, scale)
    return h

export m
"""


def test_a_run_whose_numbers_leave_float64_is_drawn_again_and_counted() -> None:
    """stochastic_volatility: a HalfCauchy scale under exp(0.5 * h) overflows float64 in
    a few draws of a thousand; the prior method stopped at the first."""
    program = model(SOMETIMES_PAST)
    torch.manual_seed(0)
    redrawn = 0
    with draws_stay_in_support(), torch.no_grad():
        for _ in range(200):
            run = program.run({})
            assert bool(torch.isfinite(run.values["r"]).all())
            redrawn += run.redrawn
    assert 0 < redrawn <= 1 + 200 // RARE


def test_a_run_that_always_leaves_float64_is_one_line_naming_the_site() -> None:
    """Not rare: set aside once, then reported (a prior to change, not to hide)."""
    program = model(OVERFLOW)
    with draws_stay_in_support(), torch.no_grad(), pytest.raises(LeftTheFloats) as info:
        program.run({})
    message = str(info.value)
    assert message.startswith("line 6, observe r:") and "\n" not in message
    assert message.endswith("(2 of 2 runs so far left float64)")
    with pytest.raises(InferenceError, match=r"^line 6, observe r: "):
        run_program(OVERFLOW, method="prior", steps=3)


# ------------------------------------------------------------------ via

#: mixture_model@8e66603 and marginalize_step@87d9913: `via=idx` names a HalfNormal draw.
DRAWN_VIA = """\
object Component : FinSet 3
object Item : FinSet 8
object Resp : FinSet 40

program m : Resp -> Resp
    sample probs <- Dirichlet(1.0) [over=Component]
    sample mu : Component <- Normal(0.0, 5.0)
    sample idx : Resp <- HalfNormal(1.0)
    marginalize cls : Component <- Categorical(probs) [over=Item, reduction=logsumexp]
        observe r : Resp <- Normal(mu[cls], 1.0) [via=idx]
    return probs

export m
"""


def test_a_via_map_drawn_from_a_continuous_family_is_refused_by_name() -> None:
    """quivers 0.25 refuses it when it compiles the program (a fibration is a Tensor[Int]
    over the rows); NUTS moved the draw out of the groups."""
    with pytest.raises(QvrError) as info:
        model(DRAWN_VIA)
    message = str(info.value)
    assert message.startswith("program m: line 10, observe r: `via=idx` names the sample")
    assert "line 8, HalfNormal" in message and "in Item" in message and "\n" not in message
    verdict = runnability(check(DRAWN_VIA), "m")  # the editor and every run see it first
    assert not verdict.ok and verdict.reason == message


def test_the_same_mixture_with_its_via_map_read_from_the_data_runs_every_method() -> None:
    source = DRAWN_VIA.replace("    sample idx : Resp <- HalfNormal(1.0)\n", "")
    program = model(source)
    assert program.data_names == ("idx",)
    torch.manual_seed(0)
    data = {"idx": torch.randint(0, 8, (40,))}
    with torch.no_grad():
        values = program.run(data).values
    summed = SummedModel(program, program.observed_names)
    given = {n: values[n] for n in ("probs", "mu", "r")}
    assert bool(torch.isfinite(summed.log_joint(data, given)))


def test_the_prior_summary_counts_the_runs_drawn_again() -> None:
    """`qvr run --method prior` says how many forward runs were set aside, in its JSON and
    its text, so the draws are read as the prior given that they fit in float64."""
    from qvr_core.cli.run import format_summary

    summary = run_program(SOMETIMES_PAST, method="prior", steps=200, seed=0)
    assert 0 < summary.redrawn <= 1 + 200 // RARE
    assert summary.to_json()["redrawn"] == summary.redrawn
    assert f"{summary.redrawn} forward run" in format_summary(summary)


@pytest.mark.parametrize("concentration", [5e-324, 1e-300, 1e-12, 1e20, 1e300])
def test_von_mises_draws_at_the_edges_of_its_concentration(concentration: float) -> None:
    """torch's rejection sampler loops forever once 1/concentration overflows (a float64
    subnormal, reached from `Exponential(rate=1e308)`) or the proposal degenerates (1e20):
    the draws are uniform on the circle, or the wrapped normal, and never hang."""
    from qvr_core.runtime.distributions import VonMises

    loc = torch.tensor(0.5, dtype=torch.float64)
    k = torch.full((2000,), concentration, dtype=torch.float64)
    draws = VonMises(loc, k, validate_args=False).sample()
    assert bool(((draws >= -math.pi) & (draws < math.pi)).all())
    if concentration < VonMises.UNIFORM_BELOW:  # uniform: mean resultant length near 0
        assert float(torch.complex(draws.cos(), draws.sin()).mean().abs()) < 0.1
    else:  # concentrated at loc
        torch.testing.assert_close(draws, loc.expand(2000), atol=1e-6, rtol=0)
