"""`morphism k : A -> B ~ F(args)` and options named after a parameter of F: the checker
types them (quivers' families fixtures), binding the arguments to F's parameters from the
registry, and says precisely what it leaves names-only."""

from __future__ import annotations

import pytest

from qvr_core.builtins import FAMILIES
from qvr_core.check import check
from qvr_core.check.module import CheckedModule
from qvr_core.plan.runnable import runnability
from qvr_core.text import rules
from tests.check.helpers import find

HEAD = (
    "object Obs : Real 4\n"
    "object Pos : Positive 4\n"
    "object Mix : Simplex 3\n"
    "object Die : FinSet 3\n"
    "object Two : Real 2\n"
)


def _module(decl: str, cod: str = "Obs") -> tuple[str, CheckedModule]:
    text = (
        f"{HEAD}morphism k : Obs -> {cod} {decl}\n"
        f"program p : Obs -> {cod}\n    sample x <- k\n    return x\nexport p\n"
    )
    return text, check(text)


def _problems(m: CheckedModule) -> list[tuple[str, str]]:
    return [
        (d.code, d.message) for d in m.diagnostics if d.severity.value in ("error", "information")
    ]


#: quivers' fixtures `tests/transpile/fixtures/families/*.qvr` (the 13 morphism kernels).
FIXTURES = {
    "Cauchy": "0.0, 1.0",
    "Chi2": "3.0",
    "ContinuousBernoulli": "0.5",
    "FisherSnedecor": "5.0, 5.0",
    "GeneralizedPareto": "0.0, 1.0, 0.5",
    "Gumbel": "0.0, 1.0",
    "InverseGamma": "3.0, 1.0",
    "Kumaraswamy": "2.0, 2.0",
    "Laplace": "0.0, 1.0",
    "Pareto": "1.0, 2.0",
    "RelaxedBernoulli": "0.5, 1.0",
    "StudentT": "5.0, 0.0, 1.0",
    "Weibull": "1.5, 1.0",
}


@pytest.mark.parametrize("family", sorted(FIXTURES))
def test_a_fixture_kernel_is_typed_with_every_parameter_given(family: str) -> None:
    _, m = _module(f"[role=kernel] ~ {family}({FIXTURES[family]})")
    assert _problems(m) == []
    info = m.morphisms["k"]
    spec = FAMILIES[family]
    numbers = [float(v) for v in FIXTURES[family].split(",")]
    assert info.given == tuple(zip((p.name for p in spec.params), numbers, strict=True))
    assert info.network == ()
    assert m.programs["p"].type is not None and runnability(m, "p").ok


def test_the_parameters_left_out_come_from_the_network() -> None:
    _, m = _module("[role=kernel] ~ StudentT(df=3.0)")
    assert _problems(m) == []
    assert m.morphisms["k"].given == (("df", 3.0),)
    assert m.morphisms["k"].network == ("loc", "scale")


def test_an_option_named_after_a_parameter_fixes_it() -> None:
    """quivers' relaxedonehotcategorical fixture: `temperature=0.5` is the family's
    temperature; the network gives the probabilities (one simplex draw over Obs)."""
    _, m = _module("[role=kernel, temperature=0.5] ~ RelaxedOneHotCategorical")
    assert _problems(m) == []
    assert m.morphisms["k"].given == (("temperature", 0.5),)
    assert m.morphisms["k"].network == ("probs",)


def test_a_number_per_coordinate_and_a_vector_family() -> None:
    _, m = _module("~ Normal(loc=[0.0, 1.0, 2.0, 3.0], scale=0.5)")
    assert _problems(m) == []
    assert m.morphisms["k"].given == (("loc", (0.0, 1.0, 2.0, 3.0)), ("scale", 0.5))
    _, m = _module("[role=kernel] ~ Dirichlet(1.0, 2.0, 3.0)", cod="Mix")
    assert _problems(m) == []
    assert m.morphisms["k"].given == (("concentration", (1.0, 2.0, 3.0)),)


def test_scale_on_a_normal_is_its_given_standard_deviation() -> None:
    _, m = _module("[role=kernel, scale=0.5] ~ Normal(0.0)")
    assert _problems(m) == []
    assert m.morphisms["k"].given == (("loc", 0.0), ("scale", 0.5))


