"""quivers' `map(xs, x -> body)` in a model's let is typed: its value is over xs's first
plate, then the body's own, the parameter a value over xs's other plates; each misuse is
a located error (tests/conformance/test_map_lambdas.py pins what quivers computes)."""

from __future__ import annotations

import pytest

from qvr_core.check import check

BASE = """object N : FinSet 4
object K : FinSet 3

program m : N -> N
    sample s <- Normal(0.0, 1.0)
    sample mu : N <- Normal(0.0, 1.0)
    let grid = factor i : N, k : K in mu[i] + s * k
    let ys = BODY
    let total = sum(ys)
    observe y : N <- Normal(total, 0.5)
    return ys

export m
"""


def _source(body: str) -> str:
    return BASE.replace("BODY", body)


def test_a_map_over_a_plate_is_typed_and_not_names_only() -> None:
    checked = check(_source("map(mu, x -> x - 1.0)"))
    assert checked.ok, checked.diagnostics
    assert not [d for d in checked.diagnostics if d.code == "QVR011"]


@pytest.mark.parametrize(
    ("body", "plates"),
    [
        ("map(mu, x -> x - 1.0)", ("N",)),
        ("map(grid, r -> r[1] + s)", ("N",)),
        ("map(grid, r -> r * 2.0)", ("N", "K")),
    ],
)
def test_the_value_is_over_the_first_plate_then_the_bodys(
    body: str, plates: tuple[str, ...]
) -> None:
    checked = check(_source(body))
    assert checked.ok, checked.diagnostics
    ys = checked.models["m"].lets["ys"].type
    assert ys is not None
    assert tuple(p.name for p in ys.plates) == plates


@pytest.mark.parametrize(
    ("body", "code", "where", "words"),
    [
        ("map(mu, s)", "QVR104", "s)", "lambda"),
        ("map(s, x -> x)", "QVR207", "s, x", "no plate"),
        ("map(mu, x -> x + mu)", "QVR207", "x + mu", "N twice"),
        ("map(mu, x -> x[0])", "QVR409", "x[0]", "axes"),
        ("map(mu)", "QVR406", "map(mu)", "2 values"),
        ("map(mu + 1.0, x -> x)", "QVR104", "mu + 1.0", "name"),
    ],
)
def test_each_misuse_is_an_error_where_it_is_written(
    body: str, code: str, where: str, words: str
) -> None:
    source = _source(body)
    errors = check(source).errors
    assert [d.code for d in errors] == [code], errors
    at = source.index(body) + body.index(where)
    assert errors[0].span.start == at
    assert words in errors[0].message
