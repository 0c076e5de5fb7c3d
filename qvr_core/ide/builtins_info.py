"""What a builtin name means, for hover, completion and signature help, from the registry.

A family, type constructor, combinator, arithmetic builtin or param source
is described once in `qvr_core.builtins`; this turns an entry into the
signature and text an editor shows, and finds the builtin name under the
cursor (by where it stands in the syntax tree, as semantic tokens classify
it). A param source is named only as the value of a morphism's
`param_source=` option (`layer_norm` there is the network, not the function).
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass

from qvr_core.builtins import (
    ALGEBRAS,
    COMBINATORS,
    FAMILIES,
    FUNCTIONS,
    OBJECT_CONSTRUCTORS,
    PARAM_SOURCES,
    Family,
)
from qvr_core.builtins.bijectors import BIJECTORS
from qvr_core.builtins.deduction_calls import GOAL_WEIGHT, GOAL_WEIGHT_DOC, PARSE, PARSE_DOC
from qvr_core.builtins.families import codomain_words
from qvr_core.builtins.functions import LIFTED
from qvr_core.builtins.schemas import PARSER, PARSER_DOC, PARSER_SIGNATURE, SCHEMAS
from qvr_core.builtins.transformations import TRANSFORMATIONS
from qvr_core.check.module import CheckedModule
from qvr_core.ide.tokens import TokenType, classify
from qvr_core.syntax import ast
from qvr_core.syntax.walk import walk
from qvr_core.text.span import Span

#: The morphism option whose value names a param source (`[param_source=layer_norm]`).
PARAM_SOURCE_OPTION = "param_source"


@dataclass(frozen=True)
class BuiltinDoc:
    name: str
    kind: str  # "family" | "type constructor" | "combinator" | "builtin function" | "param source"
    signature: str
    doc: str


def describe(name: str) -> BuiltinDoc | None:
    """The signature and documentation of a builtin name, or None if it is not one."""
    if name in FAMILIES:
        f = FAMILIES[name]
        return BuiltinDoc(name, "family", f.signature(), family_text(f))
    if name in BIJECTORS:  # what a Pushforward pushes its base through
        b = BIJECTORS[name]
        doc = f"A bijection for `Pushforward(base, {name})`: {b.doc}."
        return BuiltinDoc(name, "bijection", name, doc)
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
    if name in LIFTED:  # map and fold: a lambda among their arguments
        lifted = LIFTED[name]
        signature = f"{name}({', '.join(lifted.params)})"
        return BuiltinDoc(name, "builtin function", signature, lifted.doc)
    if name == PARSER:
        return BuiltinDoc(name, "chart parser", PARSER_SIGNATURE, PARSER_DOC)
    if name == PARSE:
        return BuiltinDoc(name, "deduction call", f"{PARSE}(D, sentence)", PARSE_DOC)
    if name == GOAL_WEIGHT:
        return BuiltinDoc(name, "chart method", f"chart.{GOAL_WEIGHT}()", GOAL_WEIGHT_DOC)
    if name in SCHEMAS:
        schema = SCHEMAS[name]
        doc = f"quivers' built-in rule schema: {schema.doc}."
        return BuiltinDoc(name, "rule schema", f"parser(rules=[{name}], ...)", doc)
    return None


def describe_algebra(name: str) -> BuiltinDoc | None:
    """A registered composition rule (`composition NAME`), looked up lower-cased as quivers
    does, or None if the registry has no rule of that name."""
    rule = ALGEBRAS.get(name.lower())
    if rule is None:
        return None
    return BuiltinDoc(rule.name, "composition rule", f"composition {rule.name}", rule.describe())


def algebra_at(module: CheckedModule, offset: int) -> tuple[BuiltinDoc, Span] | None:
    """The registered rule the file's `composition` declaration names, when `offset` is on
    that name (the checker's record, `CheckedModule.algebra`; an inline body defines its
    own rule: None)."""
    declared = module.algebra
    if declared is None or declared.rule is None:
        return None
    span = declared.span
    if not span.start <= offset <= span.end:
        return None
    doc = describe_algebra(declared.rule)
    return (doc, span) if doc is not None else None


def transformation_at(module: CheckedModule, offset: int) -> tuple[BuiltinDoc, Span] | None:
    """The change-of-base transformation named at `offset`: in the argument of
    `f.change_base(...)` or in a let the checker bound to a transformation (elsewhere
    `softmax` is the arithmetic builtin, and `log_prob` a composition rule)."""
    decls = module.ast.decls
    i = bisect_right(decls, offset, key=lambda d: d.span.start) - 1
    if i < 0 or not decls[i].span.start <= offset <= decls[i].span.end:
        return None
    declared = (module.objects, module.morphisms, module.lets, module.programs)
    for node in walk(decls[i]):
        roots: tuple[ast.Arg, ...] = ()
        if isinstance(node, ast.Method) and node.is_change_base:
            roots = node.args or ()
        elif isinstance(node, ast.LetDecl):
            info = module.lets.get(node.name.text)
            roots = (node.expr,) if info is not None and info.transformation is not None else ()
        stack = list(roots)
        while stack:
            item = stack.pop()
            name = None
            if isinstance(item, ast.Compose):
                stack += [item.left, item.right]
            elif isinstance(item, ast.Call):
                name = item.callee
            elif isinstance(item, ast.NameRef):
                name = item.name
            found = TRANSFORMATIONS.get(name.text) if name is not None else None
            if (
                found is not None
                and name is not None
                and name.span.start <= offset <= name.span.end
                and not any(name.text in table for table in declared)
            ):
                doc = BuiltinDoc(found.name, "transformation", found.call, found.describe())
                return doc, name.span
    return None


def describe_param_source(name: str) -> BuiltinDoc | None:
    """What `param_source=name` builds, or None if no param source has that name."""
    source = PARAM_SOURCES.get(name)
    if source is None:
        return None
    lines = [
        f"{source.doc[:1].upper()}{source.doc[1:]}: the network from a kernel's input to "
        "its family's parameters."
    ]
    if source.hidden_layer:
        lines.append("Its hidden layer is sized by `hidden_dim=`.")
    if source.keeps_width:
        lines.append(
            "It gives as many numbers as it reads: the family's parameters are as wide as "
            "the input."
        )
    doc = " ".join(lines)
    return BuiltinDoc(name, "param source", f"{PARAM_SOURCE_OPTION}={name}", doc)


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
    if f.measure is not None:
        values = "Draws what the distributions it is built from draw"
    if f.improper:
        values = f"Flat over every value that is {f.support.describe()}; no draws"
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
    arithmetic builtin being called, a `param_source=` value) with its span."""
    decls = module.ast.decls
    i = bisect_right(decls, offset, key=lambda d: d.span.start) - 1
    if i < 0 or not decls[i].span.start <= offset <= decls[i].span.end:
        return None
    for node in walk(decls[i]):
        source = _param_source_at(node, offset)
        if source is not None:
            return source
        for token in classify(node):
            if token.type in _KINDS and token.span.start <= offset <= token.span.end:
                doc = describe(module.source[token.span.start : token.span.end])
                return (doc, token.span) if doc is not None else None
    return None


def _param_source_at(node: object, offset: int) -> tuple[BuiltinDoc, Span] | None:
    """The param source named by a `param_source=` option at `offset`."""
    match node:
        case ast.Option(key=key, value=ast.Literal(kind="name", value=str(name), span=span)) if (
            key.text == PARAM_SOURCE_OPTION and span.start <= offset <= span.end
        ):
            doc = describe_param_source(name)
            return (doc, span) if doc is not None else None
    return None
