"""Printing syntax nodes in the canonical spelling: one line each, one space around operators.

Parentheses are not in the tree, so they are printed exactly where the
tree needs them to read back the same (precedence and associativity),
never elsewhere: `(a >> b) @ c` keeps its parentheses, `((a))` loses them.
"""

from __future__ import annotations

from typing import assert_never

from qvr_core.syntax import ast

INDENT = "    "

# Binding strength: higher binds tighter.
_EXPR_PRECEDENCE = {ast.Compose: 1, ast.Tensor: 2, ast.Method: 3}
_ARITH_PRECEDENCE = {
    "||": -2,
    "&&": -1,
    **dict.fromkeys(("==", "!=", "<", "<=", ">", ">="), 0),
    "+": 1,
    "-": 1,
    "*": 2,
    "/": 2,
    "%": 2,
}
_UNARY_PRECEDENCE = 3
_ATOM = 4
_OBJECT_PRECEDENCE = {"+": 1, "/": 2, "\\": 2, "*": 3}


class Unprintable(TypeError):
    """A node the printer has no canonical spelling for: the formatter keeps it as written."""


def declaration(decl: ast.Decl) -> str:
    """A declaration's first line: the whole of it, or a program's header."""
    match decl:
        case ast.ObjectDecl():
            return f"object {_names(decl.names)} : {object_body(decl.body)}"
        case ast.MorphismDecl():
            text = f"morphism {_names(decl.names)} : {obj(decl.dom)} -> {obj(decl.cod)}"
            if decl.options_span is not None:
                text += " " + options(decl.options)
            if decl.family_args is not None:
                text += f" ~ {expr(decl.family_args)}"
            elif decl.family is not None:
                text += f" ~ {decl.family.text}"
            elif decl.init is not None:
                text += f" ~ {expr(decl.init)}"
            return text
        case ast.LetDecl():
            if decl.where:
                raise Unprintable("a `where` block")
            return f"{decl.keyword} {decl.name.text} = {expr(decl.expr)}"
        case ast.ProgramDecl():
            params = ""
            if decl.params is not None:
                kinds = decl.param_kinds or (None,) * len(decl.params)
                params = (
                    " ("
                    + ", ".join(
                        p.text if k is None else f"{p.text} : {param_kind(k)}"
                        for p, k in zip(decl.params, kinds, strict=True)
                    )
                    + ")"
                )
            text = f"program {decl.name.text}{params} : {obj(decl.dom)} -> {obj(decl.cod)}"
            if decl.options:
                text += " " + options(decl.options)
            return text
        case ast.ExportDecl():
            return f"export {expr(decl.expr) if decl.expr is not None else decl.name.text}"
        case ast.OtherDecl():
            raise Unprintable(f"a {decl.clause.kind} declaration")
        case _:
            assert_never(decl)


def step(node: ast.Step) -> str:
    """One program step (a marginalize step's first line), without its indentation."""
    match node:
        case ast.SampleStep():
            return _draw("sample", node, node.plate, node.options)
        case ast.ObserveStep():
            return _draw("observe", node, node.declared, node.options)
        case ast.MarginalizeStep():
            return _draw("marginalize", node, node.plate, node.options)
        case ast.LetStep():
            return f"let {node.target.text} = {arith(node.value)}"
        case ast.ScoreStep():
            return f"score {node.target.text} = {arith(node.value)}"
        case ast.CallStep():
            if node.static is not None or node.constructs:
                raise Unprintable("a call with static or `construct` arguments")
            args = ", ".join(arith(a) for a in node.args)
            return f"let {node.target.text} <- {node.callee.text}({args})"
        case ast.DestructureStep():
            names = ", ".join(t.text for t in node.targets)
            return f"let ({names}) = {arith(node.value)}"
        case ast.ReturnStep():
            if node.labels:
                pairs = zip(node.labels, node.values, strict=True)
                return "return (" + ", ".join(f"{a.text}: {b.text}" for a, b in pairs) + ")"
            if len(node.values) == 1:
                return f"return {node.values[0].text}"
            return "return (" + ", ".join(v.text for v in node.values) + ")"
        case _:
            assert_never(node)


def _draw(
    keyword: str,
    node: ast.SampleStep | ast.ObserveStep | ast.MarginalizeStep,
    plate: ast.ObjectExpr | None,
    opts: tuple[ast.Option, ...],
) -> str:
    more = () if isinstance(node, ast.MarginalizeStep) else node.more_targets
    targets = (node.target, *more)
    text = f"{keyword} {targets[0].text if len(targets) == 1 else '(' + _names(targets) + ')'}"
    if plate is not None:
        text += f" : {obj(plate)}"
    text += f" <- {expr(node.source)}"
    if opts:
        text += " " + options(opts)
    return text


def _names(names: tuple[ast.Name, ...]) -> str:
    return ", ".join(n.text for n in names)


def object_body(body: ast.ObjectBody) -> str:
    return obj(body)


def typeref(t: ast.TypeRef) -> str:
    return " * ".join(f.text for f in t.factors)


def obj(node: ast.ObjectExpr) -> str:
    """An object expression."""
    match node:
        case ast.TypeRef():
            return typeref(node)
        case ast.SizedObject():
            if node.size is None:
                raise Unprintable("an object without a valid size")
            return f"{node.constructor.text} {node.size}"
        case ast.ObjCtor():
            text = " ".join([node.constructor.text, *(a.raw for a in node.args)])
            if node.options:
                text += " {" + ", ".join(option(o) for o in node.options) + "}"
            return text
        case ast.ObjApply():
            args = ", ".join(option(a) if isinstance(a, ast.Option) else obj(a) for a in node.args)
            if node.func.text == "Mor":
                return f"Mor[{args}]"
            return f"{node.func.text}({args})"
        case ast.EnumSet():
            return "{" + _names(node.elements) + "}"
        case ast.ObjBinary():
            level = _OBJECT_PRECEDENCE[node.op]
            left = _wrap(obj(node.left), _obj_level(node.left) < level)
            right = _wrap(obj(node.right), _obj_level(node.right) <= level)
            return f"{left} {node.op} {right}"
        case _:
            assert_never(node)


