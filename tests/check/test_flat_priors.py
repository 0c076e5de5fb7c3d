"""Improper flat priors (`Flat`, `HalfFlat`), written bare as quivers' grammars parse a step
whose source is a name: typed as family steps without arguments, and every misuse a
located error (issue 49)."""

from __future__ import annotations

import pytest

from qvr_core.builtins import FAMILIES
from qvr_core.check import check
from qvr_core.ide.completion import candidates
from qvr_core.ide.completion_context import classify
from qvr_core.ide.hover import hover_at
from qvr_core.ide.tokens import TokenType, semantic_tokens
from qvr_core.text import rules
from tests.check.helpers import find, only
from tests.models import regressions

REGRESSION = """\
object Row : FinSet 20
object Coef : FinSet 2

program regression : Row -> Row
    sample beta : Coef <- Flat
    sample sigma <- HalfFlat
    let terms = X * beta
    let mu = terms.sum(1)
    observe y : Row <- Normal(mu, sigma)
    return mu

export regression
"""

SCALARS = regressions.flat_line(20)


def step(body: str) -> str:
    """A program of one `sample` (or other) step `body` beside an observation."""
    return (
        "object Row : FinSet 4\n\n"
        "program p : Row -> Row\n"
        f"    {body}\n"
        "    observe y : Row <- Normal(0.0, 1.0)\n"
        "    return y\n\n"
        "export p\n"
    )


def test_the_registry_has_both_without_parameters_as_qvrs_own() -> None:
    for name, support in (("Flat", "real"), ("HalfFlat", "positive")):
        family = FAMILIES[name]
        assert family.improper and not family.params and family.has_distribution
        assert family.support.kind == support
        assert "qvr's own family (quivers has none)" in family.doc
        assert family.signature() == name


def test_bare_flat_priors_are_family_steps_fully_checked() -> None:
    module = check(SCALARS)
    assert module.ok, [(d.code, d.message) for d in module.diagnostics]
    assert not [d for d in module.diagnostics if d.code == rules.NOT_CHECKED.code]
    model = module.models["regression"]
    sites = {s.name: s for s in model.sites}
    assert sites["a"].family == "Flat" and sites["a"].args == ()
    assert sites["sigma"].family == "HalfFlat" and sites["sigma"].kind == "sample"
    assert sites["sigma"].type is not None and sites["sigma"].type.element.kind == "positive"


def test_a_flat_prior_takes_the_plates_of_its_annotation() -> None:
    module = check(REGRESSION)
    assert module.ok, [(d.code, d.message) for d in module.diagnostics]
    model = module.models["regression"]
    beta = model.site("beta")
    assert beta is not None and beta.plates == ("Coef",) and beta.annotated
    assert beta.type is not None and beta.type.element.kind == "real"
    plated = check(step("sample s <- HalfFlat [iid_over=Row]")).models["p"].site("s")
    assert plated is not None and plated.plates == ("Row",)


def test_a_model_with_only_improper_priors_is_fine_when_it_is_observed() -> None:
    module = check(step("sample m <- Flat").replace("Normal(0.0, 1.0)", "Normal(m, 1.0)"))
    assert module.ok and "p" in module.models


def test_hover_and_tokens_read_the_registry_for_a_bare_family() -> None:
    module = check(SCALARS)
    start, _ = find(SCALARS, "HalfFlat")
    found = hover_at(module, start + 1)
    assert found is not None and SCALARS[found.span.start : found.span.end] == "HalfFlat"
    assert "improper flat prior on (0, inf)" in found.plain
    assert "qvr's own family" in found.plain
    tokens = {t.span.start: t.type for t in semantic_tokens(module)}
    assert tokens[start] is TokenType.FAMILY
    assert tokens[find(SCALARS, "Flat")[0]] is TokenType.FAMILY


def test_completion_after_the_arrow_offers_them_with_their_docs() -> None:
    text = "object Row : FinSet 4\n\nprogram p : Row -> Row\n    sample b <- Fl"
    found = {c.label: c for c in candidates(classify(text, len(text)), [check(text)], 3)}
    assert found["Flat"].detail == "family Flat" and found["HalfFlat"].detail == "family HalfFlat"
    assert "improper flat prior" in (found["Flat"].doc or "")


def test_a_bare_family_with_parameters_needs_its_arguments() -> None:
    text = step("sample b <- Normal")
    d = only(check(text), rules.FAMILY_ARGUMENTS.code)
    assert d.message.startswith("Normal needs its arguments: Normal(loc, scale)")
    assert (d.span.start, d.span.end) == find(text, "Normal")
    assert rules.UNDEFINED_NAME.code not in [x.code for x in check(text).diagnostics]


@pytest.mark.parametrize(
    ("call", "family"), [("Flat(1.0)", "Flat"), ("HalfFlat(x=2.0)", "HalfFlat")]
)
def test_a_flat_prior_with_arguments_is_located(call: str, family: str) -> None:
    text = step(f"sample b <- {call}")
    d = only(check(text), rules.FAMILY_ARGUMENTS.code)
    assert d.message == (f"{family} takes no arguments: write it without parentheses, `{family}`")
    assert (d.span.start, d.span.end) == find(text, call)


def test_empty_parentheses_are_no_spelling_of_a_flat_prior() -> None:
    """`Flat()` parses in no quivers grammar (qvr's reads it): the bare name is the spelling."""
    text = step("sample b <- Flat()")
    d = only(check(text), rules.FAMILY_ARGUMENTS.code)
    assert d.message.startswith("Flat takes no arguments: write it without parentheses")
    assert (d.span.start, d.span.end) == find(text, "Flat()")


@pytest.mark.parametrize(
    "line",
    [
        "observe z : Row <- Flat",
        "marginalize c <- HalfFlat\n        observe z : Row <- Normal(c, 1.0)",
    ],
)
def test_an_improper_prior_is_a_latents_only(line: str) -> None:
    text = step(line)
    module = check(text)
    d = only(module, rules.WRONG_KIND.code)
    assert "improper prior" in d.message and "`sample`" in d.message
    name = "Flat" if "<- Flat" in line else "HalfFlat"
    assert (d.span.start, d.span.end) == find(text, name, within=line.split("\n")[0])


def test_a_morphism_cannot_have_an_improper_family() -> None:
    text = (
        "object H : Real 4\nobject I : Real 2\n"
        "morphism f : H -> I [role=kernel] ~ HalfFlat\n"
        "program p : H -> I\n    sample y <- f\n    return y\n\nexport p\n"
    )
    d = only(check(text), rules.FAMILY_CODOMAIN.code)
    assert "improper prior" in d.message
    assert (d.span.start, d.span.end) == find(text, "HalfFlat")


def test_the_dirac_kernel_written_bare_in_a_step_is_located() -> None:
    text = step("sample d <- Deterministic")
    d = only(check(text), rules.WRONG_KIND.code)
    assert (d.span.start, d.span.end) == find(text, "Deterministic")


def test_a_declared_name_shadows_the_family() -> None:
    """`Flat` declared in the file is that declaration, as any family name is."""
    text = (
        "object X : Real 2\nobject Y : Real 1\n"
        "morphism Flat : X -> Y [role=kernel, param_source=linear, scale=0.1] ~ Normal\n\n"
        "program p : X -> Y\n    observe y : Y <- Flat\n    return y\n\nexport p\n"
    )
    module = check(text)
    assert module.ok, [(d.code, d.message) for d in module.diagnostics]
    assert "p" in module.programs and "p" not in module.models
