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

import dataclasses
from collections.abc import Callable
from typing import Any, NamedTuple

from qvr_core.builtins.objects import FINSET, LEGACY_CONSTRUCTORS, OBJECT_CONSTRUCTORS
from qvr_core.syntax import ast
from qvr_core.syntax.layout import Token, cover
from qvr_core.text.span import Span

#: Type constructors that take a size; `object A : FinSet` is a missing size, not an alias.
SIZED_CONSTRUCTORS = frozenset(OBJECT_CONSTRUCTORS)

# Python refuses to convert integers longer than this (sys.int_info.default_max_str_digits).
_MAX_INT_DIGITS = 4000
#: The largest size of an object: one axis of a tensor (torch's sizes are int64).
MAX_OBJECT_SIZE = 2**63 - 1


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
    dom: ast.ObjectExpr
    cod: ast.ObjectExpr
    span: Span
    param_kinds: tuple[ast.ObjectExpr | None, ...] = ()
    options: tuple[ast.Option, ...] = ()


class Era(NamedTuple):
    """A line written in an older surface of the language (quivers 0.1 - 0.10): the node
    it means today, what to say, and how to rewrite it (from the source of a span)."""

    node: Any
    message: str
    span: Span
    rewrite: Callable[[Callable[[Span], str]], str] | None
    #: other older constructs on the same line that have no rewrite: (message, span)
    notes: tuple[tuple[str, Span], ...] = ()


class _Plate(NamedTuple):
    node: Any
    span: Span


class _Targets(NamedTuple):
    names: tuple[ast.Name, ...]
    span: Span


#: What a generic clause declares: its first name after the keyword ("first"), or
#: every name it lists ("all").
_DECLARES = {
    "index": "first",
    "family": "first",
    "effect": "first",
    "instance": "first",
    "handler": "first",
    "composition": "first",
    "category": "all",
    "rule": "first",
    "schema": "first",
    "bundle": "first",
    "contraction": "first",
    "deduction": "first",
    "signature": "first",
    "encoder": "first",
    "decoder": "first",
    "loss": "first",
    "computation": "first",
    "atoms": "all",
    "deduction_rule": "first",
    "constructor": "first",
    "operation": "first",
    "sort_decl": "first",
    "constructor_decl": "first",
    "binder_decl": "first",
    "edge_kind": "first",
    "index_ctor": "first",
}
_VALUE_TOKENS = frozenset({"INT", "FLOAT", "STRING"})


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


def object_size(text: str) -> int | None:
    """An object's size (`FinSet 8`, `Real 64`), or None when it is 0 or larger than
    MAX_OBJECT_SIZE: sizes index tensors' axes, which torch counts in 64 bits."""
    value = parse_int(text)
    return value if value is not None and 0 < value <= MAX_OBJECT_SIZE else None


def _name(tok: Token) -> ast.Name:
    _, text, start, line, col = tok
    return ast.Name(text, Span(start, start + len(text), line, col, line, col + len(text)))


def _last(children: Children) -> Token | Span:
    last = children[-1]
    while type(last) is list or (type(last) is tuple and type(last) is not Token):
        last = last[-1]
    return last if type(last) is Token else last.span


def _start(child: Any) -> Token | Span:
    while type(child) is list or type(child) is tuple:
        child = child[0]
    return child if type(child) is Token else child.span


