"""What a builtin name means, for hover, completion and signature help, from the registry.

A family, type constructor, combinator or arithmetic builtin is described
once in `qvr_core.builtins`; this turns an entry into the signature and text
an editor shows, and finds the builtin name under the cursor (by where it
stands in the syntax tree, as semantic tokens classify it).
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass

from qvr_core.builtins import COMBINATORS, FAMILIES, FUNCTIONS, OBJECT_CONSTRUCTORS, Family
from qvr_core.builtins.families import codomain_words
from qvr_core.check.module import CheckedModule
from qvr_core.ide.tokens import TokenType, classify
from qvr_core.ide.walk import walk
from qvr_core.syntax.span import Span


@dataclass(frozen=True)
class BuiltinDoc:
    name: str
    kind: str  # "family" | "type constructor" | "combinator" | "builtin function"
    signature: str
    doc: str


def describe(name: str) -> BuiltinDoc | None:
    """The signature and documentation of a builtin name, or None if it is not one."""
    if name in FAMILIES:
        f = FAMILIES[name]
        return BuiltinDoc(name, "family", f.signature(), family_text(f))
    if name in OBJECT_CONSTRUCTORS:
        c = OBJECT_CONSTRUCTORS[name]
        return BuiltinDoc(name, "type constructor", f"{name} N", c.doc)
    if name in COMBINATORS:
        k = COMBINATORS[name]
        params = [p.name for p in k.params]
        if k.variadic:
            params = [f"{params[0]}1", "...", f"{params[0]}n"]
        params += [f"{key}={default}" for key, _, default in k.keywords]
        return BuiltinDoc(name, "combinator", f"{name}({', '.join(params)}){k.result}", k.doc)
    if name in FUNCTIONS:
        fn = FUNCTIONS[name]
        return BuiltinDoc(name, "builtin function", f"{name}({', '.join(fn.params)})", fn.doc)
    return None


def family_text(f: Family) -> str:
    """A family's documentation: what it is, its parameters, its values, where it may stand."""
    lines = [f.doc]
    if f.params:
        lines.append("")
        for schema in f.schemas:
            if len(f.schemas) > 1:
                lines.append(f"`{f.name}({', '.join(p.name for p in schema)})`:")
            lines.extend(
                f"- `{p.name}`, {p.constraint.describe()}" + (f": {p.doc}" if p.doc else "")
                for p in schema
            )
    values = f"Draws {f.support.describe()}" if not f.dirac else "Draws the network's output"
    if f.event_rank:
        values += f" ({['', 'a vector', 'a matrix'][f.event_rank]} per draw)"
    lines += ["", values + "."]
    if f.kernel is not None:
        lines.append(f"After `~` on a morphism: needs {codomain_words(f)}; {f.kernel.doc}.")
    if f.example:
        args = ", ".join(f"{k}={v}" for k, v in f.example.items())
        lines.append(f"Example: `{f.name}({args})`.")
    return "\n".join(lines)


_KINDS = {TokenType.FAMILY, TokenType.BUILTIN_TYPE, TokenType.BUILTIN_FUNCTION}


def builtin_at(module: CheckedModule, offset: int) -> tuple[BuiltinDoc, Span] | None:
    """The builtin name at `offset` (a family after `~`, a type constructor, a combinator or
    arithmetic builtin being called) with its span."""
    decls = module.ast.decls
    i = bisect_right(decls, offset, key=lambda d: d.span.start) - 1
    if i < 0 or not decls[i].span.start <= offset <= decls[i].span.end:
        return None
    for node in walk(decls[i]):
        for token in classify(node):
            if token.type in _KINDS and token.span.start <= offset <= token.span.end:
                doc = describe(module.source[token.span.start : token.span.end])
                return (doc, token.span) if doc is not None else None
    return None
