"""Completion candidates in the core: by context, from the checked modules' symbols."""

from __future__ import annotations

from qvr_core.check import check
from qvr_core.check.module import SymbolKind
from qvr_core.ide.completion import Word, candidates
from qvr_core.ide.completion_context import Context, Where

TEXT = """object A : Real 2
object B : Real 2
morphism f : A -> B
morphism g : B -> A
let h = f >> g
program p (x) : A -> B
    sample y <- f(x)
    return y
"""
MODULE = check(TEXT)


def labels(context: Context, cursor_line: int = 0, modules=None) -> dict[str, object]:
    return {c.label: c.kind for c in candidates(context, modules or [MODULE], cursor_line)}


def test_a_type_position_offers_the_objects() -> None:
    assert labels(Context(Where.TYPE)) == {"A": SymbolKind.OBJECT, "B": SymbolKind.OBJECT}


def test_a_let_expression_offers_combinators_and_callables_but_not_itself() -> None:
    found = labels(Context(Where.LET_EXPR, declaring="h"))
    assert found["fan"] is Word.COMBINATOR and found["f"] is SymbolKind.MORPHISM
    assert "h" not in found and "A" not in found


def test_bound_names_are_those_above_the_cursor() -> None:
    at_sample = labels(Context(Where.BOUND, program="p"), cursor_line=6)
    assert set(at_sample) == {"x"}
    at_return = labels(Context(Where.BOUND, program="p"), cursor_line=7)
    assert set(at_return) == {"x", "y"}


def test_names_of_an_earlier_analysis_are_offered_once() -> None:
    older = check(TEXT + "object C : Real 3\n")
    found = candidates(Context(Where.TYPE), [MODULE, older], 0)
    assert sorted(c.label for c in found) == ["A", "B", "C"]


def test_option_keys_already_given_are_not_offered_again() -> None:
    found = labels(Context(Where.OPTION_KEY, present=("role",)))
    assert "role" not in found and "scale" in found
    assert all(kind is Word.OPTION for kind in found.values())


RELATIONS = """composition product_fuzzy [level=algebra]
object A : FinSet 3
object B : FinSet 4
morphism f : A -> B [role=latent]
define pipe = softmax(B) >>> expectation
define g = f.change_base(pipe)
export g
"""


def test_a_change_of_base_offers_the_transformations_and_the_lets_bound_to_one() -> None:
    from qvr_core.ide.completion_context import classify

    module = check(RELATIONS)
    for probe in ("f.change_base(", "softmax(B) >>> "):
        at = RELATIONS.index(probe) + len(probe)
        context = classify(RELATIONS, at)
        assert context.where is Where.TRANSFORMATION
        found = {c.label: c for c in candidates(context, [module], 0)}
        assert found["expectation"].kind is Word.TRANSFORMATION
        assert found["softmax"].insert == "softmax("
        assert ("pipe" in found) == (probe == "f.change_base(")
    at = RELATIONS.index("softmax(") + len("softmax(")
    assert classify(RELATIONS, at).where is Where.TYPE


def test_a_measure_operators_arguments_offer_the_distributions_and_its_bijections() -> None:
    """Inside `Mixture(...)`, `Restrict(...)`, `Pushforward(...)` an argument is a
    distribution: the families (number families and operators), and for a pushforward
    the bijections it takes; a number family's own arguments offer no families."""
    mixture = labels(Context(Where.BOUND, "", "p", callee="Mixture"))
    assert mixture.get("Poisson") is Word.FAMILY and mixture.get("PointMass") is Word.FAMILY
    assert "weights=" in mixture and "Exp" not in mixture
    pushed = labels(Context(Where.BOUND, "", "p", callee="Pushforward"))
    assert pushed.get("Exp") is Word.FUNCTION and pushed.get("Normal") is Word.FAMILY
    assert "Poisson" not in labels(Context(Where.BOUND, "", "p", callee="Normal"))
