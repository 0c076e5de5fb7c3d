"""The editor reads the composition rules from the registry: hover on `composition NAME`
shows the rule's operations, completion after `composition ` offers the rules."""

from __future__ import annotations

from qvr_core.builtins.algebras import ALGEBRAS
from qvr_core.check import check
from qvr_core.ide.completion import Word, candidates
from qvr_core.ide.completion_context import Where, classify
from qvr_core.ide.hover import hover_at

SOURCE = """object A : FinSet 2

composition log_prob [level=algebra]

morphism f : A -> A [role=latent]
"""


def test_hover_on_the_rule_shows_its_operations() -> None:
    module = check(SOURCE)
    at = SOURCE.index("log_prob") + 3
    found = hover_at(module, at)
    assert found is not None
    assert "composition log_prob" in found.plain
    assert "a (x) b = a + b" in found.plain and "join = logsumexp(t)" in found.plain
    assert "unit 0, zero -inf" in found.plain
    assert (found.span.start, found.span.end) == (
        SOURCE.index("log_prob"),
        SOURCE.index("log_prob") + len("log_prob"),
    )


def test_hover_on_an_inline_rule_is_its_declaration() -> None:
    text = "composition mine [level=semigroupoid]\n    tensor_op(a, b) = a * b\n"
    text += "    join(t) = sum(t)\n"
    found = hover_at(check(text), text.index("mine") + 1)
    assert found is not None and "join over j" not in found.plain


def test_completion_after_composition_offers_the_registry() -> None:
    text = "object A : FinSet 2\ncomposition ma"
    context = classify(text, len(text))
    assert context.where is Where.ALGEBRA and context.prefix == "ma"
    found = candidates(context, [check("object A : FinSet 2\n")], 1)
    assert [c.label for c in found] == list(ALGEBRAS)
    markov = next(c for c in found if c.label == "markov")
    assert markov.kind is Word.ALGEBRA and markov.doc and "sum(t)" in markov.doc
