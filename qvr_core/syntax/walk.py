"""Walking the syntax tree generically: every node is a frozen dataclass with a `span`.

Selection ranges and semantic tokens need "every node under this one" in
source order; deriving the children from the dataclass fields keeps that
true when the tree gains a node type.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Protocol

from qvr_core.text.span import Span


class Node(Protocol):
    """A syntax node, as far as walking needs one."""

    @property
    def span(self) -> Span: ...


#: Per class: the names of its fields, when it is a dataclass with a `span` (a node).
_NODE_FIELDS: dict[type, tuple[str, ...] | None] = {}


def _node_fields(kind: type) -> tuple[str, ...] | None:
    if kind not in _NODE_FIELDS:
        names = (
            tuple(f.name for f in dataclasses.fields(kind))
            if dataclasses.is_dataclass(kind)
            else ()
        )
        _NODE_FIELDS[kind] = names if "span" in names else None
    return _NODE_FIELDS[kind]


def _is_node(value: object) -> bool:
    if _node_fields(type(value)) is None:
        return False
    span = value.span  # type: ignore[attr-defined]  # a dataclass with a span field
    return isinstance(span, Span)


def children(node: Node) -> list[Node]:
    """The direct child nodes of `node`, in source order."""
    found: list[Node] = []
    d = node.__dict__
    for name in _node_fields(type(node)) or ():
        value = d[name]
        if type(value) is tuple:
            found.extend(item for item in value if _is_node(item))
        elif _is_node(value):
            found.append(value)
    found.sort(key=lambda n: n.span.start)
    return found


def walk(node: Node) -> Iterator[Node]:
    """`node` and everything below it, depth first, in source order (iterative)."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(children(current)))
