"""The editor on a step of quivers' measure algebra: hover, tokens and signature help
know the operators, the number families inside them and the bijections."""

from __future__ import annotations

from qvr_core.check import check
from qvr_core.ide.hover import hover_at
from qvr_core.ide.signature import signature_help
from qvr_core.ide.tokens import TokenType, semantic_tokens

SOURCE = """object Row : FinSet 3

program p : Row -> Row
    sample mu <- Normal(0.0, 1.0)
    observe y : Row <- Mixture([0.3, 0.7], [PointMass(0.0), Pushforward(Normal(mu, 1.0), Exp)])
    return mu

export p
"""


def _hover(word: str, nth: int = 0) -> str:
    at = -1
    for _ in range(nth + 1):
        at = SOURCE.index(word, at + 1)
    found = hover_at(check(SOURCE), at + 1)
    assert found is not None, word
    return found.plain


def test_hover_says_what_each_operator_family_and_bijection_is() -> None:
    assert "weights" in _hover("Mixture") and "Draws what the distributions" in _hover("Mixture")
    assert "All mass on one value" in _hover("PointMass")
    assert "loc" in _hover("Normal", nth=1)  # the family inside the pushforward
    assert "the reals onto the positive numbers" in _hover("Exp")


def test_the_operators_and_bijections_are_coloured_as_builtins() -> None:
    tokens = {SOURCE[t.span.start : t.span.end]: t.type for t in semantic_tokens(check(SOURCE))}
    assert tokens["Mixture"] is TokenType.FAMILY and tokens["PointMass"] is TokenType.FAMILY
    assert tokens["Exp"] is TokenType.BUILTIN_FUNCTION


def test_signature_help_inside_a_nested_distribution() -> None:
    module = check(SOURCE)
    inside = SOURCE.index("Normal(mu, 1.0)") + len("Normal(mu, ")
    help_ = signature_help(SOURCE, inside, module)
    assert help_ is not None and help_.signature.label == "Normal(loc, scale)"
    assert help_.active_parameter == 1
    outer = SOURCE.index("[PointMass")
    help_ = signature_help(SOURCE, outer + 1, module)
    assert help_ is not None and help_.signature.label == "Mixture(weights, components)"
    assert help_.active_parameter == 1
