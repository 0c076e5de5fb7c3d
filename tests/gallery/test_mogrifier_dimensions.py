"""The Mogrifier's dimensions are checked, including those its rank factors imply.

Each case edits `examples/mogrifier_rlstm_lm.qvr` the way a user could get
`Q` or `R` wrong and asserts the checker's diagnostic: its code, the exact
text it points at, and a message that names the dimensions involved. The
Mogrifier page quotes these messages; the last test keeps the page honest.
"""

from __future__ import annotations

import pytest

from qvr_core.check import check
from qvr_core.check.module import CheckedModule
from qvr_core.dsl import loads
from tests.gallery.pages import example_path, page_path

SOURCE = example_path("mogrifier_rlstm_lm").read_text(encoding="utf-8")

Q_DECL = "morphism mog_q : Hidden -> Embedded [role=kernel, param_source=linear, rank=8]"
R_DECL = "morphism mog_r : Embedded -> Hidden [role=kernel, param_source=linear, rank=8]"


def edit(*changes: tuple[str, str]) -> str:
    text = SOURCE
    for old, new in changes:
        assert text.count(old) == 1, f"the example no longer contains {old!r} exactly once"
        text = text.replace(old, new)
    return text


#: (id, edits, code, the text the diagnostic points at, its message)
CASES = [
    (
        "rank-too-large-for-Q",
        [(Q_DECL, Q_DECL.replace("rank=8", "rank=40"))],
        "QVR304",
        "40",
        "rank 40 of morphism mog_q must be below min(input 64, output 32) = 32 "
        "to be a low-rank factorisation",
    ),
    (
        "rank-as-wide-as-R",
        [(R_DECL, R_DECL.replace("rank=8", "rank=32"))],
        "QVR304",
        "32",
        "rank 32 of morphism mog_r must be below min(input 32, output 64) = 32 "
        "to be a low-rank factorisation",
    ),
    (
        "Q-right-factor-reads-the-wrong-space",
        [("morphism mog_q : Hidden -> Embedded", "morphism mog_q : Embedded -> Embedded")],
        "QVR201",
        "mog_q(h)",
        "cannot apply: h produces Hidden (64) but mog_q expects Embedded (32)",
    ),
    (
        "Q-left-factor-writes-the-wrong-space",
        [("morphism mog_q : Hidden -> Embedded", "morphism mog_q : Hidden -> Hidden")],
        "QVR207",
        "2 * sigmoid(q) * x",
        "cannot multiply 2 * sigmoid(q) (Hidden, R^64) and x (Embedded, R^32): "
        "arithmetic needs equal dimensions or a number",
    ),
    (
        "R-used-for-Q",
        [("sample q <- mog_q(h)", "sample q <- mog_r(h)")],
        "QVR201",
        "mog_r(h)",
        "cannot apply: h produces Hidden (64) but mog_r expects Embedded (32)",
    ),
    (
        "Q-and-R-swapped-in-the-round",
        # the second swap is not reported again: x_next has no type after the first
        [
            ("sample q <- mog_q(h)", "sample q <- mog_r(h)"),
            ("sample r <- mog_r(x_next)", "sample r <- mog_q(x_next)"),
        ],
        "QVR201",
        "mog_r(h)",
        "cannot apply: h produces Hidden (64) but mog_r expects Embedded (32)",
    ),
    (
        "Q-and-R-swapped-in-the-declarations",
        [
            ("morphism mog_q : Hidden -> Embedded", "morphism mog_q : Embedded -> Hidden"),
            ("morphism mog_r : Embedded -> Hidden", "morphism mog_r : Hidden -> Embedded"),
        ],
        "QVR201",
        "mog_q(h)",
        "cannot apply: h produces Hidden (64) but mog_q expects Embedded (32)",
    ),
    (
        "rank-without-a-linear-network",
        [(Q_DECL, Q_DECL.replace("param_source=linear, ", ""))],
        "QVR306",
        "rank=8",
        "option rank factorises a linear parameter network: add param_source=linear "
        "to morphism mog_q",
    ),
]

ROUND_HEADER = "program mog_round (x, h) : Embedded * Hidden -> Embedded * Hidden"


def only_error(module: CheckedModule):
    errors = module.errors
    assert len(errors) == 1, [f"{d.code} {d.message}" for d in errors]
    return errors[0]


@pytest.mark.parametrize(
    ("edits", "code", "at", "message"),
    [pytest.param(*case[1:], id=case[0]) for case in CASES],
)
def test_wrong_q_or_r_is_reported_with_its_dimensions(edits, code, at, message) -> None:
    text = edit(*edits)
    error = only_error(check(text))
    assert error.code == code
    assert text[error.span.start : error.span.end] == at
    assert error.message == message


def test_a_round_that_loses_the_input_cannot_be_repeated() -> None:
    text = edit((ROUND_HEADER, ROUND_HEADER.replace("-> Embedded * Hidden", "-> Hidden")))
    errors = {d.code: d for d in check(text).errors}
    assert set(errors) == {"QVR205", "QVR404"}
    assert text[errors["QVR205"].span.start : errors["QVR205"].span.end] == "mog_round"
    assert errors["QVR205"].message == (
        "repeat chains copies of its body, so the body must be A -> A, but mog_round has "
        "type Embedded * Hidden -> Hidden (R^(32+64) -> R^64)"
    )


def test_a_round_returning_its_pair_swapped_is_an_error() -> None:
    # (h_next, x_next) has the same total width (96) as the header's
    # Embedded * Hidden, but it is the same factors in another order: matching
    # by dimension would silently mix up the columns, so it is an error.
    text = edit(("return (x_next, h_next)", "return (h_next, x_next)"))
    for strict in (False, True):
        module = check(text, strict=strict)
        at_return = [
            d
            for d in module.diagnostics
            if text[d.span.start : d.span.end] == "return (h_next, x_next)"
        ]
        assert at_return, f"strict={strict}: nothing reported at the swapped return"
        message = at_return[0].message
        assert "Embedded * Hidden (32 + 64 = 96)" in message
        assert "Hidden * Embedded (64 + 32 = 96)" in message
        assert at_return[0].is_error
        assert "another order" in message


def test_the_dimension_errors_point_at_the_declarations_involved() -> None:
    text = edit(("sample q <- mog_q(h)", "sample q <- mog_r(h)"))
    error = only_error(check(text))
    related = {text[r.span.start : r.span.end] for r in error.related}
    assert {"Hidden", "Embedded"} <= related


def test_the_correct_cell_compiles_to_the_factor_shapes_the_rank_implies() -> None:
    model = loads(SOURCE).morphism
    shapes = {
        name.removeprefix("morphisms."): tuple(p.shape)
        for name, p in model.named_parameters()
        if name.startswith("morphisms.mog_")
    }
    assert shapes == {
        "mog_q.net.left": (32, 8),  # Q: Hidden (64) -> Embedded (32)
        "mog_q.net.right": (8, 64),
        "mog_q.net.bias": (32,),
        "mog_r.net.left": (64, 8),  # R: Embedded (32) -> Hidden (64)
        "mog_r.net.right": (8, 32),
        "mog_r.net.bias": (64,),
    }


def test_the_page_quotes_the_messages_the_checker_gives() -> None:
    page = page_path("mogrifier_rlstm_lm").read_text(encoding="utf-8")
    for case in CASES:
        assert case[4] in page, f"the Mogrifier page does not quote: {case[4]}"
