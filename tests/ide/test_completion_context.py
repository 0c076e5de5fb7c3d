"""The completion context classifier, at library level: text before the cursor -> context."""

from __future__ import annotations

import pytest

from qvr_core.ide.completion_context import Where, classify

PROGRAM = "program p (x) : Token -> Token\n    sample h <- backbone\n"


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("", Where.TOP_KEYWORD),
        ("mor", Where.TOP_KEYWORD),
        ("object X : ", Where.OBJECT_BODY),
        ("object X : A * ", Where.TYPE),
        ("morphism f : ", Where.TYPE),
        ("morphism f : A -> B * ", Where.TYPE),
        ("morphism f : A -> B [", Where.OPTION_KEY),
        ("morphism f : A -> B [role=kernel, ", Where.OPTION_KEY),
        ("morphism f : A -> B [role=kernel,\n    ", Where.OPTION_KEY),
        ("morphism f : A -> B [role=", Where.OPTION_VALUE),
        ("morphism f : A -> B [role=kernel] ~ ", Where.FAMILY),
        ("morphism f : A -> B [role=kernel] ~ Nor", Where.FAMILY),
        ("morphism f : A -> B [role=kernel] ", Where.NOTHING),
        ("let z = ", Where.LET_EXPR),
        ("let z = a >> ", Where.LET_EXPR),
        ("let z = a @ ", Where.LET_EXPR),
        ("let z = fan(a, ", Where.LET_EXPR),
        ("let z = identity(", Where.TYPE),
        ("let z = stack(b, ", Where.NOTHING),
        ("let z = scan(c, ", Where.NOTHING),
        ("program q : ", Where.TYPE),
        ("program q (a, b) : A * B -> ", Where.TYPE),
        ("export ", Where.EXPORT),
        (PROGRAM + "    ", Where.STEP_KEYWORD),
        (PROGRAM + "    obs", Where.STEP_KEYWORD),
        (PROGRAM + "    sample z <- ", Where.CALLABLE),
        (PROGRAM + "    sample z <- f(", Where.BOUND),
        (PROGRAM + "    sample z <- f(h, ", Where.BOUND),
        (PROGRAM + "    observe y : ", Where.TYPE),
        (PROGRAM + "    observe y : Token <- ", Where.CALLABLE),
        (PROGRAM + "    let a = ", Where.ARITH),
        (PROGRAM + "    let a = tanh(h) + ", Where.ARITH),
        (PROGRAM + "    return ", Where.BOUND),
        (PROGRAM + "    return (h, ", Where.BOUND),
        (PROGRAM + "\n", Where.TOP_KEYWORD),
        ("# a comment with sample h <- ", Where.NOTHING),
        ("object X : Real 1e", Where.NOTHING),
    ],
)
def test_context(text: str, where: Where):
    assert classify(text, len(text)).where is where


def test_context_knows_the_program_prefix_and_option():
    ctx = classify(PROGRAM + "    let a = h + ti", len(PROGRAM) + 18)
    assert (ctx.where, ctx.program, ctx.prefix) == (Where.ARITH, "p", "ti")
    ctx = classify("morphism f : A -> B [role=kernel, param_source=", 48)
    assert ctx.option == "param_source"
    ctx = classify("morphism f : A -> B [role=kernel, ", 34)
    assert ctx.present == ("role",)


def test_only_text_before_the_cursor_counts():
    text = "let z = \nobject A : Real 2\n"
    assert classify(text, 8).where is Where.LET_EXPR
    assert classify(text, len(text)).where is Where.TOP_KEYWORD


def test_large_candidate_lists_are_narrowed_by_the_prefix():
    from qvr_core.ide.completion import MAX_ITEMS, Candidate, Word, narrow

    found = [Candidate(f"name_{i}", Word.FUNCTION, "") for i in range(3000)]
    small, cut = narrow(found[:10], "")
    assert not cut and len(small) == 10
    narrowed, cut = narrow(found, "NM_299")  # a subsequence, any case
    labels = [c.label for c in narrowed]
    assert cut and len(labels) <= MAX_ITEMS
    assert "name_299" in labels and "name_1" not in labels
