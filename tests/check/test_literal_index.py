"""A number as an index in a model's arithmetic: `beta[0] + beta[1] * mom_iq`.

QVR counts from 0. `beta[0]` of `beta : Coef` picks one entry and drops Coef's axis;
an index into a value over several plates keeps the others; numbers past the plates
pick entries of one draw (`w[0]` of a simplex). A negative, non-whole or out-of-range
number is a located QVR409 that gives the plate's size.
"""

from __future__ import annotations

import pytest

from qvr_core.check import check
from qvr_core.check.model import Let
from qvr_core.check.terms import Gather, Num, subterms
from qvr_core.ide.hover import hover_at
from tests.check.helpers import find, only
from tests.models import regressions

KIDIQ = regressions.kid(5)


def _program(lets: str) -> str:
    return (
        "object Coef : FinSet 2\nobject Group : FinSet 3\nobject K : FinSet 3\n"
        "object Row : FinSet 5\n\n"
        "program p : Row -> Row\n"
        "    sample beta : Coef <- Normal(0.0, 10.0)\n"
        "    sample theta : Group * Coef <- Normal(0.0, 1.0)\n"
        "    sample w : K <- Dirichlet(1.0)\n"
        f"{lets}"
        "    observe y : Row <- Normal(0.0, 1.0)\n"
        "    return beta\n\nexport p\n"
    )


def _let(text: str, name: str) -> Let:
    module = check(text)
    model = module.models["p"]
    return next(s for s in model.steps if isinstance(s, Let) and s.name == name)


def test_a_regression_with_literal_indices_is_a_checked_model() -> None:
    module = check(KIDIQ)
    assert module.diagnostics == ()  # no QVR011: the program is typed, and runs
    model = module.models["kid"]
    (mu,) = [s for s in model.steps if isinstance(s, Let)]
    assert mu.uses == ("beta", "mom_iq")
    assert mu.type is not None and mu.type.label == "rows -> R"
    gathers = [t for t in subterms(mu.term) if isinstance(t, Gather)]
    assert [(g.base, g.plates) for g in gathers] == [("beta", ("Coef",)), ("beta", ("Coef",))]
    indices = [i for g in gathers for i in g.indices]
    assert [i.value if isinstance(i, Num) else i for i in indices] == [0.0, 1.0]


def test_an_entry_is_a_number_and_hover_shows_the_let_s_type() -> None:
    text = _program("    let b0 = beta[0]\n    let total = b0 + beta[1]\n")
    module = check(text)
    assert [d.code for d in module.diagnostics if d.code != "QVR103"] == []
    b0 = _let(text, "b0")
    assert b0.type is not None and b0.type.label == "R"
    start, _ = find(text, "b0")
    hover = hover_at(module, start)
    assert hover is not None and "local b0 : R" in hover.plain
    start, end = find(text, "beta[1]")
    typed = module.type_at(start + 1)
    assert typed is not None and typed.span.start == start and typed.span.end == end


def test_an_index_into_a_value_with_plates_keeps_the_others() -> None:
    text = _program(
        "    let first = theta[0]\n    let row = theta[Group, 1]\n    let one = theta[2, 1]\n"
    )
    assert [d.code for d in check(text).diagnostics if d.code != "QVR103"] == []
    first, row, one = (_let(text, n) for n in ("first", "row", "one"))
    assert first.type is not None and first.type.label == "Coef -> R"
    assert row.type is not None and row.type.label == "Group -> R"
    assert one.type is not None and one.type.label == "R"


def test_a_number_past_the_plates_picks_an_entry_of_one_draw() -> None:
    text = _program("    let w0 = w[0]\n")
    assert [d.code for d in check(text).diagnostics if d.code != "QVR103"] == []
    w0 = _let(text, "w0")
    assert w0.type is not None and w0.type.element.kind == "unit_interval"
    assert w0.type.plates == () and w0.type.element.event == ()


@pytest.mark.parametrize(
    ("let", "index", "words"),
    [
        ("let a = beta[2]", "2", ["beta[2] is out of range", "Coef has 2 entries, indexed 0..1"]),
        ("let a = beta[-1]", "-1", ["cannot be negative", "Coef has 2 entries, indexed 0..1"]),
        ("let a = beta[0.5]", "0.5", ["whole number", "Coef has 2 entries"]),
        ("let a = beta[1.0]", "1.0", ["whole number", "Coef has 2 entries"]),
        ("let a = theta[3, 0]", "3", ["theta[3] is out of range", "Group has 3 entries"]),
        ("let a = theta[0, 2]", "2", ["theta[2] is out of range", "Coef has 2 entries"]),
        ("let a = w[3]", "3", ["w[3] is out of range", "K has 3 entries, indexed 0..2"]),
    ],
)
def test_an_index_outside_the_plate_is_located_with_its_size(
    let: str, index: str, words: list[str]
) -> None:
    text = _program(f"    {let}\n")
    module = check(text)
    found = only(module, "QVR409")
    for w in words:
        assert w in found.message, found.message
    start, end = find(text, index, within=let)
    assert (found.span.start, found.span.end) == (start, end)
    assert "QVR011" not in [d.code for d in module.diagnostics]


def test_more_numbers_than_axes_is_an_error() -> None:
    text = _program("    let a = beta[0, 1]\n")
    found = only(check(text), "QVR409")
    assert "beta : Coef -> R has 1 axis to index, not 2" in found.message
    start, end = find(text, "beta[0, 1]")
    assert (found.span.start, found.span.end) == (start, end)


def test_an_index_computed_by_arithmetic_is_still_not_checked() -> None:
    text = _program("    let a = beta[1 - 1]\n")
    notes = [d.message for d in check(text).diagnostics if d.code == "QVR011"]
    assert notes == ["program p (its expressions) is not checked yet (names only)"]


def test_a_number_into_rows_only_the_data_sizes_is_a_runtime_gap() -> None:
    """`X * beta` leads with the data's rows, which the checker does not place among the
    plates: a number there is refused with the line, never run on a guess."""
    text = _program("    let terms = X * beta\n    let t = terms[0]\n")
    module = check(text)
    assert [d.code for d in module.diagnostics if d.code != "QVR103"] == []
    gaps = module.models["p"].runtime_gaps
    assert len(gaps) == 1 and gaps[0].startswith("line 11: terms[0] indexes terms")