class TreeBuilder:
    """Callbacks named after grammar.lark's rules and aliases; each gets the rule's children.

    (Not a lark `Transformer`: lark looks callbacks up by name, and the parser
    starts without importing lark, see tables.py.)
    """

    # ------------------------------------------------------- declarations

    def object_decl(self, c: Children) -> ast.ObjectDecl:
        body = _bare(c[3])
        if (
            type(body) is ast.TypeRef
            and len(body.factors) == 1
            and body.factors[0].text in SIZED_CONSTRUCTORS
        ):
            body = ast.SizedObject(body.factors[0], None, None, body.span)
        names = c[1]
        return ast.ObjectDecl(names[0], body, None, cover(c[0], c[3].span), names[1:])

    def obj_name(self, c: Children) -> ast.TypeRef:
        name = _name(c[0])
        return ast.TypeRef((name,), name.span)

    def obj_binary(self, c: Children) -> Any:
        left, op, right = c
        span = cover(left.span, right.span)
        if op.text == "*" and type(left) is ast.TypeRef and type(right) is ast.TypeRef:
            return ast.TypeRef(left.factors + right.factors, span)
        return ast.ObjBinary(op.text, _bare(left), _bare(right), span)

    def obj_ctor(self, c: Children) -> Any:
        head, args = c[0], c[1]
        options: tuple[ast.Option, ...] = c[2][0] if len(c) == 3 else ()
        span = cover(head, c[2][1] if len(c) == 3 else _last(c))
        if len(args) == 1 and not options:
            toks = args[0]
            size_tok = toks[-1]
            if size_tok.type != "NAME":
                size = None
                if len(toks) == 1 and size_tok.type == "INT":
                    size = object_size(size_tok.text)
                return ast.SizedObject(_name(head), size, cover(toks[0], size_tok), span)
        literals = tuple(self.literal(toks) for toks in args)
        return ast.ObjCtor(_name(head), literals, options, span)

    def ctor_args(self, c: Children) -> Children:
        return c

    def ctor_arg(self, c: Children) -> Children:
        return c

    def ctor_options(self, c: Children) -> tuple[tuple[ast.Option, ...], Token]:
        """The options and the closing brace (where the constructor's span ends)."""
        return (tuple(c[1]), c[2])

    def obj_apply(self, c: Children) -> ast.ObjApply:
        return ast.ObjApply(_name(c[0]), tuple(c[2]), cover(c[0], c[-1]))

    def obj_args(self, c: Children) -> Children:
        return [_bare(a) for a in c[::2]]

    def obj_kwarg(self, c: Children) -> ast.Option:
        if len(c) == 3:
            value: Any = self.literal(c[2:])
        else:
            items = tuple(ast.Literal("name", n.text, n.text, n.span) for n in c[3])
            value = ast.ValueList(items, cover(c[2], c[4]))
        return ast.Option(_name(c[0]), value, cover(c[0], _last(c)))

    def enum_set(self, c: Children) -> ast.EnumSet:
        return ast.EnumSet(tuple(c[1]), cover(c[0], c[2]))

    def morphism_decl(self, c: Children) -> ast.MorphismDecl:
        options: tuple[ast.Option, ...] = ()
        options_span = None
        family = family_args = init = None
        for extra in c[6:]:
            if type(extra) is _Options:
                options, options_span = extra.items, extra.span
            else:
                family, family_args, init = _init(extra)
        span = cover(c[0], _last(c))
        names = c[1]
        return ast.MorphismDecl(
            names[0],
            _bare(c[3]),
            _bare(c[5]),
            options,
            options_span,
            family,
            None,
            span,
            names[1:],
            family_args,
            init,
        )

    def morphism_decl_axes(self, c: Children) -> Era:
        axes = cover(c[-4], c[-1])
        decl = dataclasses.replace(self.morphism_decl(c[:-4]), span=cover(c[0], c[-1]))
        return Era(decl, _AXES_MESSAGE, axes, None)

    def init(self, c: Children) -> _Paren:
        return _Paren(_bare(c[1]), cover(c[0], c[1].span))

    def options(self, c: Children) -> _Options:
        items = tuple(c[1]) if len(c) == 3 else ()
        return _Options(items, cover(c[0], c[-1]))

    def option_list(self, c: Children) -> list[ast.Option]:
        return c[::2]

    def option(self, c: Children) -> ast.Option:
        return ast.Option(_name(c[0]), c[2], cover(c[0], c[2].span))

    def flag_option(self, c: Children) -> ast.Option:
        name = _name(c[0])
        return ast.Option(name, None, name.span)

    def string_literal(self, c: Children) -> ast.Literal:
        tok = c[0]
        return ast.Literal("string", tok.text, _unquote(tok.text), tok.span)

    def value_list(self, c: Children) -> ast.ValueList:
        items = tuple(c[1]) if len(c) == 3 else ()
        return ast.ValueList(items, cover(c[0], c[-1]))

    def value_call(self, c: Children) -> ast.ValueCall:
        items = tuple(c[2]) if len(c) == 4 else ()
        return ast.ValueCall(_name(c[0]), items, cover(c[0], c[-1]))

    def value_items(self, c: Children) -> Children:
        return c[::2]

    def let_decl(self, c: Children) -> ast.LetDecl:
        return ast.LetDecl(_name(c[1]), _bare(c[3]), None, cover(c[0], _last(c)), c[0].text)

    def where(self, c: Children) -> Token:
        tok: Token = c[0]
        return tok

    def program_header(self, c: Children) -> Header:
        params = kinds = None
        options: tuple[ast.Option, ...] = ()
        rest = c[2:]
        if type(rest[0]) is list:
            params = tuple(p[0] for p in rest[0])
            if any(p[1] is not None for p in rest[0]):
                kinds = tuple(p[1] for p in rest[0])
            rest = rest[1:]
        if type(rest[-1]) is _Options:
            options = rest[-1].items
            rest = rest[:-1]
        dom, cod = _bare(rest[1]), _bare(rest[3])
        return Header(_name(c[1]), params, dom, cod, cover(c[0], _last(c)), kinds or (), options)

    def params(self, c: Children) -> Children:
        return c[1] if len(c) == 3 else []

    def param_list(self, c: Children) -> Children:
        return [p if type(p) is tuple else (_name(p), None) for p in c[::2]]

    def typed_param(self, c: Children) -> tuple[ast.Name, ast.ObjectExpr]:
        return (_name(c[0]), c[2])

    def kind_name(self, c: Children) -> ast.TypeRef:
        return self.obj_name(c)

    def kind_mor(self, c: Children) -> ast.ObjApply:
        return ast.ObjApply(_name(c[0]), (_bare(c[2]), _bare(c[4])), cover(c[0], c[5]))

    def export_decl(self, c: Children) -> ast.ExportDecl:
        expr = _bare(c[1])
        span = cover(c[0], c[1].span)
        if type(expr) is ast.NameRef:
            return ast.ExportDecl(expr.name, span)
        return ast.ExportDecl(_first_name(expr), span, expr)

    def name_list(self, c: Children) -> tuple[ast.Name, ...]:
        return tuple(_name(t) for t in c[::2])

    def literal(self, c: Children) -> ast.Literal:
        tok = c[-1]
        span = cover(c[0], tok)
        if tok.type in ("TRUE", "FALSE"):
            return ast.Literal("bool", tok.text, tok.type == "TRUE", span)
        if tok.type == "UNIT":
            return ast.Literal("unit", tok.text, tok.text, span)
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
        span = cover(c[0].span, c[2].span)
        if c[1].text == "<<":  # `g << f` is `f >> g` (quivers): kept in the order data flows
            return ast.Compose(_bare(c[2]), _bare(c[0]), span, "<<")
        return ast.Compose(_bare(c[0]), _bare(c[2]), span, c[1].text)

    def method(self, c: Children) -> ast.Method:
        args = None
        if len(c) > 3:
            args = tuple(_bare(a) for a in c[4]) if len(c) == 6 else ()
        return ast.Method(_bare(c[0]), _name(c[2]), args, cover(c[0].span, _last(c)))

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
        return ast.KeywordArg(_name(c[0]), _bare(c[2]), cover(c[0], c[2].span))

    def list_arg(self, c: Children) -> ast.ListArg:
        items = tuple(_bare(a) for a in c[1]) if len(c) == 3 else ()
        return ast.ListArg(items, cover(c[0], c[-1]))

    def index_arg(self, c: Children) -> ast.IndexArg:
        return ast.IndexArg(_name(c[0]), _bare(c[2]), cover(c[0], c[3]))

    # ------------------------------------------------------ program steps

    def sample_step(self, c: Children) -> ast.SampleStep:
        targets, plate, source, options, span = _draw(c)
        return ast.SampleStep(targets[0], source, span, targets[1:], plate, options)

    def observe_step(self, c: Children) -> ast.ObserveStep:
        targets, plate, source, options, span = _draw(c)
        return ast.ObserveStep(targets[0], plate, source, span, targets[1:], options)

    def marginalize_step(self, c: Children) -> ast.MarginalizeStep:
        targets, plate, source, options, span = _draw(c)
        return ast.MarginalizeStep(targets[0], plate, source, options, (), span, span)

    def plate(self, c: Children) -> _Plate:
        return _Plate(_bare(c[1]), cover(c[0], c[1].span))

    def target_tuple(self, c: Children) -> _Targets:
        return _Targets(c[1], cover(c[0], c[2]))

    def call_step(self, c: Children) -> ast.CallStep:
        values = [_bare(a) for a in c[-2]] if type(c[-2]) is list else []
        static = c[4] if type(c[4]) is ast.Clause else None
        return ast.CallStep(
            _name(c[1]),
            _name(c[3]),
            tuple(v for v in values if type(v) is not ast.Clause),
            cover(c[0], c[-1]),
            static,
            tuple(v for v in values if type(v) is ast.Clause),
        )

    def call_args(self, c: Children) -> Children:
        return c[::2]

    def score_step(self, c: Children) -> ast.ScoreStep:
        return ast.ScoreStep(_name(c[1]), _bare(c[3]), cover(c[0], c[3].span))

    def let_step(self, c: Children) -> ast.LetStep:
        return ast.LetStep(_name(c[1]), _bare(c[3]), cover(c[0], c[3].span))

    def destructure_step(self, c: Children) -> ast.DestructureStep:
        return ast.DestructureStep(c[2], _bare(c[5]), cover(c[0], c[5].span))

    def return_one(self, c: Children) -> ast.ReturnStep:
        return ast.ReturnStep((_name(c[1]),), cover(c[0], c[1]))

    def return_many(self, c: Children) -> ast.ReturnStep:
        return ast.ReturnStep(c[2], cover(c[0], c[3]))

    def return_labelled(self, c: Children) -> ast.ReturnStep:
        labels = tuple(pair[0] for pair in c[2])
        values = tuple(pair[1] for pair in c[2])
        return ast.ReturnStep(values, cover(c[0], c[3]), labels)

    def labels(self, c: Children) -> Children:
        return c[::2]

    def label(self, c: Children) -> tuple[ast.Name, ast.Name]:
        return (_name(c[0]), _name(c[2]))

    def bare_bind(self, c: Children) -> Era:
        target = _name(c[0])
        plate = c[1].node if type(c[1]) is _Plate else None
        rest = c[2:] if plate is not None else c[1:]
        source = _bare(rest[1])
        options = rest[2].items if len(rest) == 3 else ()
        span = cover(c[0], _last(c))
        step = ast.SampleStep(target, source, span, (), plate, options)
        message = (
            f"`{target.text} <- ...` is a bind of quivers 0.5-0.10 (and earlier); since 0.11 "
            f"it is written `sample {target.text} <- ...`"
        )
        return Era(step, message, span, lambda src: "sample " + src(span))

    def era_draw(self, c: Children) -> Era:
        target, source = _name(c[1]), _bare(c[3])
        options = c[4].items if len(c) == 5 else ()
        span = cover(c[0], _last(c))
        step = ast.SampleStep(target, source, span, (), None, options)
        message = f"`draw {target.text} ~ ...` is quivers 0.1-0.4's `sample {target.text} <- ...`"
        tail = c[3].span

        def rewrite(src: Callable[[Span], str]) -> str:
            text = f"sample {target.text} <- {src(tail)}"
            return text + (" " + src(c[4].span) if len(c) == 5 else "")

        return Era(step, message, span, rewrite)

    def era_observe(self, c: Children) -> Era:
        targets, plate, source, options, span = _draw(c)
        step = ast.ObserveStep(targets[0], plate, source, span, targets[1:], options)
        message = "`observe y ~ F(...)` is quivers 0.1-0.4's `observe y <- F(...)`"
        tilde = next(t for t in c if type(t) is Token and t.type == "TILDE")

        def rewrite(src: Callable[[Span], str]) -> str:
            return (
                src(Span(span.start, tilde.start, 0, 0, 0, 0))
                + "<-"
                + src(Span(tilde.end, span.end, 0, 0, 0, 0))
            )

        return Era(step, message, span, rewrite)

    def era_object_equal(self, c: Children) -> Era:
        names = c[1]
        body = _bare(c[3])
        span = cover(c[0], c[3].span)
        decl = ast.ObjectDecl(names[0], body, None, span, names[1:])
        message = "`object X = ...` is quivers 0.1-0.4's `object X : ...`"
        equal = c[2]

        def rewrite(src: Callable[[Span], str]) -> str:
            return (
                src(Span(span.start, equal.start, 0, 0, 0, 0))
                + ":"
                + src(Span(equal.end, span.end, 0, 0, 0, 0))
            )

        return Era(decl, message, span, rewrite)

    def era_output(self, c: Children) -> Era:
        name = _name(c[1])
        span = cover(c[0], c[1])
        message = f"`output {name.text}` is quivers 0.1-0.4's `export {name.text}`"
        return Era(ast.ExportDecl(name, span), message, span, lambda src: f"export {name.text}")

    def era_schema(self, c: Children) -> Era:
        clause = _clause("schema", c)
        open_, close = c[2], c[4]
        span = clause.span
        message = (
            "`schema name[X : C] : ...` is quivers 0.1-0.10's; since 0.11 the parameters are "
            "in parentheses: `schema name (X : C) : ...`"
        )

        def rewrite(src: Callable[[Span], str]) -> str:
            head = src(Span(span.start, open_.start, 0, 0, 0, 0)).rstrip()
            inner = src(Span(open_.end, close.start, 0, 0, 0, 0))
            return f"{head} ({inner})" + src(Span(close.end, span.end, 0, 0, 0, 0))

        return Era(clause, message, span, rewrite)

    def era_quantale(self, c: Children) -> Era:
        name = _name(c[1])
        span = cover(c[0], c[1])
        clause = ast.Clause("composition", _name(c[0]), (name,), (name,), (), span)
        message = f"`quantale {name.text}` is quivers 0.1-0.4's `composition {name.text}` (0.11 on)"
        return Era(clause, message, span, lambda src: f"composition {name.text}")

    def output_step(self, c: Children) -> Era:
        name = _name(c[1])
        span = cover(c[0], c[1])
        message = "`output` is quivers 0.1-0.4's `return`"
        return Era(ast.ReturnStep((name,), span), message, span, lambda src: f"return {name.text}")

    # --------------------------------------------------------- arithmetic

    def binary(self, c: Children) -> ast.Binary:
        return ast.Binary(c[1].text, _bare(c[0]), _bare(c[2]), cover(c[0].span, c[2].span))

    def negate(self, c: Children) -> ast.Unary:
        return ast.Unary(c[0].text, _bare(c[1]), cover(c[0], c[1].span))

    def cmp_op(self, c: Children) -> Token:
        tok: Token = c[0]
        return tok

    def index(self, c: Children) -> ast.Index:
        base = self.var(c[:1])
        return ast.Index(base, tuple(_bare(a) for a in c[2]), cover(c[0], c[3]))

    def method_call(self, c: Children) -> ast.MethodCall:
        args = tuple(_bare(a) for a in c[4]) if len(c) == 6 else ()
        return ast.MethodCall(self.var(c[:1]), _name(c[2]), args, cover(c[0], c[-1]))

    def list_(self, c: Children) -> ast.ListExpr:
        items = tuple(_bare(a) for a in c[1]) if len(c) == 3 else ()
        return ast.ListExpr(items, cover(c[0], c[-1]))

    def tuple_(self, c: Children) -> ast.ListExpr:
        items = (_bare(c[1]), *(_bare(a) for a in c[3]))
        return ast.ListExpr(items, cover(c[0], c[-1]), True)

    def lambda_(self, c: Children) -> ast.Lambda:
        return ast.Lambda(_name(c[0]), _bare(c[2]), cover(c[0], c[2].span))

    def factor(self, c: Children) -> ast.Factor:
        binders = tuple(c[1])
        if len(c) == 4:
            return ast.Factor(binders, _bare(c[3]), (), cover(c[0], c[3].span))
        return ast.Factor(binders, None, tuple(c[4]), cover(c[0], c[5]))

    def factor_binders(self, c: Children) -> Children:
        return c[::2]

    def factor_binder(self, c: Children) -> tuple[ast.Name, ast.ObjectExpr]:
        return (_name(c[0]), _bare(c[2]))

    def factor_cases(self, c: Children) -> Children:
        return c[::2]

    def factor_case(self, c: Children) -> tuple[ast.Literal, ast.Arith]:
        return (self.literal(c[:1]), _bare(c[2]))

    # ------------------------------------------------------ older surfaces

    def era_type(self, c: Children) -> Era:
        name, ctor, size_tok = _name(c[1]), _name(c[3]), c[4]
        size = object_size(size_tok.text)
        modern = LEGACY_CONSTRUCTORS.get(ctor.text, ctor.text)
        span = cover(c[0], size_tok)
        ctor_name = ctor if modern == ctor.text else _synthetic(modern, ctor.span)
        body = ast.SizedObject(ctor_name, size, size_tok.span, cover(c[3], size_tok))
        decl = ast.ObjectDecl(name, body, None, span)
        message = (
            f"`type {name.text} = {ctor.text} {size_tok.text}` is quivers 0.1-0.4's object "
            f"declaration; since 0.11: `object {name.text} : {modern} {size_tok.text}`"
        )
        text = f"object {name.text} : {modern} {size_tok.text}"
        return Era(decl, message, span, lambda src: text)

    def era_object(self, c: Children) -> Era:
        names, size_tok = c[1], c[3]
        name = names[0]
        span = cover(c[0], size_tok)
        ctor = _synthetic(FINSET, size_tok.span)
        size = object_size(size_tok.text)
        body = ast.SizedObject(ctor, size, size_tok.span, size_tok.span)
        decl = ast.ObjectDecl(name, body, None, span, names[1:])
        written = ", ".join(n.text for n in names)
        message = (
            f"`object {written} : {size_tok.text}` (a bare cardinality) is quivers 0.1-0.4; "
            f"since 0.11: `object {written} : FinSet {size_tok.text}`"
        )
        text = f"object {written} : FinSet {size_tok.text}"
        return Era(decl, message, span, lambda src: text)

    def era_role_decl(self, c: Children) -> Era:
        role_tok, name = c[0], _name(c[1])
        rest = c[2:]
        replicas = None
        if type(rest[0]) is list:  # the `[N]` of a replicated declaration
            replicas = rest[0]
            rest = rest[1:]
        written = (_bare(rest[1]), _bare(rest[3]))
        dom, cod = _space_call(written[0]), _space_call(written[1])
        options: tuple[ast.Option, ...] = ()
        family_init = None
        axes = None
        for extra in rest[4:]:
            if type(extra) is _Options:
                options = options + extra.items
            elif type(extra) is _Axes:
                axes = extra
            else:
                family_init = extra
        role = _ERA_ROLES.get(role_tok.text, role_tok.text)
        role_name = _synthetic("role", role_tok.span)
        role_value = ast.Literal("name", role, role, role_tok.span)
        all_options = (ast.Option(role_name, role_value, role_tok.span), *options)
        if replicas is not None:
            count = replicas[1]
            key = _synthetic("replicate", count.span)
            all_options += (ast.Option(key, self.literal([count]), count.span),)
        family, family_args, init = _init(family_init) if family_init else (None, None, None)
        span = cover(role_tok, _last(c))
        decl = ast.MorphismDecl(
            name, dom, cod, all_options, None, family, None, span, (), family_args, init
        )
        message = (
            f"`{role_tok.text} {name.text} : ...` declares a morphism by its role, as in "
            f"quivers 0.1-0.10; since 0.11: `morphism {name.text} : ... [role={role}]`"
        )

        def rewrite(src: Callable[[Span], str]) -> str:
            opts = [f"role={role}"]
            if replicas is not None:
                opts.append(f"replicate={replicas[1].text}")
            opts += [src(o.span) for o in options]
            texts = [
                src(side.span) if side is as_written else _sized_text(side)
                for side, as_written in ((dom, written[0]), (cod, written[1]))
            ]
            sides = " -> ".join(texts)
            text = f"morphism {name.text} : {sides} [{', '.join(opts)}]"
            if family_init is not None:
                text += " " + src(family_init.span)
            if axes is not None:
                text += " " + src(axes.span)
            return text

        notes = () if axes is None else ((_AXES_MESSAGE, axes.span),)
        return Era(decl, message, span, rewrite, notes)

    def era_replicas(self, c: Children) -> Children:
        return c

    def era_axes(self, c: Children) -> _Axes:
        return _Axes(c[2], cover(c[0], c[3]))

    def era_program_size(self, c: Children) -> Era:
        size_tok = next(t for t in c if type(t) is Token and t.type == "INT")
        at = c.index(size_tok)
        size = object_size(size_tok.text)
        ctor = _synthetic(FINSET, size_tok.span)
        cod = ast.SizedObject(ctor, size, size_tok.span, size_tok.span)
        header = self.program_header([*c[:at], _Paren(cod, size_tok.span), *c[at + 1 :]])
        message = (
            f"`-> {size_tok.text}` (a bare cardinality as a program's codomain) is quivers "
            f"0.1-0.10's; since 0.11 it is the finite set `FinSet {size_tok.text}`"
        )
        text = f"FinSet {size_tok.text}"
        return Era(header, message, size_tok.span, lambda src: text)

    def era_observe_via(self, c: Children) -> Era:
        first = c[1]
        targets = first.names if type(first) is _Targets else (_name(first),)
        target, plate = targets[0], c[2].node
        source = _bare(c[6])
        options = c[7].items if len(c) == 8 else ()
        span = cover(c[0], _last(c))
        step = ast.ObserveStep(target, plate, source, span, targets[1:], options)
        via = cover(c[3], c[4])
        message = (
            f"`via {c[4].text}` (the index of a response plate into a grouping plate) is "
            "quivers 0.5-0.10's; no release since 0.11 has it, so it is not rewritten"
        )
        return Era(step, message, via, None)

    def era_observe_for(self, c: Children) -> Era:
        target, source, plate = _name(c[1]), _bare(c[6]), _bare(c[10])
        span = cover(c[0], _last(c))
        step = ast.ObserveStep(target, plate, source, span)
        message = (
            f"`observe {target.text}[{c[3].text}] ~ ... for {c[3].text} in ...` is a form of "
            "quivers 0.4's development (no release's grammar has it); since 0.11 a plate is "
            f"written `observe {target.text} : Plate <- ...`"
        )
        dist, plate_span = c[6].span, c[10].span

        def rewrite(src: Callable[[Span], str]) -> str:
            return f"observe {target.text} : {src(plate_span)} <- {src(dist)}"

        return Era(step, message, span, rewrite)

    def era_draw_plate(self, c: Children) -> Era:
        target, plate = _name(c[1]), _bare(c[3])
        cod = c[5]
        source = _bare(c[7])
        options = c[8].items if len(c) == 9 else ()
        span = cover(c[0], _last(c))
        step = ast.SampleStep(target, source, span, (), plate, options)
        unit = type(cod) is Token and cod.text == "1"
        message = (
            f"`draw {target.text} : Plate -> ... ~ f` (a plate draw of quivers 0.4's "
            "development, which no release's grammar has) is "
            f"`sample {target.text} : Plate <- f` since 0.11"
        )
        if not unit:
            message += "; a draw of more than one value per level is not rewritten"
            return Era(step, message, span, None)
        plate_span, tail = c[3].span, c[7].span
        opts = c[8].span if len(c) == 9 else None

        def rewrite(src: Callable[[Span], str]) -> str:
            text = f"sample {target.text} : {src(plate_span)} <- {src(tail)}"
            return text + (" " + src(opts) if opts is not None else "")

        return Era(step, message, span, rewrite)

    def era_marginalize_bare(self, c: Children) -> Era:
        target = _name(c[1])
        span = cover(c[0], c[1])
        message = (
            f"a bare `marginalize {target.text}` is a form of quivers 0.4's development (no "
            "release's grammar has it); since 0.11 a marginalize names its latent's family, "
            "`marginalize z : T <- F(...)`, with its scope indented below; not rewritten"
        )
        return Era(None, message, span, None)  # it names a site bound above: binds nothing

    # ------------------------------------------------------ generic clauses

    def g_static_item(self, c: Children) -> Any:
        """`coverage=total` in a handler's brackets is an option, as in a morphism's;
        any other static item (a type, a whole number) is the generic clause's."""
        if len(c) == 3 and type(c[1]) is Token and c[1].type == "EQUAL":
            return ast.Option(_name(c[0]), c[2], cover(c[0], c[2].span))
        return _clause("static_item", c)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("g_"):
            kind = name[2:]
            return lambda c: _clause(kind, c)
        raise AttributeError(name)

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


