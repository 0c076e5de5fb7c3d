"""quivers' measure algebra as a step's distribution: Mixture, Restrict, Normalize,
PointMass and Pushforward, with distributions as their arguments.

Read from quivers 0.25.2: `dsl/family_schemas.py` (each operator's parameters; `Truncate`
and `Transformed` are other names of `Restrict` and `Pushforward`),
`qiec/reference_families.py` (a mixture's density is log sum_k w_k p_k(x) and its mass
sum_k w_k m_k; a restriction keeps the base's density on its interval and its mass
there; `Normalize` divides by the mass; a point mass has density 0 at its value) and
`dsl/program_elaboration.py` (a step normalises the measure it draws from). The programs
are our own, parsed by quivers' HEAD grammar. Each density is checked two ways: against
torch.distributions written out by hand, and against the registry family that is the
same distribution under another name (a restricted Normal is the TruncatedNormal, a
Normal pushed through Exp the LogNormal, quivers' zero-inflated and hurdle Poissons are
mixtures with a point mass at 0), compared exactly.
"""

from __future__ import annotations

import math

import pytest
import torch
from torch import distributions as D

from qvr_core.check import check
from qvr_core.runtime.model import compile_model
from tests.conformance import oracle

COUNTS = """object Row : FinSet 6

program counts : Row -> Row
    sample pi <- Beta(2.0, 2.0)
    sample rate <- Gamma(3.0, 1.0)
    let q = 1.0 - pi
    observe zi : Row <- Mixture([pi, q], [PointMass(0.0), Poisson(rate)])
    observe hu : Row <- Mixture([pi, q], [PointMass(0.0), Normalize(Restrict(Poisson(rate), 1.0))])
    observe weighed : Row <- Mixture([pi, q], [PointMass(0.0), Restrict(Poisson(rate), 1.0)])
    return rate

export counts
"""

#: The same data under the registry's families of the same names.
BY_FAMILY = """object Row : FinSet 6

program counts : Row -> Row
    sample pi <- Beta(2.0, 2.0)
    sample rate <- Gamma(3.0, 1.0)
    observe zi : Row <- ZeroInflatedPoisson(pi, rate)
    observe hu : Row <- HurdlePoisson(pi, rate)
    return rate

export counts
"""

REALS = """object One : FinSet 1

program reals : One -> One
    sample mu <- Normal(0.0, 1.0)
    sample x <- Restrict(Normal(mu, 2.0), 0.0)
    observe cut <- Truncate(Normal(mu, 1.0), low=-1.0, high=2.5)
    observe far <- Restrict(Normal(mu, 1.0), 9.0)
    observe pushed <- Pushforward(Normal(mu, 0.5), Exp)
    observe mixed <- Mixture([0.25, 0.75], [Normal(mu, 1.0), Pushforward(Normal(0.0, 1.0), Exp)])
    return mu

export reals
"""

BY_FAMILY_REALS = """object One : FinSet 1

program reals : One -> One
    sample mu <- Normal(0.0, 1.0)
    sample x <- TruncatedNormal(mu, 2.0, 0.0, 1000.0)
    observe cut <- TruncatedNormal(mu, 1.0, -1.0, 2.5)
    observe pushed <- LogNormal(mu, 0.5)
    return mu

export reals
"""

F64 = torch.float64
ZEROS_AND_COUNTS = [0.0, 3.0, 0.0, 1.0, 7.0, 2.0]


def _joint(
    source: str, name: str, observed: dict[str, object], latent: dict[str, float]
) -> torch.Tensor:
    checked = check(source)
    assert [d.message for d in checked.diagnostics if d.is_error] == []
    program = compile_model(checked, name)
    obs = {k: torch.tensor(v, dtype=F64) for k, v in observed.items()}
    lat = {k: torch.tensor(v, dtype=F64) for k, v in latent.items()}
    return program.log_joint({}, {**lat, **obs}).double().reshape(())


