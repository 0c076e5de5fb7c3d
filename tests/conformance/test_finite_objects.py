"""Coproducts and free monoids of finite sets are the finite sets quivers 0.25.2 builds.

Read from quivers (the 0.25.2 wheel): `core/objects.py` makes `X + Y` over finite sets a
`CoproductSet` of |X| + |Y| elements and `FreeMonoid(X, max_length=n)` the coproduct
`Unit + X + ... + X^n` (its `size` is the sum of the components'), and
`dsl/compiler/declarations.py` (`_compile_type_named`) refuses generators that are no
finite set. The sizes below are worked out by hand; the programs are our own, written
like the guide's (`dsl.md`) and parsed by quivers' grammars.
"""

from __future__ import annotations

import pytest

from qvr_core.check import check
from qvr_core.ide.hover import hover_at
from tests.conformance import oracle

SOURCE = """object Letter : {a, b, c}
object Digit : FinSet 10
object Symbol : Letter + Digit
object Word : FreeMonoid(Letter, max_length=3)
object Either : Symbol + Word

object Label : FinSet 2
morphism classify : Either -> Label [role=latent]
define m = classify
export m
"""


def test_quivers_grammars_parse_it() -> None:
    oracle.require_head(SOURCE)


def test_each_is_a_finite_set_of_its_size() -> None:
    module = check(SOURCE)
    assert [d.code for d in module.diagnostics] == []
    assert module.objects["Symbol"].size == 3 + 10
    assert module.objects["Word"].size == 1 + 3 + 9 + 27  # words of length 0 to 3
    assert module.objects["Either"].size == 13 + 40
    assert module.morphisms["classify"].type.label == "Either -> Label"


def test_hover_says_how_it_is_made() -> None:
    module = check(SOURCE)
    shown = hover_at(module, SOURCE.index("object Word") + len("object "))
    assert shown is not None and "40 words of length 0 to 3" in shown.plain


@pytest.mark.parametrize(
    ("before", "after", "code", "says"),
    [
        ("Letter + Digit", "Letter + Symbol", "QVR105", "made of itself"),
        ("FreeMonoid(Letter, max_length=3)", "FreeMonoid(Letter)", "QVR304", "max_length"),
        ("object Digit : FinSet 10", "object Digit : Real 10", "QVR011", "Real 10"),
        ("FreeMonoid(Letter,", "FreeMonoid(Digit2,", "QVR101", "'Digit2'"),
        ("max_length=3", "max_length=40", "QVR304", "more than 2,147,483,647"),
    ],
)
def test_what_quivers_refuses_is_reported(before: str, after: str, code: str, says: str) -> None:
    found = [(d.code, d.message) for d in check(SOURCE.replace(before, after)).diagnostics]
    assert any(c == code and says in m for c, m in found), found