class _Axes(NamedTuple):
    names: Children
    span: Span


_AXES_MESSAGE = (
    "`over (...)` (the axes a matrix family's prior binds) is quivers 0.5-0.10's; no "
    "release since 0.11 has it, so it is not rewritten"
)


#: quivers 0.1-0.10's role keywords and the role each declares today.
_ERA_ROLES = {
    "continuous": "kernel",
    "stochastic": "kernel",
    "discrete": "kernel",
    "kernel": "kernel",
    "embed": "embed",
    "latent": "latent",
}


def _space_call(side: Any) -> Any:
    """A side written `Euclidean(D)` (quivers 0.3-0.9's space of |D| dimensions, which
    no grammar from 0.11 on has) as the sized object it stands for, `Real D`; any other
    side as it is."""
    if (
        isinstance(side, ast.ObjApply)
        and side.func.text in LEGACY_CONSTRUCTORS
        and len(side.args) == 1
        and isinstance(side.args[0], ast.TypeRef)
        and len(side.args[0].factors) == 1
    ):
        size = side.args[0].factors[0]
        modern = _synthetic(LEGACY_CONSTRUCTORS[side.func.text], side.func.span)
        arg = ast.Literal("name", size.text, size.text, size.span)
        return ast.ObjCtor(modern, (arg,), (), side.span)
    return side