@pytest.mark.parametrize("source", [COUNTS, REALS])
def test_quivers_grammar_parses_it(source: str) -> None:
    oracle.require_head(source)


@pytest.mark.parametrize(("source", "name"), [(COUNTS, "counts"), (REALS, "reals")])
def test_it_checks_without_an_error_or_a_gap(source: str, name: str) -> None:
    checked = check(source)
    assert [d for d in checked.diagnostics if d.is_error] == []
    assert checked.models[name].runtime_gaps == ()


def test_the_supports_come_from_the_parts() -> None:
    model = check(COUNTS + "\n" + REALS.replace("export reals", "")).models
    supports = {n: model["counts"].site(n).support for n in ("zi", "hu", "weighed")}
    assert {s.kind for s in supports.values()} == {"nonnegative_integer"}
    reals = check(REALS).models["reals"]
    x, cut, pushed, mixed = (reals.site(n).support for n in ("x", "cut", "pushed", "mixed"))
    assert (x.kind, x.low) == ("greater_than_eq", 0.0)
    assert (cut.kind, cut.low, cut.high) == ("interval", -1.0, 2.5)
    assert pushed.kind == "positive"
    assert mixed.kind == "real"  # a Normal's reals and a LogNormal's positive numbers


def test_zero_inflation_and_hurdle_are_the_registry_families() -> None:
    latent = {"pi": 0.3, "rate": 2.2}
    data = {"zi": ZEROS_AND_COUNTS, "hu": ZEROS_AND_COUNTS}
    by_measure = _joint(COUNTS, "counts", {**data, "weighed": ZEROS_AND_COUNTS}, latent)
    by_family = _joint(BY_FAMILY, "counts", data, latent)
    weighed = _weighed_hurdle(torch.tensor(ZEROS_AND_COUNTS, dtype=F64), 0.3, 2.2)
    torch.testing.assert_close(by_measure, by_family + weighed, rtol=1e-12, atol=1e-12)


def _weighed_hurdle(y: torch.Tensor, pi: float, rate: float) -> torch.Tensor:
    """`Mixture([pi, 1 - pi], [PointMass(0), Restrict(Poisson(rate), 1)])` at a step: the
    restriction keeps its mass 1 - e^-rate inside the mixture, and the step divides by
    the mixture's mass pi + (1 - pi)(1 - e^-rate)."""
    kept = 1.0 - math.exp(-rate)
    mass = math.log(pi + (1.0 - pi) * kept)
    poisson = D.Poisson(torch.tensor(rate, dtype=F64)).log_prob(y)
    each = torch.where(y == 0, math.log(pi), math.log(1.0 - pi) + poisson)
    return (each - mass).sum()


def test_the_hurdle_by_hand() -> None:
    """P(0) = pi; P(y) = (1 - pi) Poisson(y) / (1 - e^-rate) above 0."""
    y = torch.tensor(ZEROS_AND_COUNTS, dtype=F64)
    pi, rate = 0.3, 2.2
    hurdle = torch.where(
        y == 0,
        math.log(pi),
        math.log(1 - pi)
        + D.Poisson(torch.tensor(rate, dtype=F64)).log_prob(y)
        - math.log1p(-math.exp(-rate)),
    ).sum()
    zi = torch.where(
        y == 0,
        torch.log(pi + (1 - pi) * torch.exp(-torch.tensor(rate, dtype=F64))),
        math.log(1 - pi) + D.Poisson(torch.tensor(rate, dtype=F64)).log_prob(y),
    ).sum()
    two, three, one = (torch.tensor(v, dtype=F64) for v in (2.0, 3.0, 1.0))
    priors = D.Beta(two, two).log_prob(torch.tensor(pi, dtype=F64)) + D.Gamma(three, one).log_prob(
        torch.tensor(rate, dtype=F64)
    )
    data = {"zi": ZEROS_AND_COUNTS, "hu": ZEROS_AND_COUNTS, "weighed": ZEROS_AND_COUNTS}
    got = _joint(COUNTS, "counts", data, {"pi": pi, "rate": rate})
    want = priors + zi + hurdle + _weighed_hurdle(y, pi, rate)
    torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-10)


