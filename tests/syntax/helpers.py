"""Shared checks for parser tests: walk a syntax tree and hold its spans to the text."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

from qvr_core.syntax import ast
from qvr_core.syntax.parser import ParseResult
from qvr_core.text.span import LineIndex, Span


def nodes(root: object) -> Iterator[object]:
    """Every syntax node under `root` (included), iteratively (trees may be deep)."""
    stack = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, tuple):
            stack.extend(node)
            continue
        if not dataclasses.is_dataclass(node) or isinstance(node, Span):
            continue
        yield node
        stack.extend(getattr(node, f.name) for f in dataclasses.fields(node))


def spans_in(node: object) -> Iterator[Span]:
    for child in nodes(node):
        for f in dataclasses.fields(child):
            value = getattr(child, f.name)
            if isinstance(value, Span):
                yield value


def assert_consistent(text: str, result: ParseResult) -> None:
    """Spans lie in the text and agree with it; children sit inside their parents."""
    index = LineIndex(text)

    def check(span: Span) -> None:
        assert 0 <= span.start <= span.end <= len(text), span
        assert index.span(span.start, span.end) == span, span

    for diagnostic in result.diagnostics:
        assert diagnostic.code in ("QVR001", "QVR010")  # syntax errors, older surfaces
        assert "internal" not in diagnostic.message, diagnostic.message
        check(diagnostic.span)
        for related in diagnostic.related:
            check(related.span)
    check(result.module.span)
    for comment in result.module.comments:
        check(comment.span)
        assert text[comment.span.start : comment.span.end] == comment.text
    for decl in result.module.decls:
        for node in nodes(decl):
            check(node.span)  # type: ignore[attr-defined]
            if isinstance(node, ast.Name) and node.span.end > node.span.start:
                # (an empty name is one an older surface implies: `kernel f` is role=kernel)
                assert text[node.span.start : node.span.end] == node.text
            for child in nodes_below(node):
                assert node.span.covers(child.span), (node, child)  # type: ignore[attr-defined]
        for span in spans_in(decl):
            check(span)


def nodes_below(node: object) -> Iterator[object]:
    """The direct child nodes of `node`."""
    for f in dataclasses.fields(node):  # type: ignore[arg-type]
        value = getattr(node, f.name)
        values = value if isinstance(value, tuple) else (value,)
        for child in values:
            if dataclasses.is_dataclass(child) and not isinstance(child, Span):
                yield child


def source(text: str, span: Span | None) -> str:
    assert span is not None
    return text[span.start : span.end]
