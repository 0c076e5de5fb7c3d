"""Grammar callbacks: how each rule of grammar.lark becomes a syntax-tree node.

Lark calls these inline, on each LALR reduction, so building the tree needs
no recursion however deeply the text nests. Every callback is a pure function
of its children (tokens from layout.py or nodes built earlier): spans come
from the children's positions, so one builder serves every text and thread.

A callback raises `NodeError` for a problem the grammar cannot name well
(a positional argument after a keyword argument, a product missing its `*`);
the parser reports it and drops that line.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from lark import Transformer

from qvr_core.builtins.objects import OBJECT_CONSTRUCTORS
from qvr_core.syntax import ast
from qvr_core.syntax.layout import Token, cover
from qvr_core.syntax.messages import shorten
from qvr_core.syntax.span import Span

#: Type constructors that take a size; `object A : FinSet` is a missing size, not an alias.
SIZED_CONSTRUCTORS = frozenset(OBJECT_CONSTRUCTORS)

# Python refuses to convert integers longer than this (sys.int_info.default_max_str_digits).
_MAX_INT_DIGITS = 4000


#: A rule's children as lark passes them: tokens, nodes, and the NamedTuples below.
Children = list[Any]


class NodeError(Exception):
    """A syntax problem found while building a node."""

    def __init__(self, message: str, span: Span) -> None:
        super().__init__(message)
        self.message = message
        self.span = span


class Header(NamedTuple):
    """A parsed `program NAME (PARAMS)? : DOM -> COD` line, before its body is attached."""

    name: ast.Name
    params: tuple[ast.Name, ...] | None
    dom: ast.TypeRef
    cod: ast.TypeRef
    span: Span


class _Options(NamedTuple):
    items: tuple[ast.Option, ...]
    span: Span


class _Paren(NamedTuple):
    """A parenthesized expression on its way up: the tree gets `node` (there is no
    Paren node), while the enclosing node's span still includes the parentheses."""

    node: Any
    span: Span


def _bare(child: Any) -> Any:
    """The node itself, without the parentheses that may have been around it."""
    return child.node if type(child) is _Paren else child


def parse_int(text: str) -> int | None:
    """The value of a run of digits, or None when it is too long to convert."""
    return int(text) if len(text) <= _MAX_INT_DIGITS else None


def _name(tok: Token) -> ast.Name:
    _, text, start, line, col = tok
    return ast.Name(text, Span(start, start + len(text), line, col, line, col + len(text)))


def _last(children: Children) -> Token | Span:
    last = children[-1]
    return last if type(last) is Token else last.span