def test_restrictions_and_pushforwards_are_the_registry_families() -> None:
    """`Restrict(Normal(mu, 2), 0)` against a TruncatedNormal cut at 1000 (whose mass
    above differs by nothing float64 holds), a two-sided cut, and Exp of a Normal against
    the LogNormal; the far cut and the mixture by hand."""
    mu, x = 0.4, 1.3
    observed = {"cut": 2.0, "pushed": 1.7}
    by_family = _joint(BY_FAMILY_REALS, "reals", observed, {"mu": mu, "x": x})
    far, mixed = 9.5, 2.0
    measure = _joint(REALS, "reals", {**observed, "far": far, "mixed": mixed}, {"mu": mu, "x": x})
    m = torch.tensor(mu, dtype=F64)
    # 1 - Phi(8.6) is 4e-18: its log from the upper tail, not 1 - cdf
    far_density = D.Normal(m, 1.0).log_prob(torch.tensor(far, dtype=F64)) - torch.special.log_ndtr(
        -(9.0 - m)
    )
    mixture = torch.logsumexp(
        torch.stack(
            [
                math.log(0.25) + D.Normal(m, 1.0).log_prob(torch.tensor(mixed, dtype=F64)),
                math.log(0.75) + D.LogNormal(0.0, 1.0).log_prob(torch.tensor(mixed, dtype=F64)),
            ]
        ),
        0,
    )
    torch.testing.assert_close(measure, by_family + far_density + mixture, rtol=1e-10, atol=1e-10)


def test_a_value_outside_the_support_has_no_density() -> None:
    observed = {"cut": 3.0, "pushed": 1.7, "far": 9.5, "mixed": 2.0}  # cut keeps [-1, 2.5]
    assert _joint(REALS, "reals", observed, {"mu": 0.4, "x": 1.3}).item() == -math.inf
    observed = {"cut": 2.0, "pushed": -1.0, "far": 9.5, "mixed": 2.0}  # Exp's image is > 0
    assert _joint(REALS, "reals", observed, {"mu": 0.4, "x": 1.3}).item() == -math.inf


def test_prior_draws_lie_in_the_support() -> None:
    torch.manual_seed(0)
    counts = compile_model(check(COUNTS), "counts")
    reals = compile_model(check(REALS), "reals")
    for _ in range(20):
        drawn = counts.run().values
        for n in ("hu", "weighed"):
            y = drawn[n]
            assert bool(((y == 0) | (y >= 1)).all()) and bool((y == torch.round(y)).all())
        r = reals.run().values
        assert float(r["x"]) >= 0.0
        assert -1.0 <= float(r["cut"]) <= 2.5
        assert float(r["far"]) >= 9.0
        assert float(r["pushed"]) > 0.0


def test_a_latent_restriction_is_moved_within_its_bounds() -> None:
    program = compile_model(check(REALS), "reals")
    constraint = program.site_constraint("x")
    assert bool(constraint.check(torch.tensor(0.5))) and not bool(
        constraint.check(torch.tensor(-0.5))
    )


