"""The words that start a declaration or a program step, each described once.

Completion offers them with their doc (`qvr_core.ide.completion`) and rename
refuses the reserved ones as new names (`qvr_core.check.context.KEYWORDS`).
How the lexer reads each word is `qvr_core.syntax.layout`'s: a reserved word
is a keyword everywhere (`layout.KEYWORDS`), a soft one only where the grammar
expects it (`layout.SOFT_KEYWORDS`), so it may still name things;
`tests/builtins/test_keywords.py` checks that the two agree.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Keyword:
    word: str
    doc: str  # one line, shown by completion
    reserved: bool = True  # a keyword everywhere; False: a soft keyword, a name elsewhere


#: What starts a top-level statement at column 0.
TOP_KEYWORDS: tuple[Keyword, ...] = (
    Keyword("object", "Declares an object, a space of values: `object H : Real 64`."),
    Keyword("morphism", "Declares a morphism: `morphism f : A -> B [role=kernel] ~ Normal`."),
    Keyword("let", "Names a morphism expression: `let h = f >> g`."),
    Keyword(
        "define",
        "Names a morphism expression, as let did before quivers 0.15: `define h = f >> g`.",
        reserved=False,
    ),
    Keyword("program", "Declares a program: a header, then one indented step per line."),
    Keyword("export", "Makes a program or let runnable: `export p`."),
)

#: What starts a step of a program (an indented line).
STEP_KEYWORDS: tuple[Keyword, ...] = (
    Keyword("sample", "Draws a value: `sample x <- f(y)` or `sample mu <- Normal(0.0, 1.0)`."),
    Keyword("observe", "Scores data under a distribution: `observe y : N <- Normal(mu, 1.0)`."),
    Keyword(
        "marginalize",
        "Sums a discrete value out of the indented steps below: "
        "`marginalize c : K <- Categorical(probs)`.",
        reserved=False,
    ),
    Keyword("score", "Adds a term to the log density: `score s = -x * x`.", reserved=False),
    Keyword("let", "Computes a value: `let z = x + 2.0 * y`."),
    Keyword("return", "The program's value: `return y` or `return (a, b)`."),
)

#: The reserved words among them: never a name.
RESERVED: tuple[str, ...] = tuple(
    dict.fromkeys(k.word for k in (*TOP_KEYWORDS, *STEP_KEYWORDS) if k.reserved)
)
