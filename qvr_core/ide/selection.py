"""Selection ranges: from the name under the cursor outwards along the syntax tree.

Each step of "expand selection" is a node that contains the previous one:
a name, the sub-expression, the whole expression, the step or declaration,
the program, the file.
"""

from __future__ import annotations

from collections.abc import Iterable

from qvr_core.syntax import ast
from qvr_core.syntax.walk import Node, children
from qvr_core.text.span import Span


def selection_chain(module: ast.Module, offset: int) -> list[Span]:
    """Spans containing `offset`, innermost first, each strictly larger than the one before."""
    outward: list[Span] = [module.span]
    for comment in module.comments:
        if comment.span.start <= offset <= comment.span.end:
            outward.append(comment.span)
            return _innermost_first(outward)
    node: Node | None = _pick(module.decls, offset)
    while node is not None:
        if isinstance(node, ast.ProgramDecl):
            outward.append(node.span)
            if node.header_span.start <= offset <= node.header_span.end:
                outward.append(node.header_span)
        else:
            outward.append(node.span)
        node = _pick(children(node), offset)
    return _innermost_first(outward)


def _pick(nodes: Iterable[Node], offset: int) -> Node | None:
    """The node containing the offset; one starting there wins over one ending there."""
    touching = None
    for node in nodes:
        span: Span = node.span
        if span.start <= offset < span.end:
            return node
        if span.end == offset and touching is None:
            touching = node
    return touching


def _innermost_first(outward: list[Span]) -> list[Span]:
    chain: list[Span] = []
    for span in reversed(outward):
        if chain and (span.start, span.end) == (chain[-1].start, chain[-1].end):
            continue
        chain.append(span)
    return chain