@pytest.mark.parametrize(
    ("step", "words"),
    [
        ("sample p <- PointMass(1.0)", "bind it with `let p = ...`"),
        (
            "sample p <- Mixture([0.5, 0.5], [PointMass(0.0), Normal(0.0, 1.0)])",
            "part discrete",
        ),
        (
            "observe p <- Mixture([0.5, 0.5], [Poisson(2.0), Normal(0.0, 1.0)])",
            "all discrete or all continuous",
        ),
        (
            "observe p <- Mixture([0.2, 0.3, 0.5], [Normal(0.0, 1.0), Normal(2.0, 1.0)])",
            "2 components but 3 weights",
        ),
        ("observe p <- Pushforward(Normal(0.0, 1.0), Exq)", "no bijection"),
        ("observe p <- Pushforward(Normal(0.0, 1.0), Log)", "Log takes"),
        ("observe p <- Restrict(Dirichlet([1.0, 1.0]), 0.0)", "draws a vector"),
        ("observe p <- Restrict(1.0, 0.0)", "is a distribution"),
        (
            "observe p <- Mixture([0.5, 0.5], [Normal(0.0, 1.0), Normall(1.0, 1.0)])",
            "undefined family",
        ),
    ],
)
def test_what_no_run_can_do_is_said_at_the_construct(step: str, words: str) -> None:
    head = "object One : FinSet 1\n\nprogram bad : One -> One\n"
    source = f"{head}    {step}\n    return p\n\nexport bad\n"
    errors = [d for d in check(source).diagnostics if d.is_error]
    assert errors and any(words in d.message for d in errors), [d.message for d in errors]
    assert all(d.span.start_line == 3 for d in errors)


def test_a_restriction_without_a_cdf_is_refused_when_run() -> None:
    """torch has no CDF of the Student-t: cut anywhere but at its centre (below), it has no
    mass qvr can compute, and the run says so at the step, naming what would do."""
    source = (
        "object One : FinSet 1\n\nprogram t : One -> One\n"
        "    observe y <- Restrict(StudentT(3.0, 0.0, 1.0), 1.0)\n    return y\n\nexport t\n"
    )
    program = compile_model(check(source), "t")
    words = r"line 4, observe y: Restrict of StudentT needs its CDF.*one end only, at its loc"
    with pytest.raises(Exception, match=words):
        program.log_joint({}, {"y": torch.tensor(1.5, dtype=F64)})


def _one_step(step: str) -> str:
    return (
        f"object One : FinSet 1\n\nprogram t : One -> One\n    {step}\n    return y\n\nexport t\n"
    )


@pytest.mark.parametrize(
    ("restricted", "base", "keeps"),
    [
        ("Restrict(StudentT(3.0, 0.0, 2.5), 0.0)", D.StudentT(3.0, 0.0, 2.5), "above"),
        ("Restrict(StudentT(5.0, 1.0, 2.0), high=1.0)", D.StudentT(5.0, 1.0, 2.0), "below"),
        ("Truncate(StudentT(4.0, -2.0, 0.5), low=-2.0)", D.StudentT(4.0, -2.0, 0.5), "above"),
    ],
)
def test_a_symmetric_family_cut_at_its_centre_keeps_half_its_mass(
    restricted: str, base: D.StudentT, keeps: str
) -> None:
    """quivers 0.25.2 (`continuous/measure.py`, `_symmetric_fold_log_normalizer`): where the
    base has no CDF, a restriction of one end only, at the `loc` of a family symmetric
    about it, has log normaliser -log 2. So `Restrict(StudentT(nu, 0.0, s), 0.0)`, the way
    quivers' guides write a half-Student-t prior, runs although torch has no Student-t CDF:
    twice the Student-t's density on the kept side, none on the other. The first case is
    also the registry's HalfStudentT, compared exactly."""
    source = _one_step(f"observe y <- {restricted}")
    oracle.require_head(source)
    program = compile_model(check(source), "t")
    centre = float(base.loc)
    sign = 1.0 if keeps == "above" else -1.0
    for offset in (0.0, 0.3, 2.0, 40.0):
        y = torch.tensor(centre + sign * offset, dtype=F64)
        want = base.log_prob(y).double() + math.log(2.0)
        got = program.log_joint({}, {"y": y}).double().reshape(())
        torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-7)  # the program: float32
    outside = torch.tensor(centre - sign * 0.5, dtype=F64)
    assert program.log_joint({}, {"y": outside}) == -math.inf
    if restricted.startswith("Restrict(StudentT(3.0, 0.0, 2.5)"):
        half = compile_model(check(_one_step("observe y <- HalfStudentT(3.0, 2.5)")), "t")
        for v in (0.1, 1.0, 7.5):
            y = torch.tensor(v, dtype=F64)
            torch.testing.assert_close(
                program.log_joint({}, {"y": y}), half.log_joint({}, {"y": y}), rtol=1e-12, atol=0
            )


