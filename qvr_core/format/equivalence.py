"""What formatting must not change: the syntax tree without positions, and the comments.

The formatter checks its own output with these before handing it back (as
black compares ASTs), so a bug in it costs a refusal, never the user's code.
The trees are compared side by side with an explicit stack: no copy of
either is built, the first difference ends the walk, and no depth of
nesting overflows Python's stack.
"""

from __future__ import annotations

import dataclasses
from functools import cache

from qvr_core.syntax import ast

_POSITIONS = frozenset({"span", "size_span", "options_span", "header_span"})


def same_tree(before: object, after: object) -> bool:
    """Whether two syntax trees (or tuples of them) agree in everything but positions.

    Trailing spaces of doc comments are ignored (the formatter trims them).
    """
    stack = [(before, after)]
    pop, push = stack.pop, stack.append
    while stack:
        x, y = pop()
        kind = type(x)
        if kind is not type(y):
            return False
        if kind is tuple:
            if len(x) != len(y):  # type: ignore[arg-type]  # x, y: tuples (kind checked)
                return False
            stack.extend(zip(x, y, strict=True))  # type: ignore[call-overload]  # as above
            continue
        names = _fields(kind)  # type: ignore[arg-type]  # mypy: object.__hash__ unbound
        if names is None:
            if x != y:
                return False
            continue
        for name in names:
            left, right = getattr(x, name), getattr(y, name)
            if name == "doc" and type(left) is str and type(right) is str:
                if _trimmed(left) != _trimmed(right):
                    return False
                continue
            push((left, right))
    return True


def _trimmed(doc: str) -> str:
    return "\n".join(line.rstrip() for line in doc.split("\n")).rstrip()


@cache
def _fields(kind: type) -> tuple[str, ...] | None:
    """The fields of a node type that are not positions (None for a non-node)."""
    if not dataclasses.is_dataclass(kind):
        return None
    return tuple(f.name for f in dataclasses.fields(kind) if f.name not in _POSITIONS)


def comment_texts(module: ast.Module) -> list[str]:
    """The comments in order, without trailing whitespace (the formatter trims it)."""
    return [c.text.rstrip() for c in module.comments]


def equivalent(before: ast.Module, after: ast.Module) -> bool:
    return same_tree(before.decls, after.decls) and comment_texts(before) == comment_texts(after)