def param_kind(kind: ast.ObjectExpr) -> str:
    return obj(kind)


def _obj_level(node: object) -> int:
    if isinstance(node, ast.ObjBinary):
        return _OBJECT_PRECEDENCE[node.op]
    if isinstance(node, ast.TypeRef) and len(node.factors) > 1:
        return _OBJECT_PRECEDENCE["*"]
    return _ATOM


def options(opts: tuple[ast.Option, ...]) -> str:
    return "[" + ", ".join(option(o) for o in opts) + "]"


def option(o: ast.Option | ast.KeywordArg) -> str:
    if o.value is None:
        return o.key.text
    return f"{o.key.text}={value(o.value)}"


def value(v: ast.Literal | ast.ValueList | ast.ValueCall | ast.Arg) -> str:
    match v:
        case ast.Literal():
            return v.raw
        case ast.ValueList():
            return "[" + ", ".join(value(i) for i in v.items) + "]"
        case ast.ValueCall():
            return f"{v.func.text}({', '.join(value(i) for i in v.args)})"
        case _:
            return expr(v)


def expr(node: ast.Arg) -> str:
    """A morphism expression (or a literal argument)."""
    match node:
        case ast.NameRef():
            return node.name.text
        case ast.Literal():
            return node.raw
        case ast.Call():
            args = [expr(a) for a in node.args] + [option(k) for k in node.kwargs]
            return f"{node.callee.text}({', '.join(args)})"
        case ast.ListArg():
            return "[" + ", ".join(expr(a) for a in node.items) + "]"
        case ast.IndexArg():
            return f"{node.name.text}[{obj(node.index)}]"
        case ast.Method():
            receiver = _wrap(expr(node.receiver), _expr_level(node.receiver) < 3)
            text = f"{receiver}.{node.method.text}"
            if node.args is not None:
                text += "(" + ", ".join(expr(a) for a in node.args) + ")"
            return text
        case ast.Compose(op="<<"):  # stored in the order data flows: `right << left`
            level = _EXPR_PRECEDENCE[ast.Compose]
            written_left = _wrap(expr(node.right), _expr_level(node.right) < level)
            written_right = _wrap(expr(node.left), _expr_level(node.left) <= level)
            return f"{written_left} << {written_right}"
        case ast.Compose() | ast.Tensor():
            # a loop along the left spine: a long flat chain does not recurse per operator
            kind = type(node)
            level = _EXPR_PRECEDENCE[kind]
            rights = []
            chain: ast.Expr = node
            while (
                isinstance(chain, ast.Compose | ast.Tensor)
                and type(chain) is kind
                and not (isinstance(chain, ast.Compose) and chain.op == "<<")  # a unit: above
            ):
                op = chain.op if isinstance(chain, ast.Compose) else "@"
                right = _wrap(expr(chain.right), _expr_level(chain.right) <= level)
                rights.append(f" {op} {right}")
                chain = chain.left
            first = _wrap(expr(chain), _expr_level(chain) < level)
            return first + "".join(reversed(rights))
        case _:
            assert_never(node)


def arith(node: ast.Arith) -> str:
    """A program `let` value."""
    match node:
        case ast.Number():
            return node.raw
        case ast.Literal():
            return node.raw
        case ast.Var():
            return node.name.text
        case ast.Apply():
            return f"{node.func.text}({', '.join(arith(a) for a in node.args)})"
        case ast.Index():
            return f"{node.base.name.text}[{', '.join(arith(a) for a in node.indices)}]"
        case ast.MethodCall():
            args = ", ".join(arith(a) for a in node.args)
            return f"{node.receiver.name.text}.{node.method.text}({args})"
        case ast.ListExpr():
            items = ", ".join(arith(a) for a in node.items)
            return f"({items})" if node.tuple else f"[{items}]"
        case ast.Unary():
            operand = arith(node.operand)
            if _arith_level(node.operand) < _UNARY_PRECEDENCE:
                operand = f"({operand})"
            return f"not {operand}" if node.op == "not" else node.op + operand
        case ast.Binary():
            # a loop along the left spine of one precedence level, as for expressions
            level = _ARITH_PRECEDENCE[node.op]
            parts = []
            chain: ast.Arith = node
            while isinstance(chain, ast.Binary) and _ARITH_PRECEDENCE[chain.op] == level:
                right = _wrap(arith(chain.right), _arith_level(chain.right) <= level)
                parts.append(f" {chain.op} {right}")
                chain = chain.left
            first = _wrap(arith(chain), _arith_level(chain) < level)
            return first + "".join(reversed(parts))
        case ast.Lambda() | ast.Factor():
            raise Unprintable(f"a {type(node).__name__.lower()} value")
        case _:
            assert_never(node)


def _expr_level(node: object) -> int:
    return _EXPR_PRECEDENCE.get(type(node), _ATOM)


def _arith_level(node: object) -> int:
    if isinstance(node, ast.Binary):
        return _ARITH_PRECEDENCE[node.op]
    if isinstance(node, ast.Unary):
        return _UNARY_PRECEDENCE
    return _ATOM


def _wrap(text: str, parenthesize: bool) -> str:
    return f"({text})" if parenthesize else text