def _sized_text(side: ast.ObjCtor) -> str:
    """A side `_space_call` rewrote, as 0.11 writes it: `Real D`."""
    return f"{side.constructor.text} {' '.join(a.raw for a in side.args)}"


def _synthetic(text: str, at: Span) -> ast.Name:
    """A name an older surface implies but does not write (`kernel f` is `role=kernel`):
    empty, at the start of what implies it."""
    return ast.Name(
        text, Span(at.start, at.start, at.start_line, at.start_col, at.start_line, at.start_col)
    )


def _init(node: _Paren) -> tuple[ast.Name | None, ast.Call | None, ast.Expr | None]:
    """A morphism's `~ ...`: (family name, family call, other initialiser)."""
    expr = node.node
    if type(expr) is ast.NameRef:
        return expr.name, None, None
    if type(expr) is ast.Call:
        return expr.callee, expr, None
    return None, None, expr


def _draw(
    c: Children,
) -> tuple[tuple[ast.Name, ...], ast.ObjectExpr | None, ast.Expr, tuple[ast.Option, ...], Span]:
    """The parts of a sample/observe/marginalize line: targets, plate, source, options."""
    first = c[1]
    targets = first.names if type(first) is _Targets else (_name(first),)
    plate = None
    rest = c[2:]
    if type(rest[0]) is _Plate:
        plate = rest[0].node
        rest = rest[1:]
    source = _bare(rest[1])
    options = rest[2].items if len(rest) == 3 else ()
    return targets, plate, source, options, cover(c[0], _last(c))