def test_a_half_student_t_latent_draws_the_half_and_is_scored_as_one() -> None:
    """The fold as a prior over a plate of 4,000: its draws (the Student-t's, drawn again
    until inside) are all on the kept side, and their quartiles are the half-Student-t's
    (|T| has quartiles the Student-t's 62.5% and 87.5% quantiles, scaled), within what
    4,000 draws allow; the draws score as the half-t's density."""
    source = (
        "object Draw : FinSet 4000\n\nprogram t : Draw -> Draw\n"
        "    sample y : Draw <- Restrict(StudentT(3.0, 0.0, 2.5), 0.0)\n"
        "    return y\n\nexport t\n"
    )
    program = compile_model(check(source), "t")
    torch.manual_seed(0)
    run = program.run({}, {})
    draws = run.values["y"].double().reshape(-1)
    assert draws.shape == (4000,) and bool((draws >= 0).all())
    # t(3) quantiles at 0.625 and 0.875 (scipy.stats.t(3).ppf), times the scale 2.5; 15%
    # is five standard errors of a quartile of 4,000 draws
    for q, t3 in ((0.25, 0.34922), (0.75, 1.42263)):
        assert abs(float(torch.quantile(draws, q)) - 2.5 * t3) < 0.15 * 2.5 * t3
    half = D.StudentT(3.0, 0.0, 2.5).log_prob(draws) + math.log(2.0)
    torch.testing.assert_close(
        run.log_probs["y"].double().reshape(()), half.sum(), rtol=1e-5, atol=0
    )


