"""`log_prob` inside a QIEC computation: of any family of the registry, and of a `Mixture`.

Read from quivers (the 0.25.2 wheel): `dsl/family_schemas.py` (a `Mixture` takes
`weights` and `components`) and `transpile/family_meta.py` (its weights lie on the
simplex and its support is the reals), and quivers' amortized-semantics example, whose
`contamination` is a 0.95 / 0.05 mixture of a Normal and a Student-t that a computation
scores with `log_prob`. The programs here are our own, parsed by quivers' HEAD grammar;
what each scores is written out with torch.distributions and compared with qvr's log
joint, and every target's export is read for the density it writes.
"""

from __future__ import annotations

import math

import pytest
import torch
from torch import distributions as D

from qvr_core.check import check
from qvr_core.export import TARGETS, export_program
from qvr_core.runtime.model import compile_model
from tests.conformance import oracle

# A reading scored under a contaminated likelihood, a count under a Poisson, a waiting
# time under a Gamma: three computations whose `log_prob` no formula of qvr writes out.
SCORED = """instance score : Score

define contamination(location : Real, scale : Real) : Sampleable[Real] !{} =
    return Mixture([0.9, 0.1], [Normal(location, scale), StudentT(3.0, location, scale)])

define robust(value : Real, location : Real, scale : Real) : Real !{score} =
    let likelihood <- contamination(location, scale)
    perform score.add(log_prob(likelihood, value))
    return value

define counted(k : Real, rate : Real) : Real !{score} =
    perform score.add(log_prob(Poisson(rate), int(k)))
    return rate

define waited(gap : Real, rate : Real) : Real !{score} =
    perform score.add(log_prob(Gamma(2.0, rate), gap))
    return gap

object One : FinSet 1

program reading : One -> One
    sample location <- Normal(6.0, 1.0)
    sample scale <- Gamma(2.0, 2.0)
    sample rate <- Gamma(3.0, 1.0)
    let seen <- robust(y, location, scale)
    let n <- counted(k, rate)
    let w <- waited(gap, rate)
    return location

export reading
"""

LATENT = {"location": 5.2, "scale": 0.7, "rate": 2.5}


def _joint(data: dict[str, object]) -> torch.Tensor:
    program = compile_model(check(SCORED), "reading")
    observed = {k: torch.tensor(v, dtype=torch.float64) for k, v in data.items()}
    latent = {k: torch.tensor(v, dtype=torch.float64) for k, v in LATENT.items()}
    return program.log_joint(observed, latent).double().reshape(())


def _by_hand(y: torch.Tensor, k: float, gap: float) -> torch.Tensor:
    loc, scale, rate = (torch.tensor(LATENT[n], dtype=torch.float64) for n in LATENT)
    priors = (
        D.Normal(6.0, 1.0).log_prob(loc)
        + D.Gamma(2.0, 2.0).log_prob(scale)
        + D.Gamma(3.0, 1.0).log_prob(rate)
    )
    mixed = torch.logsumexp(
        torch.stack(
            [
                math.log(0.9) + D.Normal(loc, scale).log_prob(y),
                math.log(0.1) + D.StudentT(3.0, loc, scale).log_prob(y),
            ]
        ),
        0,
    ).sum()
    counts = D.Poisson(rate).log_prob(torch.tensor(k, dtype=torch.float64))
    waits = D.Gamma(2.0, rate).log_prob(torch.tensor(gap, dtype=torch.float64))
    return priors + mixed + counts + waits


def test_quivers_grammar_parses_it() -> None:
    oracle.require_head(SCORED)


def test_it_checks_without_an_error_or_a_gap() -> None:
    checked = check(SCORED)
    assert [d for d in checked.diagnostics if d.is_error] == []
    assert checked.models["reading"].runtime_gaps == ()


def test_the_mixture_and_each_family_score_as_torch_distributions_do() -> None:
    got = _joint({"y": 5.9, "k": 3.0, "gap": 1.5})
    want = _by_hand(torch.tensor([5.9], dtype=torch.float64), 3.0, 1.5)
    torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-6)


def test_a_reading_per_row_is_scored_once_each() -> None:
    ys = [5.9, 4.1, 12.0]  # the last a stray reading, in the Student-t's tail
    got = _joint({"y": ys, "k": 3.0, "gap": 1.5})
    want = _by_hand(torch.tensor(ys, dtype=torch.float64), 3.0, 1.5)
    torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-6)


def test_a_value_outside_the_support_has_no_density() -> None:
    """A waiting time below 0 under a Gamma: log density -inf, as a density of 0 there
    (torch's own log_prob of a Gamma at -1 is NaN)."""
    assert _joint({"y": 5.9, "k": 3.0, "gap": -1.0}).item() == -math.inf