def _unquote(raw: str) -> str:
    body = raw[1:-1]
    if "\\" not in body:
        return body
    out = []
    i = 0
    while i < len(body):
        if body[i] == "\\" and i + 1 < len(body):
            out.append({"n": "\n", "t": "\t"}.get(body[i + 1], body[i + 1]))
            i += 2
        else:
            out.append(body[i])
            i += 1
    return "".join(out)


def _first_name(expr: Any) -> ast.Name:
    while type(expr) is not ast.NameRef:
        if type(expr) is ast.Call:
            return expr.callee
        expr = getattr(expr, "left", None) or getattr(expr, "receiver", None)
    return expr.name


def _flatten(children: Children, out: list[object]) -> None:
    for child in children:
        kind = type(child)
        if kind is Token:
            if child.type == "NAME":
                out.append(_name(child))
            elif child.type in _VALUE_TOKENS:
                if child.type == "STRING":
                    out.append(ast.Literal("string", child.text, _unquote(child.text), child.span))
                else:
                    number = float(child.text) if child.type == "FLOAT" else parse_int(child.text)
                    out.append(ast.Literal(child.type.lower(), child.text, number or 0, child.span))
        elif kind is list or kind is tuple:
            _flatten(child, out)
        elif kind is _Options:
            out.extend(child.items)
        elif kind is _Paren:
            out.append(child.node)
        elif kind is ast.Clause and child.kind in _TRANSPARENT:
            out.extend(child.parts)
        else:
            out.append(child)


