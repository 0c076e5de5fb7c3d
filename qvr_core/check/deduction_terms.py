"""A deduction's patterns and logical forms as terms, read as quivers' compiler reads them.

quivers 0.25.2 (`dsl/compiler/deductions.py`, `_convert_pattern`, `_normalise_binders`)
turns each rule premise and conclusion and each lexicon category into a nested tuple: a
name the `atoms` line declares is that constant, any other name a pattern variable,
`f(a, b)` the applied term `(f, a, b)`, `X / Y` `("/", X, Y)`. A logical form (`= lam(x,
walk(x))`) becomes a ground term whose bound variables are renamed apart. When the
deduction carries logical forms (a `binders` line, or a rule's `span` of four or more
arguments), every three-argument `span(I, J, C)` pattern gets a fresh variable for its
form, so a rule passes forms through as quivers' does. The runtime
(`runtime/deduction.py`) matches and builds these terms.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from qvr_core.check.deduction_system import ATOM, VARIABLE, Term
from qvr_core.syntax import ast

#: The head of the chart items a sentence's words start (`span(i, i + 1, C)`).
SPAN = "span"
#: A form's bound variable (quivers' `("var", "#vN")`).
BOUND = "var"


def pattern_term(node: object, atoms: frozenset[str]) -> Term:
    """A rule pattern or a lexicon category as a term."""
    if isinstance(node, ast.TypeRef):
        parts = [_name(n.text, atoms) for n in node.factors]
        return parts[0] if len(parts) == 1 else ("product", tuple(parts))
    if isinstance(node, ast.ObjApply):
        args = [a for a in node.args if not isinstance(a, ast.Option)]
        return (node.func.text, *(pattern_term(a, atoms) for a in args))
    if isinstance(node, ast.ObjBinary) and node.op in ("/", "\\"):
        return (node.op, pattern_term(node.left, atoms), pattern_term(node.right, atoms))
    if isinstance(node, ast.ObjBinary) and node.op == "*":
        return ("product", (pattern_term(node.left, atoms), pattern_term(node.right, atoms)))
    return (ATOM, repr(node))  # quivers: anything else is a constant no item equals


def _name(text: str, atoms: frozenset[str]) -> Term:
    return (ATOM, text) if text in atoms else (VARIABLE, text)


def form_term(
    node: object, atoms: frozenset[str], binders: frozenset[str], fresh: Iterator[int]
) -> Term:
    """A logical form as a ground term: atoms and applied binders and constructors, the
    variables a binder binds renamed apart (`#v1`, `#v2`, ... from `fresh`)."""
    return _form(node, atoms, binders, fresh, {})


def _form(
    node: object,
    atoms: frozenset[str],
    binders: frozenset[str],
    fresh: Iterator[int],
    bound: dict[str, Term],
) -> Term:
    if isinstance(node, ast.Var):
        name = node.name.text
        return bound.get(name, (ATOM, name))
    if isinstance(node, ast.Apply):
        head = node.func.text
        args = list(node.args)
        if head in binders and len(args) >= 2 and isinstance(args[0], ast.Var):
            variable: Term = (BOUND, f"#v{next(fresh)}")
            inner = {**bound, args[0].name.text: variable}
            rest = (_form(a, atoms, binders, fresh, inner) for a in args[1:])
            return (head, variable, *rest)
        return (head, *(_form(a, atoms, binders, fresh, bound) for a in args))
    return (ATOM, repr(node))


def carries_forms(binders: Sequence[str], patterns: Sequence[Term]) -> bool:
    """quivers' `_uses_lf`: a `binders` line, or a `span` pattern of four arguments or more
    (the fifth slot is the form)."""
    return bool(binders) or any(
        p[0] == SPAN and len(p) >= 5 for p in patterns if p and isinstance(p[0], str)
    )


def with_form_slots(term: Term, fresh: Iterator[int]) -> Term:
    """A `span(I, J, C)` pattern with a fresh variable for its form (quivers'
    `_normalise_span`); other patterns as they are."""
    if term and term[0] == SPAN and len(term) == 4:
        return (*term, (VARIABLE, f"_lf_{next(fresh)}"))
    return term
