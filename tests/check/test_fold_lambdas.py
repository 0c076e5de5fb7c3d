"""quivers' `fold(xs, init, acc -> x -> body)` and lambdas bound by a let, in a model's
let: the fold's value has init's type, its parameters the accumulator's and one entry's;
a let-bound lambda is read only as map's or fold's function; each misuse is a located
error (tests/conformance/test_fold_lambdas.py pins what quivers computes)."""

from __future__ import annotations

import pytest

from qvr_core.check import check
from qvr_core.check.subsample import Refusal, subsample_plan
from qvr_core.ide.hover import hover_at

BASE = """object T : FinSet 4
object K : FinSet 3

program m : K -> K
    sample s <- Normal(0.0, 1.0)
    sample mu : K <- Normal(0.0, 1.0)
    sample grid : T * K <- Normal(0.0, 1.0)
    let f = acc -> x -> s * acc + x
    let g = x -> x - 1.0
    let ys = BODY
    let total = sum(ys)
    observe y : K <- Normal(total, 0.5)
    return ys

export m
"""


def _source(body: str) -> str:
    return BASE.replace("BODY", body)


@pytest.mark.parametrize(
    ("body", "plates"),
    [
        ("fold(grid, mu, f)", ("K",)),
        ("fold(grid, mu, acc -> x -> acc * x)", ("K",)),
        ("fold(mu, 0.0, acc -> x -> acc + x * s)", ()),
        ("fold(grid, 0.0, acc -> x -> acc + sum(x))", ()),
        ("map(mu, g)", ("K",)),
        ("fold(grid, mu, acc -> x -> map(x, g) + acc)", ("K",)),
    ],
)
def test_the_value_has_inits_type(body: str, plates: tuple[str, ...]) -> None:
    source = _source(body)
    checked = check(source)
    assert checked.ok, checked.diagnostics
    assert not [d for d in checked.diagnostics if d.code == "QVR011"]
    ys = checked.models["m"].lets["ys"].type
    assert ys is not None
    assert tuple(p.name for p in ys.plates) == plates


@pytest.mark.parametrize(
    ("body", "code", "where", "words"),
    [
        ("fold(grid, mu, s)", "QVR104", "s)", "acc -> x -> body"),
        ("fold(grid, mu, g)", "QVR104", "g)", "one parameter"),
        ("fold(grid, mu, x -> x)", "QVR104", "x -> x", "curried"),
        ("fold(grid, mu)", "QVR406", "fold(grid, mu)", "3 values"),
        ("fold(s, 0.0, f)", "QVR207", "s, 0.0", "no plate"),
        ("fold(grid + 1.0, mu, f)", "QVR104", "grid + 1.0", "name"),
        ("fold(grid, 0.0, f)", "QVR207", "s * acc + x", "init's type"),
        ("fold(grid, mu, acc -> x -> sum(acc))", "QVR207", "sum(acc)", "K -> R"),
        ("map(mu, f)", "QVR104", "f)", "a parameter more"),
        ("fold(grid, mu, acc -> x -> y -> x)", "QVR104", "y -> x", "a parameter more"),
        ("g + 1.0", "QVR104", "g +", "lambda bound by a let"),
    ],
)
def test_each_misuse_is_an_error_where_it_is_written(
    body: str, code: str, where: str, words: str
) -> None:
    source = _source(body)
    errors = check(source).errors
    assert [d.code for d in errors] == [code], errors
    text = source if where not in body else body
    at = source.index(where) if text is source else source.index(body) + body.index(where)
    assert errors[0].span.start == at, (errors[0].span, at)
    assert words in errors[0].message


def test_a_let_bound_lambda_is_no_value_of_the_model_and_hover_says_it_is_a_lambda() -> None:
    source = _source("map(mu, g)")
    checked = check(source)
    model = checked.models["m"]
    assert "g" not in model.lets and "f" not in model.lets
    shown = hover_at(checked, source.index("let g") + 4)
    assert shown is not None
    assert "lambda x -> x - 1.0" in shown.plain
    assert "not a value" in shown.plain


def test_a_lambda_no_map_or_fold_reads_is_unused() -> None:
    checked = check(_source("map(mu, x -> x)"))
    unused = [d for d in checked.diagnostics if d.code == "QVR103"]
    assert sorted(checked.source[d.span.start : d.span.end] for d in unused) == ["f", "g"]


def test_fold_and_map_are_builtins_of_the_editor() -> None:
    source = _source("fold(grid, mu, f)")
    checked = check(source)
    shown = hover_at(checked, source.index("fold(grid") + 1)
    assert shown is not None
    assert "fold(xs, init, f)" in shown.plain and "left fold" in shown.plain


ALONG = """object T : FinSet 4

program q : T -> T
    sample mu : T <- Normal(0.0, 1.0)
    let last = fold(mu, 0.0, a -> x -> 0.5 * a + x)
    let m = mu + last
    observe z : T <- Normal(m, 1.0)
    return m

export q
"""


def test_subsampling_the_plate_a_fold_runs_along_is_refused() -> None:
    """Its value drops the plate it runs along, so the rule for a value that reduces over
    the plate's rows refuses it first, at the fold's line."""
    refused = subsample_plan(check(ALONG), "q", "T")
    assert isinstance(refused, Refusal), refused
    assert "T's rows" in refused.message and refused.line == 5


def test_subsampling_a_plate_of_a_value_a_fold_reads_is_refused() -> None:
    source = _source("fold(grid, mu, f)")
    refused = subsample_plan(check(source), "m", "K")
    assert isinstance(refused, Refusal), refused
    assert "`fold`" in refused.message
    assert refused.line == source[: source.index("let ys")].count("\n") + 1
