"""Bayesian programs checked into a Model: family steps, plates, data, scopes, new codes."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from qvr_core.check import check
from qvr_core.check.model import Let, Site
from qvr_core.check.module import SymbolKind
from tests.check.helpers import find, only

EIGHT_SCHOOLS = """\
object School : FinSet 8

program eight_schools : School -> School
    sample mu <- Normal(0.0, 5.0)
    sample tau <- HalfCauchy(scale=5.0)
    sample theta_raw : School <- Normal(0.0, 1.0)
    let theta = mu + tau * theta_raw
    observe y : School <- Normal(theta, sigma)
    return mu

export eight_schools
"""

MIXTURE = """\
object Component : FinSet 3
object Item : FinSet 8
object Resp : FinSet 100

program gmm(alpha : Real) : Resp -> Resp
    sample probs <- Dirichlet(alpha) [over=Component]
    sample mu : Component <- Normal(0.0, 5.0)
    sample sigma : Component <- HalfNormal(1.0)
    marginalize cls : Component <- Categorical(probs) [over=Item, reduction=logsumexp]
        observe r : Resp <- Normal(mu[cls], sigma[cls]) [via=idx]
    return probs

export gmm
"""


def _loud(module) -> list[str]:  # type: ignore[no-untyped-def]
    """Codes other than the unused-object hints of the shared header."""
    return [d.code for d in module.diagnostics if d.code != "QVR103"]


def _program(body: str, header: str = "program p : School -> School") -> str:
    return (
        "object School : FinSet 8\nobject Region : FinSet 3\nobject Val : Real 1\n\n"
        f"{header}\n{body}\nexport p\n"
    )


def test_eight_schools_is_a_model_with_plates_and_data() -> None:
    module = check(EIGHT_SCHOOLS)
    assert module.diagnostics == ()
    assert "eight_schools" not in module.programs
    model = module.models["eight_schools"]
    kinds = [(s.kind, s.name) for s in model.steps]
    assert kinds == [
        ("sample", "mu"),
        ("sample", "tau"),
        ("sample", "theta_raw"),
        ("let", "theta"),
        ("observe", "y"),
    ]
    tau = model.site("tau")
    assert tau is not None and tau.family == "HalfCauchy"
    assert [(a.param, a.literal) for a in tau.args] == [("scale", 5.0)]
    raw = model.site("theta_raw")
    assert raw is not None and raw.plates == ("School",)
    assert raw.type is not None and raw.type.label == "School -> R"
    (theta,) = [s for s in model.steps if isinstance(s, Let)]
    assert theta.uses == ("mu", "tau", "theta_raw")
    assert theta.type is not None and theta.type.label == "School -> R"
    y = model.site("y")
    assert y is not None and [a.name for a in y.args] == ["theta", "sigma"]
    # the observed target and the free name are data, bound at fit time (not QVR401)
    data = {d.name: d for d in model.data}
    assert set(data) == {"y", "sigma"}
    assert data["y"].observed and not data["sigma"].observed
    assert model.observed == ("y",)
    assert model.returns == ("mu",)


def test_data_variables_are_symbols_of_their_own_kind() -> None:
    module = check(EIGHT_SCHOOLS)
    sigma = module.symbols.lookup("sigma", "eight_schools")
    assert sigma is not None and sigma.kind is SymbolKind.DATA
    theta_raw = module.symbols.lookup("theta_raw", "eight_schools")
    assert theta_raw is not None and theta_raw.detail == "sample theta_raw : School -> R"


def test_a_mixture_has_a_marginalised_scope_and_a_grouping_plate() -> None:
    module = check(MIXTURE)
    assert module.diagnostics == ()
    model = module.models["gmm"]
    assert [(p.name, p.kind) for p in model.params] == [("alpha", "Real")]
    probs = model.site("probs")
    assert probs is not None and probs.over == ("Component",)
    assert probs.type is not None and probs.type.label == "Simplex 3"
    assert probs.type.element.of == "Component"
    cls = model.site("cls")
    assert cls is not None and cls.kind == "marginalize" and cls.reduction == "logsumexp"
    assert cls.plates == ("Item",)  # the grouping plate; the values range over Component
    assert cls.type is not None and cls.type.element.of == "Component"
    r = model.site("r")
    assert r is not None and r.scope == ("cls",) and r.via == "idx"
    assert [(a.name, a.index) for a in r.args] == [("mu", ("cls",)), ("sigma", ("cls",))]
    idx = model.data_variable("idx")
    assert idx is not None and idx.indexes == "Item" and not idx.observed


def test_a_gather_along_data_is_sized_by_the_data() -> None:
    text = _program(
        "    sample alpha : School <- Normal(0.0, 1.0)\n"
        "    let a = alpha[group]\n"
        "    observe y <- Normal(a, 1.0)\n"
        "    return alpha"
    )
    module = check(text)
    assert _loud(module) == []
    model = module.models["p"]
    group = model.data_variable("group")
    assert group is not None and group.indexes == "School"
    y = model.site("y")
    assert y is not None and y.type is not None and y.type.label == "rows -> R"


def test_a_design_matrix_times_coefficients_summed_over_them_is_over_the_rows() -> None:
    """`X * beta` of a data matrix (rows first, as a data file holds them) and `beta :
    School` runs over the rows and School; `.sum(1)` sums School away, `.sum(0)` the
    rows: the type follows the axes the runtime sums."""
    text = _program(
        "    sample beta : School <- Normal(0.0, 1.0)\n"
        "    let terms = X * beta\n"
        "    let mu = terms.sum(1)\n"
        "    let per_school = terms.sum(0)\n"
        "    observe y <- Normal(mu, 1.0)\n"
        "    return beta"
    )
    module = check(text)
    assert _loud(module) == []
    lets = {s.name: s for s in module.models["p"].steps if s.name in ("terms", "mu", "per_school")}
    assert {n: s.type.label for n, s in lets.items()} == {  # type: ignore[union-attr]
        "terms": "School * rows -> R",
        "mu": "rows -> R",
        "per_school": "School -> R",
    }


def test_a_program_call_substitutes_its_plate_parameter() -> None:
    text = (
        "object School : FinSet 8\n\n"
        "program effects(spread : Real, K : FinSet) : K -> K\n"
        "    sample z : K <- Normal(0.0, 1.0)\n"
        "    let effect = spread * z\n"
        "    return effect\n\n"
        "program pooled : School -> School\n"
        "    sample theta <- effects(0.6, School)\n"
        "    sample sigma <- LogNormal(0.0, 0.5)\n"
        "    observe y : School <- Normal(theta, sigma)\n"
        "    return theta\n\n"
        "export pooled\n"
    )
    module = check(text)
    assert _loud(module) == []
    theta = module.models["pooled"].site("theta")
    assert theta is not None and theta.callee == "effects" and theta.family is None
    assert theta.type is not None and theta.type.label == "School -> R"


def test_a_template_that_calls_itself_is_a_cycle_not_a_recursion_error() -> None:
    """The fuzzer's case: the checker typed the callee while typing it, without end."""
    text = (
        "object Point : FinSet 3\n\n"
        "program effects(spread : Real, G : FinSet) : G -> G\n"
        "    sample z : G <- Normal(0.0, spread)\n"
        "    sample v <- effects(1.0, Point)\n"
        "    return z\n"
    )
    module = check(text)
    (cycle,) = [d for d in module.diagnostics if d.code == "QVR105"]
    assert "'effects' is defined in terms of itself: effects -> effects" in cycle.message
    assert cycle.span.start_line == 4
    assert not [d for d in module.diagnostics if d.code == "QVR000"]


