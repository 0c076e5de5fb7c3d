"""quivers' top-level categorial grammar: `category`, `rule`, `schema` and `bundle`.

`category S, NP, VP` declares category atoms; `rule combine(X, Y) : NP, VP |- S` (or
`=>`) and `schema fwd_app (X, Y : Cat) : (X / Y) * Y -> X` declare inference rules over
them, with the parenthesised names as pattern variables; `bundle CCG : [fwd_app,
bwd_app]` names a list of rules that `parser(rules=[CCG], ...)` splices in. quivers'
compiler (0.25.2, `dsl/compiler/declarations.py`, `_compile_rule`, `_compile_schema`,
`_compile_bundle`) refuses a rule with other than one or two premises and a rule,
schema or bundle named like one of its built-in schemas (`evaluation`,
`harmonic_composition`, ...); a bundle's members are looked up when a parser uses it,
and a member that names nothing is refused then. The checker reports the same where it
is written, and a bundle member that names no rule at once (it can only fail later).

A name in a pattern that is neither one of the rule's variables nor a declared category
or object is a constant that no declared category is (quivers compares it by name), so
the rule never fires on a declared category: a warning (QVR802) with the close name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeGuard

from qvr_core.builtins.schemas import SCHEMAS as BUILTIN_SCHEMAS
from qvr_core.check.context import SymbolKey
from qvr_core.check.unchecked import refer
from qvr_core.syntax import ast
from qvr_core.text import rules

if TYPE_CHECKING:
    from qvr_core.check.context import Context

KINDS = ("category", "rule", "schema", "bundle")


def is_grammar(decl: ast.Decl) -> TypeGuard[ast.OtherDecl]:
    return isinstance(decl, ast.OtherDecl) and decl.clause.kind in KINDS


def check_grammar(ctx: Context, decl: ast.OtherDecl) -> None:
    """Check one categorial declaration where it is written (its names are declared)."""
    clause = decl.clause
    kind = clause.kind
    if kind == "category":
        return
    name = decl.name
    if name.text in BUILTIN_SCHEMAS:
        ctx.report(
            rules.DUPLICATE_DECLARATION,
            f"{kind} {name.text} shadows quivers' built-in schema of that name; choose "
            "another name",
            name.span,
        )
    if kind == "bundle":
        _bundle(ctx, clause)
        return
    params = [p for p in clause.parts[1:] if isinstance(p, ast.Name)]
    groups = [p for p in clause.parts if isinstance(p, ast.Clause) and p.kind == "schema_param"]
    for g in groups:
        params += [n for n in g.parts if isinstance(n, ast.Name)]
        refer(ctx, tuple(p for p in g.parts if not isinstance(p, ast.Name)))  # their type
    patterns = [p for p in clause.parts[1:] if not isinstance(p, ast.Name | ast.Clause)]
    variables = {p.text for p in params}
    if kind == "rule" and len(patterns) - 1 not in (1, 2):
        ctx.report(
            rules.GRAMMAR_TERM,
            f"rule {name.text} has {len(patterns) - 1} premises: quivers' rules take one "
            "(unary) or two (binary)",
            name.span,
        )
    for pattern in patterns:
        for used in pattern_names(pattern):
            _constant(ctx, used, variables)


def _bundle(ctx: Context, clause: ast.Clause) -> None:
    members = [p for p in clause.parts[1:] if isinstance(p, ast.Name)]
    defined = [n for n, d in ctx.top.items() if is_grammar(d) and d.clause.kind != "category"]
    for m in members:
        target = ctx.top.get(m.text)
        if target is not None and is_grammar(target) and target.clause.kind in ("rule", "schema"):
            ctx.ref(m.span, SymbolKey(m.text))
        elif target is not None and is_grammar(target) and target.clause.kind == "bundle":
            ctx.ref(m.span, SymbolKey(m.text))  # a bundle of bundles splices both
        elif m.text not in BUILTIN_SCHEMAS:
            ctx.undefined(m, "rule or schema (in a bundle)", [*defined, *BUILTIN_SCHEMAS])


def _constant(ctx: Context, used: ast.Name, variables: set[str]) -> None:
    """A pattern's name: a variable, or a declared category or object (a use of it)."""
    text = used.text
    if text in variables:
        return
    target = ctx.top.get(text)
    if target is not None:
        ctx.ref(used.span, SymbolKey(text))
        return
    categories = [
        n
        for n, d in ctx.top.items()
        if (is_grammar(d) and d.clause.kind == "category") or isinstance(d, ast.ObjectDecl)
    ]
    ctx.did_you_mean(
        rules.GRAMMAR_READ_OTHERWISE,
        f"'{text}' is neither a variable of the rule nor a declared category, so the rule "
        "reads it as a constant that no category is",
        used.span,
        text,
        [*categories, *sorted(variables)],
        otherwise=f" (declare it with `category {text}`)",
    )


def pattern_names(node: object) -> list[ast.Name]:
    """The names of a pattern (an object expression), heads of applications included."""
    found: list[ast.Name] = []
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, ast.Name):
            found.append(item)
        elif isinstance(item, ast.ObjApply):
            stack.append(item.func)
            stack.extend(item.args)
        elif isinstance(item, ast.ObjBinary):
            stack.extend((item.left, item.right))
        elif isinstance(item, ast.TypeRef):
            stack.extend(item.factors)
    return found
