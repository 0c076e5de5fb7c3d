"""The editor on QIEC computations: hover says what each declaration is (from the
checker's records), completion offers the module's constructors, handlers and
instances where QIEC names one, and signature help covers the module's computations
(static arguments written before the call) and the computations' own functions."""

from __future__ import annotations

import pytest

from qvr_core.check import check
from qvr_core.ide.completion import candidates
from qvr_core.ide.completion_context import Where, classify
from qvr_core.ide.hover import hover_at
from qvr_core.ide.signature import signature_help
from tests.conformance.test_qiec_computations import LISTENER, ROUNDING


@pytest.mark.parametrize(
    ("at", "words"),
    [
        ("Grain = Fine", "an index of 2: Fine | Coarse"),
        ("Reading[A : Type]", "Exactly : A -> Reading[A](Fine); Within : A * Int"),
        ("Hear[g : Grain]", "operations: reading : Int -> Reading[Int](g)"),
        ("tolerant for", "handles Hear[Coarse]: a body of Real gives Real; reading resumes any"),
        ("true_of[g", "a computation checked for each Grain g: takes r : Reading[Int](g)"),
        ("hear_ten(prior", "gives Tensor[Real]([5]); performs on nothing (pure)"),
    ],
)
def test_hover_says_what_the_checker_recorded(at: str, words: str) -> None:
    found = hover_at(check(ROUNDING), ROUNDING.index(at) + 1)
    assert found is not None and words in found.plain, found


@pytest.mark.parametrize(
    ("source", "probe", "where", "labels"),
    [
        (ROUNDING, "resume(construct ", Where.CONSTRUCTOR, {"Exactly", "Within"}),
        (ROUNDING, "handle heard with ", Where.HANDLER, {"tolerant", "literal"}),
        (LISTENER, "            perform ", Where.INSTANCE, {"random", "score"}),
    ],
)
def test_completion_offers_the_module_s_names_after_qiec_words(
    source: str, probe: str, where: Where, labels: set[str]
) -> None:
    offset = source.index(probe) + len(probe)
    context = classify(source, offset)
    assert context.where is where
    found = {c.label for c in candidates(context, [check(source)], 0)}
    assert found == labels


def test_signature_help_for_a_computation_with_static_arguments() -> None:
    probe = "true_of[Coarse](r, "
    offset = ROUNDING.index(probe) + len(probe)
    help_ = signature_help(ROUNDING, offset, check(ROUNDING))
    assert help_ is not None
    assert help_.signature.label == "true_of(r : Reading[Int](g), amount : Int) : Real"
    assert help_.active_parameter == 1


def test_signature_help_for_the_computations_functions() -> None:
    probe = "traverse(\n"
    offset = ROUNDING.index(probe) + len("traverse(")
    help_ = signature_help(ROUNDING, offset, check(ROUNDING))
    assert help_ is not None and help_.signature.label == "traverse(xs, f)"
