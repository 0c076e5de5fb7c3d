"""Residuated objects mean what quivers 0.25.2 makes of them.

Read from quivers (the 0.25.2 wheel): `dsl/compiler/declarations.py` (`_compile_type`,
`_is_residuated_expr`) records an object whose right-hand side has `/` or `\\` as a
pattern alias, unresolved, and builds `object Cat : FreeResiduated(Atoms, depth, ops)`
as `core/objects.py`'s `FreeResiduated`, whose values are the categories
`stochastic/categories.py`'s `CategorySystem.from_generators` enumerates: the atoms,
then per round every connective applied to the round before's categories, new ones
appended in order. The sizes and orders below are worked out by hand from that code;
the programs are our own, written like the guide's (`dsl-declarations.md`) and the
gallery's schema chart parser, and parsed by quivers' grammars.
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qvr_core.builtins.objects import RESIDUATED_CONNECTIVES
from qvr_core.check import check
from qvr_core.check.residuated import MAX_CATEGORIES, categories, closure_size
from qvr_core.ide.hover import hover_at
from tests.conformance import oracle

SOURCE = """object Atoms : {N, NP, S}
object Cat : FreeResiduated(Atoms)
object Wide : FreeResiduated(Atoms, depth=2, ops=[slash, product])

# A residuated pattern: an alias for schema patterns, not a set of values.
object Sentence : S \\ NP

object Reading : FinSet 2
morphism judge : Cat -> Reading [role=latent]
define m = judge
export m
"""


def test_quivers_grammars_parse_it() -> None:
    oracle.require_head(SOURCE)


def test_a_universe_is_a_finite_set_of_its_categories() -> None:
    module = check(SOURCE)
    assert [d.code for d in module.diagnostics] == ["QVR103", "QVR103"]  # Wide, Sentence
    judge = module.morphisms["judge"].type
    assert judge.label == "Cat -> Reading"
    cat = module.objects["Cat"]
    # the 3 atoms and, for each ordered pair, A/B and A\B: 3 + 2 x 9
    assert (cat.kind, cat.size) == ("finset", 21)
    # two rounds of slash and product: 3 + 3 x 9 = 30, then 3 x (30^2 - 3^2) more
    assert module.objects["Wide"].size == 30 + 3 * (30 * 30 - 9)


def test_the_categories_come_in_quivers_order_and_spelling() -> None:
    first = categories(("N", "NP", "S"), 1, ("slash",), 9)
    assert first == ["N", "NP", "S", "N/N", "N\\N", "N/NP", "N\\NP", "N/S", "N\\S"]
    deeper = categories(("A",), 2, ("slash", "product", "diamond"), 200)
    assert deeper[:5] == ["A", "A/A", "A\\A", "A⊗A", "◇A"]
    assert "(A/A)/A" in deeper and "A\\(A\\A)" in deeper  # a slash inside a slash
    assert "(A/A)⊗A" in deeper and "◇(A⊗A)" in deeper and "◇◇A" in deeper
    assert categories(("A", "B"), 1, ("unit",), 10) == ["A", "B", "I"]


@given(
    atoms=st.integers(1, 3),
    depth=st.integers(0, 2),
    ops=st.lists(st.sampled_from(RESIDUATED_CONNECTIVES), min_size=1, max_size=3, unique=True),
)
@settings(max_examples=60, deadline=None)
def test_the_counted_size_is_the_enumerated_one(atoms: int, depth: int, ops: list[str]) -> None:
    names = tuple(f"A{i}" for i in range(atoms))
    size = closure_size(atoms, depth, ops)
    assert size is not None
    assert size == len(categories(names, depth, tuple(ops), size + 1))


def test_hover_names_the_universe_and_the_pattern() -> None:
    module = check(SOURCE)
    cat = hover_at(module, SOURCE.index("Cat :") + 1)
    assert cat is not None
    assert "Cat = FinSet 21" in cat.plain
    assert "its categories: N, NP, S, N/N, N\\N" in cat.plain and "(21 in all)" in cat.plain
    pattern = hover_at(module, SOURCE.index("Sentence :") + 1)
    assert pattern is not None and "a residuated pattern" in pattern.plain


def test_a_pattern_is_refused_as_a_type_where_it_is_named() -> None:
    source = SOURCE.replace("morphism judge : Cat", "morphism judge : Sentence")
    errors = check(source).errors
    assert [d.code for d in errors] == ["QVR104"], errors
    assert errors[0].message.startswith("Sentence is a residuated pattern (S \\ NP)")
    assert errors[0].span.start == source.index("Sentence ->")


@pytest.mark.parametrize(
    ("written", "code", "says"),
    [
        ("FreeResiduated(Reading)", "QVR104", "must be an enumerated object"),
        ("FreeResiduated(Nowhere)", "QVR101", "Nowhere"),
        ("FreeResiduated(Atoms, ops=[slashes])", "QVR304", "not slashes"),
        ("FreeResiduated(Atoms, depth=-1)", "QVR001", "expected an integer"),
        ("FreeResiduated(Atoms, depth=4)", "QVR304", f"more than {MAX_CATEGORIES:,}"),
        ("FreeResiduated(Atoms, width=2)", "QVR303", "unknown option 'width'"),
    ],
)
def test_each_mistake_is_one_located_error(written: str, code: str, says: str) -> None:
    source = SOURCE.replace("FreeResiduated(Atoms)", written).replace(
        "object Reading : FinSet 2\n", ""
    )
    source = "object Reading : FinSet 2\n" + source
    found = [d for d in check(source).errors if d.code == code]
    assert found, check(source).errors
    assert says in found[0].message
    assert source.index(written) <= found[0].span.start < source.index(written) + len(written)


def test_a_large_universe_is_refused_before_it_is_enumerated() -> None:
    # 3 atoms, slash only: 21 at depth 1, 885 at depth 2, 1,566,885 at depth 3
    assert [closure_size(3, d, ("slash",)) for d in (1, 2)] == [21, 885]
    assert closure_size(3, 3, ("slash",)) is None
    assert all(
        closure_size(a, 1, ops) == a + 2 * a * a
        for a, ops in itertools.product((1, 2, 5), [("slash",)])
    )
