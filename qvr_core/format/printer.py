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
_EXPR_PRECEDENCE = {ast.Compose: 1, ast.Tensor: 2}
_ARITH_PRECEDENCE = {"+": 1, "-": 1, "*": 2, "/": 2}
_UNARY_PRECEDENCE = 3
_ATOM = 4


def declaration(decl: ast.Decl) -> str:
    """A declaration's first line: the whole of it, or a program's header."""
    match decl:
        case ast.ObjectDecl():
            return f"object {decl.name.text} : {object_body(decl.body)}"
        case ast.MorphismDecl():
            text = f"morphism {decl.name.text} : {typeref(decl.dom)} -> {typeref(decl.cod)}"
            if decl.options_span is not None:
                text += " [" + ", ".join(option(o) for o in decl.options) + "]"
            if decl.family is not None:
                text += f" ~ {decl.family.text}"
            return text
        case ast.LetDecl():
            return f"let {decl.name.text} = {expr(decl.expr)}"
        case ast.ProgramDecl():
            params = ""
            if decl.params is not None:
                params = " (" + ", ".join(p.text for p in decl.params) + ")"
            return f"program {decl.name.text}{params} : {typeref(decl.dom)} -> {typeref(decl.cod)}"
        case ast.ExportDecl():
            return f"export {decl.name.text}"
        case _:
            assert_never(decl)


def step(node: ast.Step) -> str:
    """One program step, without its indentation."""
    match node:
        case ast.SampleStep():
            return f"sample {node.target.text} <- {expr(node.source)}"
        case ast.ObserveStep():
            declared = typeref(node.declared)
            return f"observe {node.target.text} : {declared} <- {expr(node.source)}"
        case ast.LetStep():
            return f"let {node.target.text} = {arith(node.value)}"
        case ast.DestructureStep():
            names = ", ".join(t.text for t in node.targets)
            return f"let ({names}) = {arith(node.value)}"
        case ast.ReturnStep():
            if len(node.values) == 1:
                return f"return {node.values[0].text}"
            return "return (" + ", ".join(v.text for v in node.values) + ")"
        case _:
            assert_never(node)


def object_body(body: ast.ObjectBody) -> str:
    if isinstance(body, ast.SizedObject):
        return f"{body.constructor.text} {body.size}"
    return typeref(body)


def typeref(t: ast.TypeRef) -> str:
    return " * ".join(f.text for f in t.factors)


def option(o: ast.Option | ast.KeywordArg) -> str:
    return f"{o.key.text}={o.value.raw}"


def expr(node: ast.Expr | ast.Literal) -> str:
    """A morphism expression (or a literal argument)."""
    match node:
        case ast.NameRef():
            return node.name.text
        case ast.Literal():
            return node.raw
        case ast.Call():
            args = [expr(a) for a in node.args] + [option(k) for k in node.kwargs]
            return f"{node.callee.text}({', '.join(args)})"
        case ast.Compose() | ast.Tensor():
            # a loop along the left spine: a long flat chain does not recurse per operator
            kind = type(node)
            level = _EXPR_PRECEDENCE[kind]
            op = " >> " if kind is ast.Compose else " @ "
            rights = []
            chain: ast.Expr | ast.Literal = node
            while isinstance(chain, ast.Compose | ast.Tensor) and type(chain) is kind:
                rights.append(_wrap(expr(chain.right), _expr_level(chain.right) <= level))
                chain = chain.left
            first = _wrap(expr(chain), _expr_level(chain) < level)
            return op.join([first, *reversed(rights)])
        case _:
            assert_never(node)


def arith(node: ast.Arith) -> str:
    """A program `let` value."""
    match node:
        case ast.Number():
            return node.raw
        case ast.Var():
            return node.name.text
        case ast.Apply():
            return f"{node.func.text}({', '.join(arith(a) for a in node.args)})"
        case ast.Unary():
            operand = arith(node.operand)
            return node.op + _wrap(operand, _arith_level(node.operand) < _UNARY_PRECEDENCE)
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
        case _:
            assert_never(node)


def _expr_level(node: ast.Expr | ast.Literal) -> int:
    return _EXPR_PRECEDENCE.get(type(node), _ATOM)


def _arith_level(node: ast.Arith) -> int:
    if isinstance(node, ast.Binary):
        return _ARITH_PRECEDENCE[node.op]
    if isinstance(node, ast.Unary):
        return _UNARY_PRECEDENCE
    return _ATOM


def _wrap(text: str, parenthesize: bool) -> str:
    return f"({text})" if parenthesize else text
