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

from collections.abc import Callable, Iterator
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


def used_names(decl: Uses) -> Iterator[str]:
    """Names of morphisms, lets and programs `decl` uses (callees included), in order."""
    stack: list[object] = list(_roots(decl))
    while stack:
        node = stack.pop()
        if type(node) is ast.NameRef:
            yield node.name.text
        elif type(node) is ast.Call:
            yield node.callee.text
        stack.extend(_children(node))


class UsesMemo:
    """`used_names` of each let and program, kept from one check to the next.

    After an edit the incremental checker checks mostly the very declaration
    objects of the last check (those the edit left alone): their names are
    not walked again. Keyed by identity, holding the declaration (so that its
    id is not reused while the entry lives); `next_check` forgets the
    declarations the last check that asked did not ask about.
    """

    __slots__ = ("_last", "_now")

    def __init__(self) -> None:
        self._last: dict[int, tuple[Uses, tuple[str, ...]]] = {}
        self._now: dict[int, tuple[Uses, tuple[str, ...]]] = {}

    def next_check(self) -> None:
        if self._now:  # (a check that orders nothing asks nothing)
            self._last, self._now = self._now, {}

    def __call__(self, decl: Uses) -> tuple[str, ...]:
        found = self._last.get(id(decl))
        if found is None or found[0] is not decl:
            found = (decl, tuple(used_names(decl)))
        self._now[id(decl)] = found
        return found[1]


def _walked(decl: Uses) -> tuple[str, ...]:
    return tuple(used_names(decl))


def dependency_order(
    decls: list[Uses], top: dict[str, Any], uses: Callable[[Uses], tuple[str, ...]] = _walked
) -> list[Uses]:
    """`decls` with every let or program after the ones (in `decls`) it uses.

    A depth-first walk with its own stack; in a cycle the order is where the
    walk found it (the checker reports the cycle). Otherwise source order is kept.
    `uses` gives the names a declaration uses (`used_names`, or a `UsesMemo`).
    """
    wanted = {id(d): d for d in decls}
    get = dict.get  # a plain lookup: the checker's tables note none here

    def deps(decl: Uses) -> list[Uses]:
        return [wanted[i] for name in uses(decl) if (i := id(get(top, name))) in wanted]

    placed: set[int] = set()
    order: list[Uses] = []
    for root in decls:
        if id(root) in placed:
            continue
        placed.add(id(root))
        first = deps(root)
        if not first:  # most use no other let or program
            order.append(root)
            continue
        stack = [(root, iter(first))]
        while stack:
            decl, pending = stack[-1]
            for dep in pending:
                if id(dep) not in placed:
                    placed.add(id(dep))
                    stack.append((dep, iter(deps(dep))))
                    break
            else:
                stack.pop()
                order.append(decl)
    return order


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