def test_the_hurdle_example_is_the_registry_hurdle_on_its_data() -> None:
    """examples/measures/hurdle_counts.qvr, and the same program with the registry's
    HurdlePoisson in place of its Mixture: one log joint on data `qvr data` draws."""
    from pathlib import Path

    from qvr_core.runs.synthesise import synthesise

    example = Path(__file__).resolve().parents[2] / "examples" / "measures"
    source = (example / "hurdle_counts.qvr").read_text(encoding="utf-8")
    written = "Mixture([pi, fishes], [PointMass(0.0), Normalize(Restrict(Poisson(rate), 1.0))])"
    assert written in source
    data = synthesise(check(source), "hurdle_counts", seed=0).arrays()
    assert 0 < int((data["count"] == 0).sum()) < 120  # zeros and counts both
    latent = {k: torch.tensor(v, dtype=F64) for k, v in {"pi": 0.35, "a": 0.8, "b": -0.7}.items()}
    count = torch.as_tensor(data["count"], dtype=F64)
    x = {"child": torch.as_tensor(data["child"], dtype=F64)}
    joints = []
    for text in (source, source.replace(written, "HurdlePoisson(pi, rate)")):
        program = compile_model(check(text), "hurdle_counts")
        joints.append(program.log_joint(x, {**latent, "count": count}).double())
    torch.testing.assert_close(joints[0], joints[1], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(
    ("restricted", "family"),
    [
        ("Restrict(Normal(0.0, 2.0), 0.0)", "HalfNormal(2.0)"),
        ("Restrict(Cauchy(0.0, 2.5), 0.0)", "HalfCauchy(2.5)"),
        ("Truncated(Normal(0.3, 1.5), -1.0, 2.0)", "TruncatedNormal(0.3, 1.5, -1.0, 2.0)"),
        ("Pushforward(Normal(0.2, 0.7), Sigmoid)", "LogitNormal(0.2, 0.7)"),
    ],
)
def test_quivers_sugar_is_the_registry_family(restricted: str, family: str) -> None:
    """quivers' compiler reads `HalfNormal(2.0)` as `Restrict(Normal(0.0, 2.0), 0.0)` and
    `HalfCauchy(2.5)` as `Restrict(Cauchy(0.0, 2.5), 0.0)` (`dsl/compiler/sugar.py`): the
    same densities here, at values inside."""
    values = torch.tensor([0.05, 0.4, 0.9], dtype=F64)
    joints = []
    for written in (restricted, family):
        source = (
            "object Row : FinSet 3\n\nprogram p : Row -> Row\n"
            f"    observe y : Row <- {written}\n    return y\n\nexport p\n"
        )
        program = compile_model(check(source), "p")
        joints.append(program.log_joint({}, {"y": values}).double())
    torch.testing.assert_close(joints[0], joints[1], rtol=1e-12, atol=1e-12)


def test_the_zero_one_inflated_beta_is_quivers_reference_density() -> None:
    """quivers' `ZeroOneInflatedBeta(mu, phi, zoi, coi)` (`qiec/reference_families.py`):
    log(zoi (1 - coi)) at 0, log(zoi coi) at 1, log(1 - zoi) plus the Beta(mu phi,
    (1 - mu) phi) log density between, -inf outside [0, 1]; draws keep the atoms."""
    source = (
        "object Row : FinSet 5\n\nprogram p : Row -> Row\n"
        "    sample mu <- Beta(2.0, 2.0)\n"
        "    observe y : Row <- ZeroOneInflatedBeta(mu, 6.0, 0.3, 0.4)\n"
        "    return mu\n\nexport p\n"
    )
    program = compile_model(check(source), "p")
    mu = 0.35
    y = torch.tensor([0.0, 1.0, 0.2, 0.9, 0.5], dtype=F64)
    got = program.log_joint({}, {"mu": torch.tensor(mu, dtype=F64), "y": y}).double().reshape(())
    beta = D.Beta(torch.tensor(mu * 6.0, dtype=F64), torch.tensor((1 - mu) * 6.0, dtype=F64))
    want = (
        D.Beta(torch.tensor(2.0, dtype=F64), torch.tensor(2.0, dtype=F64)).log_prob(
            torch.tensor(mu, dtype=F64)
        )
        + math.log(0.3 * 0.6)
        + math.log(0.3 * 0.4)
        + (math.log(0.7) + beta.log_prob(y[2:])).sum()
    )
    torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)
    outside = program.log_joint({}, {"mu": torch.tensor(mu, dtype=F64), "y": y + 0.5})
    assert outside.item() == -math.inf
    torch.manual_seed(0)
    draws = torch.stack([program.run().values["y"] for _ in range(400)])
    assert bool(((draws >= 0) & (draws <= 1)).all())
    assert bool((draws == 0).any()) and bool((draws == 1).any())


def test_a_restricted_count_draws_by_its_probabilities_on_the_interval() -> None:
    """A Poisson above 0 at a rate of 0.001 (which a draw-again-until-inside sampler
    would need a thousand rounds for) and a Poisson(3) kept to 2..4: draws in the
    interval, each count about as often as its probability there says (within 5 sd)."""
    source = (
        "object R : FinSet 3000\n\nprogram p : R -> R\n"
        "    observe y : R <- Restrict(Poisson(0.001), 1.0)\n"
        "    observe w : R <- Restrict(Poisson(3.0), 2.0, 4.0)\n"
        "    return y\n\nexport p\n"
    )
    torch.manual_seed(0)
    drawn = compile_model(check(source), "p").run().values
    y, w = drawn["y"], drawn["w"]
    assert bool((y >= 1).all()) and float((y == 1).double().mean()) > 0.99
    masses = [3.0**k / math.factorial(k) for k in (2, 3, 4)]
    for k, mass in zip((2, 3, 4), masses, strict=True):
        p = mass / sum(masses)
        count = float((w == k).sum())
        assert abs(count - 3000 * p) < 5 * math.sqrt(3000 * p * (1 - p)), (k, count)
    assert bool(((w >= 2) & (w <= 4)).all())


