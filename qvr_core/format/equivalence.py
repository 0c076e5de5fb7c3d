"""What formatting must not change: the syntax tree without positions, and the comments.

The formatter checks its own output with these before handing it back (as
black compares ASTs), so a bug in it costs a refusal, never the user's code.
"""

from __future__ import annotations

import dataclasses
from functools import cache

from qvr_core.syntax import ast

_POSITIONS = frozenset({"span", "size_span", "options_span", "header_span"})


def shape(node: object) -> object:
    """A positionless, hashable picture of a syntax node (trailing spaces of docs ignored)."""
    if isinstance(node, tuple):
        return tuple(shape(item) for item in node)
    names = _fields(type(node))  # type: ignore[arg-type]  # mypy: object.__hash__ unbound
    if names is None:
        return node
    parts: list[object] = [type(node).__name__]
    for name in names:
        value = getattr(node, name)
        if name == "doc" and isinstance(value, str):
            value = "\n".join(line.rstrip() for line in value.split("\n")).rstrip()
        parts.append(shape(value))
    return tuple(parts)


@cache
def _fields(kind: type) -> tuple[str, ...] | None:
    """The fields of a node type that are not positions (None for a non-node)."""
    if not dataclasses.is_dataclass(kind):
        return None
    return tuple(f.name for f in dataclasses.fields(kind) if f.name not in _POSITIONS)


def declarations_shape(module: ast.Module) -> object:
    return shape(module.decls)


def comment_texts(module: ast.Module) -> list[str]:
    """The comments in order, without trailing whitespace (the formatter trims it)."""
    return [c.text.rstrip() for c in module.comments]


def equivalent(before: ast.Module, after: ast.Module) -> bool:
    return declarations_shape(before) == declarations_shape(after) and comment_texts(
        before
    ) == comment_texts(after)