def test_wrong_family_arguments_are_qvr311() -> None:
    text = _program("    sample mu <- Normal(0.0, 1.0, 2.0)\n    return mu")
    d = only(check(text), "QVR311")
    assert "Normal takes 2 arguments, not 3" in d.message


def test_a_literal_outside_its_constraint_is_qvr312_at_the_literal() -> None:
    text = _program("    sample tau <- HalfCauchy(-1.0)\n    return tau")
    d = only(check(text), "QVR312")
    assert d.message == "scale of HalfCauchy must be a positive number, not -1.0"
    assert (d.span.start, d.span.end) == find(text, "-1.0")


def test_a_bound_that_is_another_parameter_is_checked() -> None:
    text = _program("    sample p <- Beta(2.0, 0.0)\n    return p")
    assert "QVR312" in _loud(check(text))
    ok = _program("    sample p <- Uniform(-1.0, 1.0)\n    return p")
    assert _loud(check(ok)) == []


@settings(max_examples=60, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False, min_value=-1e6, max_value=1e6))
def test_half_cauchy_scale_is_refused_exactly_when_not_positive(scale: float) -> None:
    text = _program(f"    sample tau <- HalfCauchy({scale!r})\n    return tau")
    got = _loud(check(text))
    assert got == ([] if scale > 0 else ["QVR312"]), (scale, got)


