"""Walking the syntax tree generically: every node is a frozen dataclass with a `span`.

Selection ranges and semantic tokens need "every node under this one" in
source order; deriving the children from the dataclass fields keeps that
true when the tree gains a node type.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

from qvr_core.syntax.span import Span

Node = object


def _is_node(value: object) -> bool:
    return dataclasses.is_dataclass(value) and isinstance(getattr(value, "span", None), Span)


def children(node: Node) -> list[Node]:
    """The direct child nodes of `node`, in source order."""
    found: list[Node] = []
    for f in dataclasses.fields(node):  # type: ignore[arg-type]
        value = getattr(node, f.name)
        items = value if isinstance(value, tuple) else (value,)
        found.extend(item for item in items if _is_node(item))
    found.sort(key=lambda n: n.span.start)  # type: ignore[attr-defined]
    return found


def walk(node: Node) -> Iterator[Node]:
    """`node` and everything below it, depth first, in source order (iterative)."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(children(current)))