@pytest.mark.parametrize(
    ("target", "written"),
    [
        ("numpyro", ("dist.StudentT(3.0, location, scale).log_prob(y)", "dist.Poisson(rate)")),
        ("pymc", ("pm.logp(pm.StudentT.dist(nu=3.0, mu=location, sigma=scale), y)", "pm.logp(")),
    ],
)
def test_the_python_targets_score_the_family_they_draw_with(
    target: str, written: tuple[str, ...]
) -> None:
    out = export_program(check(SCORED), TARGETS[target], "reading")
    assert out.text is not None and out.diagnostics == ()
    assert all(w in out.text for w in written), out.text


#: The same computations over latent values: Stan writes a density of one number (its
#: `_lpdf` of a vector is the sum over it, not one density a row), and reads `y`'s length
#: from an observe.
LATENT_VALUES = SCORED.replace(
    "    let seen <- robust(y, location, scale)\n"
    "    let n <- counted(k, rate)\n"
    "    let w <- waited(gap, rate)\n",
    "    sample guess <- Normal(0.0, 10.0)\n"
    "    sample pause <- Exponential(1.0)\n"
    "    let seen <- robust(guess, location, scale)\n"
    "    let w <- waited(pause, rate)\n"
    "    observe y : One <- Normal(guess, 1.0)\n",
)


def test_stan_writes_its_density_functions() -> None:
    out = export_program(check(LATENT_VALUES), TARGETS["stan"], "reading")
    assert out.text is not None, out.diagnostics
    for call in ("student_t_lpdf(guess | 3.0, location, scale)", "gamma_lpdf(pause | 2.0, rate)"):
        assert call in out.text, out.text


def test_stan_refuses_a_density_it_has_only_in_another_form() -> None:
    """A HalfNormal's density is twice a Normal's on the positive half: Stan has no
    half-normal density function, so the export says so where `log_prob` is written."""
    source = LATENT_VALUES.replace(
        "log_prob(Gamma(2.0, rate), gap)", "log_prob(HalfNormal(rate), gap)"
    )
    out = export_program(check(source), TARGETS["stan"], "reading")
    assert out.text is None
    assert any("log_prob of HalfNormal" in d.message for d in out.diagnostics), out.diagnostics


def test_stan_refuses_a_density_of_a_value_per_row() -> None:
    source = SCORED.replace(
        "    return location\n",
        "    observe y : One <- Normal(location, 10.0)\n    return location\n",
    )
    out = export_program(check(source), TARGETS["stan"], "reading")
    assert out.text is None
    assert any("log_prob of StudentT over a vector" in d.message for d in out.diagnostics)


# A lost reading drawn from the contaminated likelihood (quivers' `complete[Missing]`),
# its weights once numbers and once values of the computation.
DRAWN = """instance random : Random

define contamination(location : Real, scale : Real) : Sampleable[Real] !{} =
    return Mixture(WEIGHTS, [Normal(location, scale), StudentT(3.0, location, scale)])

define lost(location : Real, scale : Real) : Real !{random} =
    let reader <- contamination(location, scale)
    let value <- perform random.sample[Real](site("lost"), reader)
    return value

object One : FinSet 1

program reading : One -> One
    sample location <- Normal(6.0, 1.0)
    sample scale <- Gamma(2.0, 2.0)
    let filled <- lost(location, scale)
    return filled

export reading
"""


@pytest.mark.parametrize(
    ("weights", "heavy"), [("[0.9, 0.1]", 0.1), ("[1.0 - scale / 10.0, scale / 10.0]", 0.07)]
)
def test_a_draw_from_a_mixture_is_a_mixture_site(weights: str, heavy: float) -> None:
    """quivers draws the lost value from the Mixture; in qvr it is a site `lost` whose
    measure is that Mixture, scored log sum_k w_k p_k(x) at the value, as a step's."""
    source = DRAWN.replace("WEIGHTS", weights)
    oracle.require_head(source)
    checked = check(source)
    assert [d.message for d in checked.diagnostics if d.is_error] == []
    model = checked.models["reading"]
    assert model.runtime_gaps == ()
    site = model.site("lost")
    assert site.measure is not None and [p.family for p in site.measure.parts] == [
        "Normal",
        "StudentT",
    ]
    program = compile_model(checked, "reading")
    loc, scale, x = (torch.tensor(v, dtype=torch.float64) for v in (5.2, 0.7, 7.9))
    got = program.log_joint({}, {"location": loc, "scale": scale, "lost": x}).double()
    mixed = torch.logsumexp(
        torch.stack(
            [
                math.log(1.0 - heavy) + D.Normal(loc, scale).log_prob(x),
                math.log(heavy) + D.StudentT(3.0, loc, scale).log_prob(x),
            ]
        ),
        0,
    )
    two = torch.tensor(2.0, dtype=torch.float64)
    want = D.Normal(6.0, 1.0).log_prob(loc) + D.Gamma(two, two).log_prob(scale) + mixed
    torch.testing.assert_close(got.reshape(()), want, rtol=1e-12, atol=1e-12)