class TreeBuilder(Transformer[Token, Any]):
    """Callbacks named after grammar.lark's rules and aliases; each gets the rule's children."""

    # ------------------------------------------------------- declarations

    def object_decl(self, c: Children) -> ast.ObjectDecl:
        body = c[3]
        if (
            type(body) is ast.TypeRef
            and len(body.factors) == 1
            and body.factors[0].text in SIZED_CONSTRUCTORS
        ):
            body = ast.SizedObject(body.factors[0], None, None, body.span)
        return ast.ObjectDecl(_name(c[1]), body, None, cover(c[0], body.span))

    def sized_object(self, c: Children) -> ast.SizedObject:
        size_tok = c[-1]
        if len(c) == 2 and size_tok.type == "NAME" and c[0].text not in SIZED_CONSTRUCTORS:
            # `object X : Hidden Other`: a product missing its '*', not a size
            after, found = shorten(c[0].text), shorten(size_tok.text)
            message = f"expected '*' or end of line after '{after}', found name '{found}'"
            raise NodeError(message, size_tok.span)
        size = None
        if len(c) == 2 and size_tok.type == "INT":
            value = parse_int(size_tok.text)
            size = value if value else None
        size_span = cover(c[1], size_tok)
        return ast.SizedObject(_name(c[0]), size, size_span, cover(c[0], size_tok))

    def morphism_decl(self, c: Children) -> ast.MorphismDecl:
        options: tuple[ast.Option, ...] = ()
        options_span = None
        family = None
        for extra in c[6:]:
            if type(extra) is _Options:
                options, options_span = extra.items, extra.span
            else:
                family = extra
        span = cover(c[0], _last(c))
        return ast.MorphismDecl(_name(c[1]), c[3], c[5], options, options_span, family, None, span)

    def options(self, c: Children) -> _Options:
        items = tuple(c[1]) if len(c) == 3 else ()
        return _Options(items, cover(c[0], c[-1]))

    def option_list(self, c: Children) -> list[ast.Option]:
        return c[::2]

    def option(self, c: Children) -> ast.Option:
        return ast.Option(_name(c[0]), c[2], cover(c[0], c[2].span))

    def family(self, c: Children) -> ast.Name:
        return _name(c[1])

    def let_decl(self, c: Children) -> ast.LetDecl:
        return ast.LetDecl(_name(c[1]), _bare(c[3]), None, cover(c[0], c[3].span))

    def program_header(self, c: Children) -> Header:
        params = c[2] if len(c) == 7 else None
        return Header(_name(c[1]), params, c[-3], c[-1], cover(c[0], c[-1].span))

    def params(self, c: Children) -> tuple[ast.Name, ...]:
        return c[1] if len(c) == 3 else ()

    def export_decl(self, c: Children) -> ast.ExportDecl:
        return ast.ExportDecl(_name(c[1]), cover(c[0], c[1]))

    def typeref(self, c: Children) -> ast.TypeRef:
        if len(c) == 1:
            name = _name(c[0])
            return ast.TypeRef((name,), name.span)
        return ast.TypeRef(tuple(_name(t) for t in c[::2]), cover(c[0], c[-1]))

    def name_list(self, c: Children) -> tuple[ast.Name, ...]:
        return tuple(_name(t) for t in c[::2])

    def literal(self, c: Children) -> ast.Literal:
        tok = c[-1]
        span = cover(c[0], tok)
        if tok.type == "NAME":
            if tok.text in ("true", "false"):
                return ast.Literal("bool", tok.text, tok.text == "true", span)
            return ast.Literal("name", tok.text, tok.text, span)
        negative = len(c) == 2
        raw = "-" + tok.text if negative else tok.text
        if tok.type == "INT":
            value = parse_int(tok.text)
            if value is None:
                raise NodeError(f"integer too large: {len(tok.text)} digits", span)
            return ast.Literal("int", raw, -value if negative else value, span)
        value_f = float(tok.text)
        return ast.Literal("float", raw, -value_f if negative else value_f, span)

    # ----------------------------------------------- morphism expressions

    def compose(self, c: Children) -> ast.Compose:
        return ast.Compose(_bare(c[0]), _bare(c[2]), cover(c[0].span, c[2].span))

    def tensor(self, c: Children) -> ast.Tensor:
        return ast.Tensor(_bare(c[0]), _bare(c[2]), cover(c[0].span, c[2].span))

    def name_ref(self, c: Children) -> ast.NameRef:
        name = _name(c[0])
        return ast.NameRef(name, name.span)

    def paren(self, c: Children) -> _Paren:
        return _Paren(_bare(c[1]), cover(c[0], c[2]))

    def call(self, c: Children) -> ast.Call:
        positional: list[ast.Expr | ast.Literal] = []
        keywords: list[ast.KeywordArg] = []
        for child in c[2] if len(c) == 4 else ():
            arg = _bare(child)
            if type(arg) is ast.KeywordArg:
                keywords.append(arg)
                continue
            if keywords:
                raise NodeError(
                    "positional argument after a keyword argument: put it before "
                    f"'{keywords[0].key.text}='",
                    arg.span,
                )
            if type(arg) is ast.NameRef and arg.name.text in ("true", "false"):
                text = arg.name.text
                arg = ast.Literal("bool", text, text == "true", arg.span)
            positional.append(arg)
        return ast.Call(_name(c[0]), tuple(positional), tuple(keywords), cover(c[0], c[-1]))

    def args(self, c: Children) -> Children:
        return c[::2]

    def kwarg(self, c: Children) -> ast.KeywordArg:
        return ast.KeywordArg(_name(c[0]), c[2], cover(c[0], c[2].span))

    # ------------------------------------------------------ program steps

    def sample_step(self, c: Children) -> ast.SampleStep:
        return ast.SampleStep(_name(c[1]), _bare(c[3]), cover(c[0], c[3].span))

    def observe_step(self, c: Children) -> ast.ObserveStep:
        return ast.ObserveStep(_name(c[1]), c[3], _bare(c[5]), cover(c[0], c[5].span))

    def let_step(self, c: Children) -> ast.LetStep:
        return ast.LetStep(_name(c[1]), _bare(c[3]), cover(c[0], c[3].span))

    def destructure_step(self, c: Children) -> ast.DestructureStep:
        return ast.DestructureStep(c[2], _bare(c[5]), cover(c[0], c[5].span))

    def return_one(self, c: Children) -> ast.ReturnStep:
        return ast.ReturnStep((_name(c[1]),), cover(c[0], c[1]))

    def return_many(self, c: Children) -> ast.ReturnStep:
        return ast.ReturnStep(c[2], cover(c[0], c[3]))

    # --------------------------------------------------------- arithmetic

    def binary(self, c: Children) -> ast.Binary:
        return ast.Binary(c[1].text, _bare(c[0]), _bare(c[2]), cover(c[0].span, c[2].span))

    def negate(self, c: Children) -> ast.Unary:
        return ast.Unary("-", _bare(c[1]), cover(c[0], c[1].span))

    def number(self, c: Children) -> ast.Number:
        tok = c[0]
        return ast.Number(float(tok.text), tok.text, tok.span)

    def var(self, c: Children) -> ast.Var:
        name = _name(c[0])
        return ast.Var(name, name.span)

    def apply(self, c: Children) -> ast.Apply:
        args = tuple(_bare(arg) for arg in c[2]) if len(c) == 4 else ()
        return ast.Apply(_name(c[0]), args, cover(c[0], c[-1]))

    def arith_args(self, c: Children) -> Children:
        return c[::2]
