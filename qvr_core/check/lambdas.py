"""The lambdas of a model's `let`: the function argument of `map` and `fold`, written in
the call (`map(xs, x -> x - 1.0)`) or bound by a `let` (`let f = x -> x - 1.0`, then
`map(xs, f)`).

quivers 0.25.2 (`dsl/qiec_lowering.py`, `_collection_lambda`) takes either: a let whose
value is a lambda binds no value but a macro, which `map` and `fold` read in place of an
inline lambda (`_lambda_macros`). So here such a let is not a value of the model (no
step, no site of the diagram): the checker keeps its lambda by name, types its body at
each `map` or `fold` that names it (its parameters are that call's), and the value's
term is lowered with the lambda put in place of its name (`inline`). Read anywhere else,
as a value, it is an error where it is read.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, assert_never

from qvr_core.builtins.functions import LIFTED
from qvr_core.check.context import SymbolKey
from qvr_core.syntax import ast
from qvr_core.text import rules

if TYPE_CHECKING:
    from qvr_core.check.passes import ModelPass

#: Where each function of `LIFTED` takes its lambda: `map(xs, f)`, `fold(xs, init, f)`.
LAMBDA_AT: dict[str, int] = {name: len(fn.params) - 1 for name, fn in LIFTED.items()}


def innermost(node: ast.Arith) -> ast.Arith:
    """The body of a lambda under its parameters (`acc -> x -> body` gives `body`); any
    other node is itself."""
    while isinstance(node, ast.Lambda):
        node = node.body
    return node


def lambda_argument(mc: ModelPass, node: ast.Arith) -> ast.Lambda | None:
    """The lambda a `map` or `fold` is given: written there, or the one a `let` of the
    program bound to the name written there (the name is read: go to definition, rename
    and the unused check see it). None for anything else, which the caller reports."""
    if isinstance(node, ast.Lambda):
        return node
    if not isinstance(node, ast.Var):
        return None
    name = node.name.text
    found = mc.lambdas.get(name)
    if found is None or name in mc.binders:  # a binder of the same name shadows it
        return None
    mc.ctx.ref(node.name.span, SymbolKey(name, mc.pc.scope))
    mc.pc.use(name)
    return found


def too_many_parameters(mc: ModelPass, f: ast.Lambda, written: ast.Arith, usage: str) -> bool:
    """Whether the body of the lambda `f` (its last parameter's) is a lambda again, which
    no function takes: quivers' map gives its lambda one parameter and fold two, and a
    lambda is no value. Reported where the lambda is named, or at the extra lambda."""
    if not isinstance(f.body, ast.Lambda):
        return False
    at = written.span if isinstance(written, ast.Var) else f.body.span
    mc.ctx.report(
        rules.WRONG_KIND,
        f"this lambda takes a parameter more than {usage} gives it: its body "
        f"{mc.ctx.source(f.body.span)} is a lambda, not a value",
        at,
    )
    return True


def inline(node: ast.Arith, lambdas: dict[str, ast.Lambda]) -> ast.Arith:
    """`node` with each let-bound lambda named as the function of a `map` or `fold` put in
    place of its name, as quivers substitutes its macro: the form `terms.lower` lowers.
    Its spans stay where the lambda is written (the runtime's messages name that line)."""
    if not lambdas:
        return node

    def go(n: ast.Arith) -> ast.Arith:
        match n:
            case ast.Number() | ast.Var() | ast.Literal():
                return n
            case ast.Unary(operand=o):
                return replace(n, operand=go(o))
            case ast.Binary(left=left, right=right):
                return replace(n, left=go(left), right=go(right))
            case ast.Apply(func=func, args=args):
                at = LAMBDA_AT.get(func.text)
                out: list[ast.Arith] = []
                for i, a in enumerate(args):
                    if i == at and isinstance(a, ast.Var) and a.name.text in lambdas:
                        out.append(lambdas[a.name.text])
                    else:
                        out.append(go(a))
                return replace(n, args=tuple(out))
            case ast.MethodCall(args=args):
                return replace(n, args=tuple(go(a) for a in args))
            case ast.Index(indices=indices):
                return replace(n, indices=tuple(go(i) for i in indices))
            case ast.ListExpr(items=items):
                return replace(n, items=tuple(go(i) for i in items))
            case ast.Lambda(body=body):
                return replace(n, body=go(body))
            case ast.Factor(body=body, cases=cases):
                return replace(
                    n,
                    body=None if body is None else go(body),
                    cases=tuple((label, go(value)) for label, value in cases),
                )
            case _:
                assert_never(n)

    return go(node)


@dataclass(frozen=True)
class LambdaValue:
    """The type a let-bound lambda's name shows (hover, the outline): no value of the
    model, only the lambda as written, which `map` and `fold` read."""

    text: str  # the lambda as written, `x -> x - 1.0`

    @property
    def label(self) -> str:
        return f"lambda {self.text}"