@settings(max_examples=40, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False, min_value=-3.0, max_value=3.0))
def test_bernoulli_probability_is_refused_exactly_outside_the_unit_interval(p: float) -> None:
    text = _program(f"    sample b <- Bernoulli({p!r})\n    return b")
    got = _loud(check(text))
    assert got == ([] if 0 <= p <= 1 else ["QVR312"]), (p, got)
    assert math.isfinite(p)


def test_an_argument_over_another_plate_is_qvr313() -> None:
    text = _program(
        "    sample theta : Region <- Normal(0.0, 1.0)\n"
        "    observe y : School <- Normal(theta, 1.0)\n"
        "    return theta"
    )
    d = only(check(text), "QVR313")
    assert "theta is over Region, but y is over School" in d.message
    assert (d.span.start, d.span.end) == find(text, "theta", within="observe")


def test_a_vector_of_the_wrong_size_is_qvr313() -> None:
    text = _program("    sample w <- Dirichlet([1.0, 1.0]) [over=Region]\n    return w")
    d = only(check(text), "QVR313")
    assert "has 2 entries" in d.message and "3" in d.message


def test_a_discrete_family_on_a_continuous_object_is_qvr314() -> None:
    text = _program("    observe n : Val <- Poisson(3.0)\n    return n")
    d = only(check(text), "QVR314")
    assert d.message.startswith("Poisson draws discrete values")


def test_continuous_families_on_real_objects_are_accepted() -> None:
    for family in ("LogNormal(0.0, 1.0)", "LogitNormal(0.0, 1.0)", "Normal(0.0, 1.0)"):
        text = _program(f"    observe v : Val <- {family}\n    return v")
        assert _loud(check(text)) == [], family


def test_an_index_over_another_plate_is_qvr409() -> None:
    text = _program(
        "    sample w <- Dirichlet(1.0) [over=Region]\n"
        "    sample mu : School <- Normal(0.0, 1.0)\n"
        "    marginalize c : Region <- Categorical(w)\n"
        "        observe y <- Normal(mu[c], 1.0)\n"
        "    return mu"
    )
    d = only(check(text), "QVR409")
    assert "indexed by c, which ranges over Region, not School" in d.message
    restated = _program(
        "    sample mu : School <- Normal(0.0, 1.0)\n"
        "    observe y : School <- Normal(mu[Region], 1.0)\n"
        "    return mu"
    )
    assert _loud(check(restated)) == ["QVR409"]


def test_step_options_are_validated() -> None:
    text = _program("    sample mu : School <- Normal(0.0, 1.0) [ovr=Region]\n    return mu")
    d = only(check(text), "QVR303")
    assert "did you mean 'over'" in d.message and d.fixes
    bad = _program(
        "    marginalize c : Region <- Categorical([0.2, 0.3, 0.5]) [reduction=lse]\n"
        "        observe y <- Normal(0.0, 1.0)\n"
        "    return c"
    )
    assert _loud(check(bad)) == ["QVR304"]
    misplaced = _program("    sample mu <- Normal(0.0, 1.0) [via=idx]\n    return mu")
    assert _loud(check(misplaced)) == ["QVR306"]
    unknown_axis = _program("    sample mu <- Normal(0.0, 1.0) [over=Schol]\n    return mu")
    d = only(check(unknown_axis), "QVR304")
    assert "did you mean 'School'" in d.message


def test_score_and_let_are_steps_of_the_model() -> None:
    text = _program(
        "    sample theta : School <- Normal(0.0, 1.0)\n"
        "    let total = theta * 2.0\n"
        "    score penalty = -50.0 * total\n"
        "    return theta"
    )
    module = check(text)
    assert _loud(module) == []
    lets = [s for s in module.models["p"].steps if isinstance(s, Let)]
    assert [(s.kind, s.name, s.uses) for s in lets] == [
        ("let", "total", ("theta",)),
        ("score", "penalty", ("total",)),
    ]


