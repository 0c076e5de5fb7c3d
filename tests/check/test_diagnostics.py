"""Each diagnostic code: its exact range (the narrowest that shows the problem) and message."""

from __future__ import annotations

from pathlib import Path

import pytest

from qvr_core.check import check
from qvr_core.text.diagnostics import Severity
from tests.check.helpers import find, only

ERRORS = Path(__file__).resolve().parents[2] / "examples" / "errors"

# file -> (code, the text the range covers, a line that contains it, the message)
CASES = {
    "QVR001_syntax_error.qvr": (
        "QVR001",
        "Embedded",
        "morphism tok_embed",
        "expected '->' after the domain of morphism tok_embed, found name 'Embedded'",
    ),
    "QVR101_undefined_name.qvr": (
        "QVR101",
        "cel",
        "scan(cel)",
        "undefined name 'cel': did you mean 'cell'?",
    ),
    "QVR102_duplicate.qvr": (
        "QVR102",
        "Hidden",
        "object Hidden : Real 64",
        "'Hidden' is already declared on line 3",
    ),
    "QVR103_unused.qvr": (
        "QVR103",
        "Spare",
        "object Spare",
        "object Spare is declared but never used",
    ),
    "QVR201_dimension_mismatch.qvr": (
        "QVR201",
        "combine",
        ">> combine",
        "cannot compose: fan(forward_path, backward_path) produces FwdHidden * BwdHidden "
        "(64 + 64 = 128) but combine expects Combined (96)",
    ),
    "QVR202_discrete_continuous.qvr": (
        "QVR202",
        "lm_head",
        ">> lm_head",
        "cannot compose: lm_head produces Token (FinSet 256), a discrete value, but lm_head "
        "expects Hidden (R^128), a continuous one",
    ),
    "QVR203_matched_by_dimension.qvr": (
        "QVR203",
        "lm_head",
        ">> lm_head",
        "matched by dimension, not by name: encode produces Features (128) and lm_head "
        "expects Hidden (128)",
    ),
    "QVR204_bad_scan_cell.qvr": (
        "QVR204",
        "cell",
        "scan(cell)",
        "the scan cell must have the form A * H -> H (per-step input, then the state), but "
        "cell : Embedded * Hidden -> Embedded ends its input with Hidden (R^128) where the "
        "state Embedded (R^64) should be",
    ),
    "QVR205_bad_stack_body.qvr": (
        "QVR205",
        "embed",
        "stack(embed",
        "stack chains copies of its body, so the body must be A -> A, but embed has type "
        "Token -> Hidden (FinSet 256 -> R^128)",
    ),
    "QVR206_fan_domains.qvr": (
        "QVR206",
        "tag_embed",
        "fan(tok_embed, tag_embed)",
        "fan branches must take the same input, but tok_embed takes Token (FinSet 256); "
        "tag_embed takes Tag (FinSet 12)",
    ),
    "QVR207_arithmetic_dimensions.qvr": (
        "QVR207",
        "w + x",
        "let y",
        "cannot add w (Wide, R^64) and x (Narrow, R^32): arithmetic needs equal dimensions "
        "or a number",
    ),
    "QVR301_missing_role.qvr": (
        "QVR301",
        "tok_embed",
        "morphism tok_embed",
        "morphism tok_embed has no role: add [role=embed] (roles are discretize, embed, kernel, "
        "latent)",
    ),
    "QVR302_wrong_family.qvr": (
        "QVR302",
        "Categorical",
        "~ Categorical",
        "Categorical needs a FinSet codomain, but morphism head has codomain Hidden "
        "(R^128): use ~ Normal",
    ),
    "QVR401_unbound_variable.qvr": (
        "QVR401",
        "hidden",
        "lm_head(hidden)",
        "unbound variable 'hidden' in program lm: did you mean 'h'?",
    ),
    "QVR501_no_export.qvr": (
        "QVR501",
        "lm",
        "program lm",
        "no export: add `export lm` so that load() knows which program to return",
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_range_and_message(name: str) -> None:
    code, covered, within, message = CASES[name]
    text = (ERRORS / name).read_text()
    d = only(check(text), code)
    start, end = find(text, covered, within=within)
    assert (d.span.start, d.span.end) == (start, end)
    assert d.message == message


def test_mismatch_points_at_every_object_involved() -> None:
    text = (ERRORS / "QVR201_dimension_mismatch.qvr").read_text()
    d = only(check(text), "QVR201")
    assert [r.message for r in d.related] == [
        "FwdHidden is declared here as Real 64",
        "BwdHidden is declared here as Real 64",
        "Combined is declared here as Real 96",
    ]


def test_duplicate_relates_to_the_first_declaration() -> None:
    text = (ERRORS / "QVR102_duplicate.qvr").read_text()
    d = only(check(text), "QVR102")
    assert d.related[0].span.start == find(text, "Hidden", within="object Hidden : Real 128")[0]


def test_unused_is_a_faded_hint() -> None:
    d = only(check((ERRORS / "QVR103_unused.qvr").read_text()), "QVR103")
    assert d.severity is Severity.HINT and d.unnecessary


def test_no_export_is_a_warning() -> None:
    d = only(check((ERRORS / "QVR501_no_export.qvr").read_text()), "QVR501")
    assert d.severity is Severity.WARNING


def test_syntax_error_does_not_hide_later_checks() -> None:
    text = (
        (ERRORS / "QVR101_undefined_name.qvr")
        .read_text()
        .replace("object Token : FinSet 256", "object Token FinSet 256")
    )
    found = [d.code for d in check(text).diagnostics]
    assert "QVR001" in found and "QVR101" in found


SWAPPED = """object A : Real 2
object B : Real 3
morphism f : A * B -> A [role=kernel, scale=0.1] ~ Normal
morphism g : B * A -> B * A [role=kernel, scale=0.1] ~ Normal

let wrong = g >> f

program swap (a, b) : A * B -> A * B
    return (b, a)

export wrong
export swap
"""


def test_the_same_factors_in_another_order_are_an_error_not_a_match_by_dimension() -> None:
    module = check(SWAPPED)
    compose, ret = (d for d in module.diagnostics if d.code == "QVR209")
    assert compose.message == (
        "cannot compose: g produces B * A (3 + 2 = 5) but f expects A * B (2 + 3 = 5): "
        "the same factors in another order, which would mix up their columns"
    )
    assert SWAPPED[ret.span.start : ret.span.end] == "return (b, a)"
    assert "another order" in ret.message
    assert not [d for d in module.diagnostics if d.code == "QVR203"]


def test_arithmetic_mismatch_points_at_both_declarations() -> None:
    text = (ERRORS / "QVR207_arithmetic_dimensions.qvr").read_text()
    d = only(check(text), "QVR207")
    assert [r.message for r in d.related] == [
        "Wide is declared here as Real 64",
        "Narrow is declared here as Real 32",
    ]
