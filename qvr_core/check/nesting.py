"""How deeply lets and programs nest once the lets and programs they use are put in place.

A let may use a let that uses a let, thousands deep, and each may be
declared before or after the one it uses. The checker types them in
`dependency_order` (what a declaration uses first), so typing never
follows a chain of uses and nothing overflows Python's stack however long
the chain. Drawing and running a program do put each let in place, so
there the depth counts: `inlined_depths` measures it (expression levels,
plus the depth of every let or program used by name) without recursion,
and `MAX_INLINED_DEPTH` is the one documented limit beyond which the
diagram folds a let into one node and the runtime refuses to compile
("nested too deeply"). Everything here is iterative.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from qvr_core.syntax import ast

#: Deepest nesting of a program or let, its lets and programs put in place, that the
#: runtime compiles (each level is a module call in every forward pass). Documented
#: in docs/language.md.
MAX_INLINED_DEPTH = 128

Uses = ast.LetDecl | ast.ProgramDecl


def _roots(decl: Uses) -> Iterator[ast.Expr]:
    if isinstance(decl, ast.LetDecl):
        yield decl.expr
        return
    for step in decl.steps:
        if isinstance(step, ast.SampleStep | ast.ObserveStep):
            yield step.source


def _children(node: object) -> tuple[object, ...]:
    match node:
        case ast.Compose() | ast.Tensor():
            return (node.left, node.right)
        case ast.Call():
            return node.args
        case _:
            return ()


def _used_names(decl: Uses) -> Iterator[str]:
    """Names of morphisms, lets and programs `decl` uses (callees included), in order."""
    stack: list[object] = list(_roots(decl))
    while stack:
        node = stack.pop()
        if type(node) is ast.NameRef:
            yield node.name.text
        elif type(node) is ast.Call:
            yield node.callee.text
        stack.extend(_children(node))


def dependency_order(decls: list[Uses], top: dict[str, Any]) -> list[Uses]:
    """`decls` with every let or program after the ones (in `decls`) it uses.

    A depth-first walk with its own stack; in a cycle the order is where the
    walk found it (the checker reports the cycle). Otherwise source order is kept.
    """
    wanted = {id(d) for d in decls}
    placed: set[int] = set()
    order: list[Uses] = []
    for root in decls:
        if id(root) in placed:
            continue
        placed.add(id(root))
        stack = [(root, _uses(root, top, wanted))]
        while stack:
            decl, pending = stack[-1]
            for dep in pending:
                if id(dep) not in placed:
                    placed.add(id(dep))
                    stack.append((dep, _uses(dep, top, wanted)))
                    break
            else:
                stack.pop()
                order.append(decl)
    return order


def _uses(decl: Uses, top: dict[str, Any], wanted: set[int]) -> Iterator[Uses]:
    for name in _used_names(decl):
        dep = dict.get(top, name)  # a plain lookup: the checker's tables note none here
        if id(dep) in wanted:
            yield dep  # type: ignore[misc]  # its id is one of `decls`, so not None


def inlined_depths(decls: list[Uses], top: dict[str, Any]) -> dict[str, int]:
    """For each let and program (by name): its depth with what it uses put in place.

    A name of a let or program counts as one level plus that declaration's
    depth; a use inside a cycle counts as one level.
    """
    depths: dict[str, int] = {}
    for decl in dependency_order(decls, top):
        deepest = 0
        for root in _roots(decl):
            stack: list[tuple[object, int]] = [(root, 1)]
            while stack:
                node, level = stack.pop()
                if type(node) is ast.NameRef:
                    level += depths.get(node.name.text, 0)
                elif type(node) is ast.Call:
                    level += depths.get(node.callee.text, 0)
                deepest = max(deepest, level)
                stack.extend((child, level + 1) for child in _children(node))
        depths[decl.name.text] = deepest
    return depths