def test_a_pushforward_carries_its_base_s_interval() -> None:
    """Every bijection increases, so a truncation's ends map to the image's: the latent
    moves in [sigmoid(-1), sigmoid(1)], not in all of (0, 1) where its density is 0."""
    source = """object One : FinSet 1

program p : One -> One
    sample pl <- Pushforward(Truncated(Normal(0.0, 1.0), -1.0, 1.0), Sigmoid)
    sample up <- Pushforward(Restrict(Normal(0.0, 1.0), 0.0), Exp)
    sample wide <- Pushforward(Normal(0.0, 1.0), Softplus)
    return pl

export p
"""
    model = check(source).models["p"]
    pl, up, wide = (model.site(n).support for n in ("pl", "up", "wide"))
    sigmoid = [1.0 / (1.0 + math.exp(-e)) for e in (-1.0, 1.0)]
    assert (pl.kind, pl.low, pl.high) == ("interval", *sigmoid)
    assert (up.kind, up.low) == ("greater_than_eq", 1.0)
    assert wide.kind == "positive"


#: Ends below the support of the family they cut: a HalfNormal's at a value that may be
#: negative, a Gamma's at a number below 0, an Exponential's both below 0.
BELOW_SUPPORT = """object Row : FinSet 4

program below : Row -> Row
    sample m <- Normal(0.0, 1.0)
    observe h : Row <- Truncated(HalfNormal(1.0), m, 2.0)
    observe g : Row <- Restrict(Gamma(2.0, 1.5), -3.0, 4.0)
    sample e <- Truncated(Exponential(1.0), -2.0, -1.0)
    return h

export below
"""


def test_an_end_below_the_support_keeps_the_mass_inside_it() -> None:
    """A truncation keeps the mass of the interval inside the family's support: [m, 2] of
    a HalfNormal is [0, 2] for any m below 0, [-3, 4] of a Gamma is [0, 4] (torch's CDFs
    refuse an end outside the support; qvr ended with an internal error)."""
    oracle.require_head(BELOW_SUPPORT.replace("-2.0, -1.0", "0.5, 1.0"))
    h, g = [0.3, 1.2, 0.05, 1.9], [0.5, 2.0, 3.9, 1.1]
    source = BELOW_SUPPORT.replace("    sample e <- Truncated(Exponential(1.0), -2.0, -1.0)\n", "")
    joints = [_joint(source, "below", {"h": h, "g": g}, {"m": m}) for m in (-1.5, -0.2, 0.0)]

    def f64(v: object) -> torch.Tensor:
        return torch.tensor(v, dtype=F64)

    half, gamma = D.HalfNormal(f64(1.0)), D.Gamma(f64(2.0), f64(1.5))
    expected = (half.log_prob(f64(h)) - torch.log(half.cdf(f64(2.0)))).sum() + (
        gamma.log_prob(f64(g)) - torch.log(gamma.cdf(f64(4.0)))
    ).sum()
    for m, joint in zip((-1.5, -0.2, 0.0), joints, strict=True):
        prior = D.Normal(f64(0.0), f64(1.0)).log_prob(f64(m))
        assert float(joint) == pytest.approx(float(expected + prior), rel=1e-9)
    torch.manual_seed(0)
    program = compile_model(check(source), "below")
    for _ in range(10):
        drawn = program.run().values
        assert bool(((drawn["h"] >= 0) & (drawn["h"] <= 2)).all())
        assert bool(((drawn["g"] > 0) & (drawn["g"] <= 4)).all())
    # an interval wholly below the support keeps no mass: no value has a density there
    nothing = compile_model(check(BELOW_SUPPORT), "below")
    values = {"m": 0.1, "h": h, "g": g, "e": -1.5}
    at = {k: torch.tensor(v, dtype=F64) for k, v in values.items()}
    assert float(nothing.log_joint({}, at)) == -math.inf
