"""A step option written as a flag (`[over]`, no value): typed by the model checker, not
left names-only (QVR011). A flag of a key the step reads is dropped, with QVR315 (a
warning, and a fix that removes it); any other flag gets the diagnostic the valued
option would get there. What quivers computes for it: tests/conformance/test_step_flags.py."""

from __future__ import annotations

import pytest

from qvr_core.check import check
from qvr_core.text import rules
from qvr_core.text.diagnostics import Severity
from qvr_core.text.edits import apply_edits
from tests.check.helpers import only


def program(sample: str = "", observe: str = "") -> str:
    """A model of one latent over three rows; `sample` and `observe` are option blocks."""
    return (
        "object K : FinSet 3\n\n"
        "program p : K -> K\n"
        f"    sample mu <- Normal(0.0, 1.0){sample}\n"
        "    sample sigma <- HalfNormal(1.0)\n"
        f"    observe y : K <- Normal(mu, sigma){observe}\n"
        "    return mu\n\n"
        "export p\n"
    )


def mixture(marginalize: str = "", observe: str = "") -> str:
    """A two-component mixture summed out per row, the grouped form of quivers' guide."""
    return (
        "object C : FinSet 2\nobject Row : FinSet 6\n\n"
        "program mix : Row -> Row\n"
        "    sample w <- Dirichlet(1.0) [over=C]\n"
        "    sample mu : C <- Normal(0.0, 2.0)\n"
        f"    marginalize c : C <- Categorical(w) [over=Row{marginalize}]\n"
        f"        observe y : Row <- Normal(mu[c], 1.0){observe}\n"
        "    return mu\n\n"
        "export mix\n"
    )


def coded(text: str) -> list[tuple[str, Severity, str]]:
    """(code, severity, the text under the span) of each diagnostic."""
    return [(d.code, d.severity, text[d.span.start : d.span.end]) for d in check(text).diagnostics]


W = Severity.WARNING
E = Severity.ERROR


@pytest.mark.parametrize(
    ("text", "flag"),
    [
        (program(sample=" [over]"), "over"),
        (program(sample=" [iid_over]"), "iid_over"),
        (program(observe=" [over]"), "over"),
        (program(observe=" [iid_over]"), "iid_over"),
        (program(observe=" [via]"), "via"),  # no grouping marginalize: still only dropped
        (mixture(marginalize=", reduction"), "reduction"),
        (mixture(observe=" [via]"), "via"),
        (mixture(observe=" [iid_over]"), "iid_over"),
    ],
)
def test_a_flag_the_step_reads_is_typed_and_dropped_with_a_warning(text: str, flag: str) -> None:
    module = check(text)
    assert coded(text) == [(rules.OPTION_WITHOUT_VALUE.code, W, flag)]
    assert rules.NOT_CHECKED.code not in [d.code for d in module.diagnostics]
    assert set(module.models) == {"mix"} if "mix" in text else {"p"}
    d = only(module, rules.OPTION_WITHOUT_VALUE.code)
    assert f"[{flag}]" in d.message and f"{flag}=" in d.message


def test_the_program_is_the_one_without_the_flag() -> None:
    flagged, plain = check(program(" [iid_over]", " [over]")), check(program())
    assert [(s.name, s.kind, s.plates, s.over, s.type) for s in flagged.models["p"].sites] == [
        (s.name, s.kind, s.plates, s.over, s.type) for s in plain.models["p"].sites
    ]
    grouped, plain = check(mixture(", reduction", " [via]")), check(mixture())
    facts = [
        (s.name, s.plates, s.reduction, s.via, s.sums_exactly) for s in plain.models["mix"].sites
    ]
    assert [
        (s.name, s.plates, s.reduction, s.via, s.sums_exactly) for s in grouped.models["mix"].sites
    ] == facts


@pytest.mark.parametrize(
    ("text", "code", "under"),
    [
        (program(sample=" [ovr]"), rules.UNKNOWN_OPTION.code, "ovr"),
        (program(sample=" [via]"), rules.OPTION_NOT_APPLICABLE.code, "via"),
        (program(sample=" [reduction]"), rules.OPTION_NOT_APPLICABLE.code, "reduction"),
        (program(observe=" [reduction]"), rules.OPTION_NOT_APPLICABLE.code, "reduction"),
        (program(observe=" [constraint]"), rules.OPTION_NOT_APPLICABLE.code, "constraint"),
        (mixture(marginalize=", via"), rules.OPTION_NOT_APPLICABLE.code, "via"),
        (program(sample=" [constraint]"), rules.INVALID_OPTION_VALUE.code, "constraint"),
    ],
)
def test_a_flag_the_step_does_not_read_is_the_error_its_valued_option_is(
    text: str, code: str, under: str
) -> None:
    assert coded(text) == [(code, E, under)]


def test_an_unknown_flag_suggests_the_close_keys() -> None:
    d = only(check(program(sample=" [ovr]")), rules.UNKNOWN_OPTION.code)
    assert "'ovr'" in d.message
    assert [f.title for f in d.fixes] == ["Change to 'over'"]


def test_a_constraint_flag_offers_each_value() -> None:
    text = program(sample=" [constraint]")
    d = only(check(text), rules.INVALID_OPTION_VALUE.code)
    assert [f.title for f in d.fixes] == [
        "Change to constraint=ordered",
        "Change to constraint=positive_ordered",
    ]
    fixed = apply_edits(text, d.fixes[0].edits)
    assert "[constraint=ordered]" in fixed


def test_a_flag_given_twice_is_a_duplicate() -> None:
    text = program(sample=" [over, over]")
    assert [c for c, _, _ in coded(text)] == [
        rules.OPTION_WITHOUT_VALUE.code,
        rules.DUPLICATE_OPTION.code,
    ]


@pytest.mark.parametrize(
    ("written", "left"),
    [
        ("sample mu <- Normal(0.0, 1.0) [over]\n", "sample mu <- Normal(0.0, 1.0)\n"),
        ("sample mu <- Normal(0.0, 1.0) [ over ]\n", "sample mu <- Normal(0.0, 1.0)\n"),
        ("sample mu <- Normal(0.0, 1.0) [over, iid_over=K]\n", "[iid_over=K]\n"),
        ("sample mu <- Normal(0.0, 1.0) [iid_over=K, over]\n", "[iid_over=K]\n"),
    ],
)
def test_the_fix_removes_the_flag_and_leaves_a_clean_program(written: str, left: str) -> None:
    text = program().replace("sample mu <- Normal(0.0, 1.0)\n", written)
    d = only(check(text), rules.OPTION_WITHOUT_VALUE.code)
    (fix,) = d.fixes
    fixed = apply_edits(text, fix.edits)
    assert left in fixed
    assert check(fixed).diagnostics == ()
