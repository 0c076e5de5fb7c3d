"""Families on morphisms, as the registry describes them: which codomains each fits, the
QVR302 quick fixes, and the rule that a family fits a Real object holding its values."""

from __future__ import annotations

import itertools

import pytest
import torch

from qvr_core.builtins import FAMILIES, KERNEL_FAMILIES
from qvr_core.check import check
from qvr_core.text import rules
from qvr_core.text.edits import apply_edits

OBJECTS = {
    "Coin": "FinSet 2",
    "Die": "FinSet 6",
    "Loc": "Real 3",
    "Rate": "Positive 2",
    "Gate": "Unit 2",
    "Mix": "Simplex 3",
}
CODOMAINS = [*OBJECTS, *(f"{a} * {b}" for a, b in itertools.combinations(OBJECTS, 2)), "Die * Die"]


def _source(cod: str, family: str) -> str:
    objects = "".join(f"object {n} : {t}\n" for n, t in OBJECTS.items())
    return f"{objects}morphism head : Loc -> {cod} [role=kernel] ~ {family}\n"


def _family_errors(text: str) -> list:
    return [d for d in check(text).diagnostics if d.code == "QVR302"]


def test_categorical_on_a_product_of_finsets_checks_and_runs() -> None:
    """The drift: the runtime draws one categorical per FinSet factor, and the checker
    used to refuse it with a 'Change to Categorical' fix that changed nothing."""
    from qvr_core.dsl import loads

    text = _source("Die * Coin", "Categorical") + (
        "program p : Loc -> Die * Coin\n    sample y <- head\n    return y\n\nexport p\n"
    )
    assert [d for d in check(text).diagnostics if d.severity.value == "error"] == []
    model = loads(text).morphism
    y = model.rsample(torch.randn(4, 3))
    assert y.shape == (4, 2) and y.dtype == torch.int64
    assert int(y[:, 0].max()) < 6 and int(y[:, 1].max()) < 2


@pytest.mark.parametrize("cod", CODOMAINS)
@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_a_family_fix_changes_the_family_and_clears_the_error(cod: str, family: str) -> None:
    text = _source(cod, family)
    for d in _family_errors(text):
        for fix in d.fixes:
            (edit,) = fix.edits
            assert edit.new_text != family, f"{fix.title} changes nothing"
            fixed = apply_edits(text, fix.edits)
            assert _family_errors(fixed) == [], f"{cod} ~ {family}: {fix.title} did not fix it"


@pytest.mark.parametrize("cod", CODOMAINS)
def test_every_codomain_with_one_kind_has_a_fitting_family(cod: str) -> None:
    kinds = {OBJECTS[n.strip()].split()[0] for n in cod.split("*")}
    fitting = [f for f in KERNEL_FAMILIES if not _family_errors(_source(cod, f))]
    if len(kinds) == 1 or "FinSet" not in kinds:
        assert fitting, cod
    else:
        assert fitting == [], cod  # a FinSet beside a continuous factor: split the codomain


@pytest.mark.parametrize(
    ("family", "fits"),
    [
        ("Normal", {"Loc"}),
        ("LogNormal", {"Loc", "Rate"}),
        ("LogitNormal", {"Loc", "Rate", "Gate"}),
        ("Dirichlet", {"Loc", "Rate", "Gate", "Mix"}),
        ("Categorical", {"Coin", "Die"}),
        ("Bernoulli", {"Coin"}),
        ("Deterministic", {"Loc", "Rate", "Gate", "Mix"}),
        ("Gamma", {"Loc", "Rate"}),
        ("Beta", {"Loc", "Rate", "Gate"}),
        ("StudentT", {"Loc"}),
    ],
)
def test_a_family_fits_the_objects_that_hold_its_values(family: str, fits: set[str]) -> None:
    """quivers accepts `~ LogNormal`, `~ LogitNormal` and `~ Dirichlet` on Real objects:
    every draw is a value of the object. The same containment gives the rest."""
    found = {o for o in OBJECTS if not _family_errors(_source(o, family))}
    assert found == fits


def test_a_family_without_a_morphism_form_is_refused_with_the_fitting_one() -> None:
    (d,) = _family_errors(_source("Loc", "LogisticNormal"))
    assert "LogisticNormal cannot be the family of morphism head" in d.message
    assert [f.title for f in d.fixes] == ["Change to 'Normal'"]


def test_a_count_family_fits_no_object_yet() -> None:
    (d,) = _family_errors(_source("Die", "Poisson"))
    assert "Poisson cannot be the family of morphism head" in d.message


def test_bernoulli_needs_two_values_and_suggests_categorical() -> None:
    (d,) = _family_errors(_source("Die", "Bernoulli"))
    assert d.message.startswith("Bernoulli needs a FinSet 2 codomain")
    assert [f.title for f in d.fixes] == ["Change to 'Categorical'"]


def test_a_mixed_codomain_gets_no_fix_that_cannot_work() -> None:
    (d,) = _family_errors(_source("Die * Loc", "Normal"))
    assert d.fixes == ()
    assert "split the codomain" in d.message


def test_rank_counts_the_logits_of_every_factor() -> None:
    """The parameter network of a Categorical over Die * Coin outputs 6 + 2 logits."""
    objects = "object Wide : Real 16\nobject Die : FinSet 6\nobject Coin : FinSet 2\n"
    head = (
        "morphism head : Wide -> Die * Coin [role=kernel, param_source=linear, rank={}] "
        "~ Categorical\n"
    )
    code = rules.INVALID_OPTION_VALUE.code
    assert not [d for d in check(objects + head.format(7)).diagnostics if d.code == code]
    (d,) = [d for d in check(objects + head.format(8)).diagnostics if d.code == code]
    assert "output 8" in d.message
