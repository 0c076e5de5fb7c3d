"""What the checker knows about a declaration that does not type-check as a whole.

`let backbone = fan(forward_path, backward_path) >> combine` has no type when
the composition fails, but its parts do: the checker typed `fan(...)` and
`combine` before it found that they do not compose. `known_parts` gathers
those facts (the largest sub-expressions the checker typed, in source order)
and the errors reported inside the declaration, so an editor can show them
where it would show the declaration's type.
"""

from __future__ import annotations

from dataclasses import dataclass

from qvr_core.check.module import CheckedModule
from qvr_core.check.types import Arrow, Group
from qvr_core.syntax import ast
from qvr_core.syntax.walk import Node, children
from qvr_core.text.diagnostics import Severity
from qvr_core.text.span import Span

#: At most this many parts and errors: a hover, not a listing.
MAX_PARTS = 8
MAX_PROBLEMS = 3


@dataclass(frozen=True)
class KnownPart:
    """A sub-expression the checker typed: its source text and its type."""

    text: str
    type: Arrow | Group
    span: Span


@dataclass(frozen=True)
class PartialKnowledge:
    parts: tuple[KnownPart, ...]
    problems: tuple[str, ...]  # "QVRnnn: message", one line each


def known_parts(module: CheckedModule, decl_span: Span) -> PartialKnowledge | None:
    """The typed parts and the errors of the let or define declared at `decl_span`.

    None when there is no such declaration or it has no error (its own type says it all).
    """
    decl = next(
        (d for d in module.ast.decls if isinstance(d, ast.LetDecl) and d.span == decl_span), None
    )
    if decl is None:
        return None
    problems = tuple(
        f"{d.code}: {_one_line(d.message)}"
        for d in module.diagnostics
        if d.severity is Severity.ERROR and decl.span.covers(d.span)
    )
    if not problems:
        return None
    parts: list[KnownPart] = []
    stack: list[Node] = [decl.expr]
    while stack and len(parts) < MAX_PARTS:
        node = stack.pop()
        typed = module.expr_types.get(node) if isinstance(node, ast.Expr) else None
        if typed is not None:
            span = node.span
            parts.append(KnownPart(module.source[span.start : span.end], typed, span))
        else:
            stack.extend(reversed(children(node)))
    parts.sort(key=lambda p: p.span.start)
    return PartialKnowledge(tuple(parts), problems[:MAX_PROBLEMS])


def _one_line(message: str) -> str:
    return " ".join(message.split())