#: Helper rules whose parts belong to the clause around them.
_TRANSPARENT = frozenset(
    {
        "premises",
        "entails",
        "schema_params",
        "contraction_inputs",
        "pragma_entries",
        "value_params",
        "static_list",
        "static_items",
        "index_terms",
        "row_entries",
        "words",
        "lex_category",
        "binds",
        "scoped",
        "rule_args",
        "clause_params",
        "values",
        "signature_type",
        "sort_kind",
        "edge_arrow",
        "grade",
        "line_pragma",
        "type",
        "type_product",
        "type_atom",
        "static_item",
        "index_term",
        "row",
        "sort",
        "effect_ref",
    }
)


def _clause(kind: str, c: Children) -> ast.Clause:
    first = c[0]
    keyword = None
    start = 0
    if type(first) is Token and first.type not in _VALUE_TOKENS and first.type != "NAME":
        keyword = _name(first)  # a keyword, or `#[` of a pragma
        start = 1
    parts: list[object] = []
    _flatten(c[start:], parts)
    names: tuple[ast.Name, ...] = ()
    declares = _DECLARES.get(kind)
    if declares == "first":
        found = next((p for p in parts if type(p) is ast.Name), None)
        names = (found,) if found is not None else ()
    elif declares == "all":
        names = tuple(p for p in parts if type(p) is ast.Name)
    return ast.Clause(kind, keyword, names, tuple(parts), (), cover(_start(first), _last(c)))