@pytest.mark.parametrize(
    ("decl", "cod", "code", "needle", "words"),
    [
        ("~ Cauchy(0.0, -1.0)", "Obs", "QVR312", "-1.0", "scale of Cauchy must be a positive"),
        ("~ Cauchy(0.0, 1.0, 2.0)", "Obs", "QVR311", "Cauchy(0.0, 1.0, 2.0)", "takes 2"),
        ("~ Pareto(alpha=2.0)", "Obs", "QVR311", "Pareto(alpha=2.0)", "give scale"),
        ("~ FisherSnedecor(df1=5.0)", "Obs", "QVR311", "FisherSnedecor(df1=5.0)", "df2 of"),
        ("~ Uniform(-1.0, 2.0)", "Pos", "QVR302", "Uniform", "a number in [-1, 2]"),
        ("~ Uniform(2.0, [3.0, 4.0, 1.0, 5.0])", "Obs", "QVR312", "[3.0, 4.0, 1.0, 5.0]", "above"),
        ("~ Cauchy(loc=[0.0, 1.0, 2.0])", "Obs", "QVR313", "[0.0, 1.0, 2.0]", "not 3 numbers"),
        ("[role=kernel, hidden_dim=8] ~ Gumbel(0.0, 1.0)", "Obs", "QVR306", "hidden_dim=8", "none"),
        ("~ Dirichlet([1.0, 2.0])", "Mix", "QVR302", "Dirichlet", "one vector of 2"),
        (
            "~ RelaxedOneHotCategorical(0.5, [0.2, 0.3, 0.6])",
            "Mix",
            "QVR312",
            "[0.2, 0.3, 0.6]",
            "a probability vector",
        ),
        (
            "[temperature=0.5] ~ RelaxedBernoulli(0.5, 0.5)",
            "Obs",
            "QVR311",
            "RelaxedBernoulli(0.5, 0.5)",
            "given twice",
        ),
        ("~ Deterministic(1.0)", "Obs", "QVR311", "Deterministic(1.0)", "no arguments"),
        ("~ Beta(2.0, 2.0)", "Die", "QVR302", "Beta", "FinSet 3"),
    ],
)
def test_a_bad_argument_is_a_located_error(
    decl: str, cod: str, code: str, needle: str, words: str
) -> None:
    text, m = _module(decl, cod)
    errors = [d for d in m.diagnostics if d.is_error]
    assert [d.code for d in errors] == [code], _problems(m)
    start, end = find(text, needle, within="morphism k")
    assert (errors[0].span.start, errors[0].span.end) == (start, end)
    assert words in errors[0].message
    if code == rules.OPTION_NOT_APPLICABLE.code:  # the option is in error, not the family
        assert m.morphisms["k"].network == ()
    else:  # no distribution to run: the program has no type
        assert "k" not in m.morphisms and not runnability(m, "p").ok


@pytest.mark.parametrize(
    ("decl", "cod", "reason"),
    [
        ("~ Categorical([0.2, 0.3, 0.5])", "Die", "a discrete family with arguments"),
        ("~ Normal(mu, 1.0)", "Obs", "its argument 'mu' to Normal"),
        ("[role=kernel, over=[Obs]] ~ Normal", "Obs", "option over: it names axes"),
    ],
)
def test_what_is_left_names_only_says_what_it_is(decl: str, cod: str, reason: str) -> None:
    text, m = _module(decl, cod)
    (note,) = [d for d in m.diagnostics if d.code == rules.NOT_CHECKED.code]
    assert reason in note.message
    assert note.span.start == text.index("k :")
    verdict = runnability(m, "p")
    assert verdict.reason is not None and reason in verdict.reason
    assert "line 8 uses 'k'" in verdict.reason


def test_a_family_without_a_network_form_suggests_giving_its_parameters() -> None:
    _, m = _module("[role=kernel] ~ Pareto")
    (d,) = [d for d in m.diagnostics if d.is_error]
    assert d.code == rules.FAMILY_CODOMAIN.code
    assert d.message.endswith("or give its parameters, ~ Pareto(scale, alpha)")


def test_an_untyped_program_names_the_error_inside_it() -> None:
    text = (
        f"{HEAD}morphism k : Obs -> Obs ~ Cauchy(0.0, 1.0)\n"
        "program p : Obs -> Obs\n    sample x <- nowhere\n    return x\nexport p\n"
    )
    verdict = runnability(check(text), "p")
    assert verdict.reason is not None
    assert verdict.reason.startswith("program p does not type-check: line 8:")
    assert "nowhere" in verdict.reason