def test_what_the_model_checker_does_not_type_keeps_one_qvr011() -> None:
    text = _program(
        "    sample theta : School <- Normal(0.0, 1.0)\n"
        "    let total = frobnicate(theta)\n"
        "    return total"
    )
    module = check(text)
    assert _loud(module) == ["QVR011"]
    assert "its function frobnicate" in only(module, "QVR011").message
    assert "p" not in module.models


def test_registry_functions_are_typed_by_their_shape() -> None:
    text = _program(
        "    sample theta : School <- Normal(0.0, 1.0)\n"
        "    sample sigma <- HalfNormal(1.0)\n"
        "    let root = sqrt(sigma) + theta\n"
        "    let total = sum(theta)\n"
        "    let probs = softmax(theta)\n"
        "    let big = theta > 0.5\n"
        "    let m = theta.mean()\n"
        "    return total"
    )
    module = check(text)
    assert _loud(module) == []
    lets = {s.name: s for s in module.models["p"].steps if isinstance(s, Let)}
    assert [p.name for p in lets["root"].type.plates] == ["School"]  # elementwise
    assert lets["total"].type.plates == ()  # a reduction is one number
    assert [p.name for p in lets["probs"].type.plates] == ["School"]  # rowwise keeps it
    assert [p.name for p in lets["big"].type.plates] == ["School"]  # a comparison too
    assert lets["m"].type.plates == ()


def test_a_seed_observe_on_another_finite_set_is_its_plate() -> None:
    text = (
        "object Token : FinSet 16\nobject Resp : FinSet 4\nobject Hidden : Real 8\n"
        "morphism encode : Token -> Hidden [role=embed]\n"
        "morphism head : Hidden -> Token [role=kernel] ~ Categorical\n"
        "program lm : Token -> Token\n"
        "    sample h <- encode\n"
        "    observe next : Resp <- head(h)\n"
        "    return next\n"
        "export lm\n"
    )
    assert [d.code for d in check(text).diagnostics if d.is_error] == []


def test_every_site_of_a_model_is_a_site_in_source_order() -> None:
    model = check(MIXTURE).models["gmm"]
    assert [s.name for s in model.sites] == ["probs", "mu", "sigma", "cls", "r"]
    assert all(isinstance(s, Site) for s in model.sites)


def test_the_incremental_checker_moves_models_as_a_fresh_check_builds_them() -> None:
    from qvr_core.check.incremental import IncrementalChecker
    from tests.check.test_incremental import same_as_from_scratch

    both = MIXTURE.replace("export gmm\n", "") + EIGHT_SCHOOLS.replace(
        "object School : FinSet 8\n", "object School : FinSet 8\nobject Other : FinSet 2\n"
    )
    versions = [
        both,
        "# a comment above everything\n" + both,
        "object Extra : Real 3\n" + both.replace("HalfCauchy(scale=5.0)", "HalfCauchy(-5.0)"),
        both.replace("sample mu <- Normal(0.0, 5.0)", "sample mu <- Normal(0.0, 5.0, 1.0)"),
        both,
    ]
    checker = IncrementalChecker(safe=False)
    for text in versions:
        module = checker.check(text)
        same_as_from_scratch(module, text)
        assert set(module.models) == {"gmm", "eight_schools"}


def test_a_name_read_before_its_step_binds_it_is_qvr402_with_the_read() -> None:
    text = _program(
        "    let a = b * 2.0\n    sample b <- Normal(0.0, 1.0)\n    return a",
    )
    d = only(check(text), "QVR402")
    assert "read before this step binds it" in d.message
    assert [r.message for r in d.related] == ["'b' is first read here"]


def test_a_vector_family_may_read_a_value_over_its_own_axis() -> None:
    text = _program(
        "    sample a : Region <- HalfNormal(1.0)\n"
        "    sample w : School <- Dirichlet(a) [over=Region]\n"
        "    return w"
    )
    module = check(text)
    assert _loud(module) == []
    w = module.models["p"].site("w")
    assert w is not None and w.type is not None and w.type.label == "School -> Simplex 3"
