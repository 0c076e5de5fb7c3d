"""Semantic tokens: what each name in the file is, for highlighting beyond what a grammar sees.

Declared names are classified by the symbol the checker resolved them to;
the names the checker treats as vocabulary (type constructors, option keys
and values, families, combinators, arithmetic builtins) are classified by
where they stand in the syntax tree. A name the checker could not resolve
gets no token, so a typo does not look like a declared name.

Tokens are absolute code-point spans on one line, sorted and disjoint; the
server encodes them relative to each other in the client's encoding.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from qvr_core import builtins
from qvr_core.builtins import FAMILIES as REGISTRY
from qvr_core.builtins.bijectors import BIJECTORS
from qvr_core.builtins.functions import LIFTED
from qvr_core.check.context import COMBINATORS, FAMILIES
from qvr_core.check.module import CheckedModule, SymbolKind
from qvr_core.check.types import CONSTRUCTORS
from qvr_core.syntax import ast
from qvr_core.syntax.walk import walk
from qvr_core.text.span import Span


class TokenType(StrEnum):
    OBJECT = "object"
    MORPHISM = "morphism"
    LET = "let"
    PROGRAM = "program"
    SITE = "site"  # a sample or observe site
    PARAMETER = "parameter"  # a program's named input
    LOCAL = "local"  # a program-local let value
    OPTION = "option"  # a key in a morphism's [...] block, or `reverse=`
    VALUE = "value"  # a named option value (`kernel`, `linear`, `true`)
    FAMILY = "family"
    BUILTIN_TYPE = "builtinType"  # FinSet, Real, ...
    BUILTIN_FUNCTION = "builtinFunction"  # combinators and arithmetic builtins


class TokenModifier(StrEnum):
    DECLARATION = "declaration"
    SAMPLED = "sampled"
    OBSERVED = "observed"
    DOCUMENTED = "documented"  # its declaration has a doc comment


@dataclass(frozen=True)
class SemanticToken:
    span: Span
    type: TokenType
    modifiers: frozenset[TokenModifier] = frozenset()


_BY_KIND = {
    SymbolKind.OBJECT: TokenType.OBJECT,
    SymbolKind.MORPHISM: TokenType.MORPHISM,
    SymbolKind.LET: TokenType.LET,
    SymbolKind.PROGRAM: TokenType.PROGRAM,
    SymbolKind.PARAM: TokenType.PARAMETER,
    SymbolKind.SAMPLE: TokenType.SITE,
    SymbolKind.OBSERVE: TokenType.SITE,
    SymbolKind.LOCAL: TokenType.LOCAL,
    SymbolKind.DATA: TokenType.PARAMETER,  # bound from outside the program, as a parameter is
}
_SITE_MODIFIER = {
    SymbolKind.SAMPLE: TokenModifier.SAMPLED,
    SymbolKind.OBSERVE: TokenModifier.OBSERVED,
}
_FUNCTIONS = frozenset((*COMBINATORS, *builtins.FUNCTIONS, *LIFTED))


def semantic_tokens(
    module: CheckedModule, start: int = 0, end: int | None = None
) -> list[SemanticToken]:
    """The tokens overlapping [start, end), sorted by position and disjoint."""
    stop = len(module.source) if end is None else end
    found: dict[int, SemanticToken] = {}
    for token in (*_symbol_tokens(module), *_vocabulary_tokens(module)):
        found.setdefault(token.span.start, token)  # a resolved symbol wins over vocabulary
    tokens = sorted(found.values(), key=lambda t: t.span.start)
    return [
        t
        for t in tokens
        if t.span.start < stop
        and t.span.end > start
        and t.span.start_line == t.span.end_line
        and t.span.end > t.span.start  # (a name an older surface implies is not written)
    ]


def _symbol_tokens(module: CheckedModule) -> list[SemanticToken]:
    tokens = []
    for ref in module.symbols.references:
        symbol = ref.symbol
        kind = _BY_KIND.get(symbol.kind)
        if kind is None:
            continue  # a declaration kind the checker does not model yet: no token so far
        modifiers = set()
        if ref.is_definition:
            modifiers.add(TokenModifier.DECLARATION)
        if symbol.kind in _SITE_MODIFIER:
            modifiers.add(_SITE_MODIFIER[symbol.kind])
        if symbol.doc:
            modifiers.add(TokenModifier.DOCUMENTED)
        tokens.append(SemanticToken(ref.span, kind, frozenset(modifiers)))
    return tokens


def _vocabulary_tokens(module: CheckedModule) -> list[SemanticToken]:
    tokens: list[SemanticToken] = []
    for decl in module.ast.decls:
        for node in walk(decl):
            tokens.extend(classify(node))
    return tokens


#: The families whose second argument names a bijection (`Pushforward(base, Exp)`).
PUSHFORWARDS = frozenset(n for n, f in REGISTRY.items() if f.measure == "pushforward")


def classify(node: object) -> list[SemanticToken]:
    """Vocabulary tokens of one node (its own names, not its children's)."""
    match node:
        case ast.SizedObject(constructor=ctor) | ast.ObjCtor(constructor=ctor) if (
            ctor.text in CONSTRUCTORS
        ):
            return [SemanticToken(ctor.span, TokenType.BUILTIN_TYPE)]
        case ast.Option(key=key) | ast.KeywordArg(key=key):
            return [SemanticToken(key.span, TokenType.OPTION)]
        case ast.Literal(kind="name" | "bool", span=span):
            return [SemanticToken(span, TokenType.VALUE)]
        case ast.MorphismDecl(family=ast.Name(text=text, span=span)) if text in FAMILIES:
            return [SemanticToken(span, TokenType.FAMILY)]
        case ast.Call(callee=ast.Name(text=text, span=span), args=args, kwargs=kwargs) if (
            text in FAMILIES
        ):
            # a family step `Normal(0.0, 1.0)`; a pushforward's bijection `Exp` is a builtin
            pushed = text in PUSHFORWARDS
            named = (*args, *(kw.value for kw in kwargs)) if pushed else ()
            return [
                SemanticToken(span, TokenType.FAMILY),
                *(
                    SemanticToken(a.span, TokenType.BUILTIN_FUNCTION)
                    for a in named
                    if isinstance(a, ast.NameRef) and a.name.text in BIJECTORS
                ),
            ]
        case (
            ast.SampleStep(source=ast.NameRef(name=name))
            | ast.ObserveStep(source=ast.NameRef(name=name))
            | ast.MarginalizeStep(source=ast.NameRef(name=name))
        ) if name.text in FAMILIES:
            return [SemanticToken(name.span, TokenType.FAMILY)]  # a family written bare, `Flat`
        case ast.Call(callee=name) | ast.Apply(func=name) if name.text in _FUNCTIONS:
            return [SemanticToken(name.span, TokenType.BUILTIN_FUNCTION)]
    return []
