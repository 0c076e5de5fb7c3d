"""Marks errors on the nodes they concern: a renderer draws the mark, an editor shows the message.

An error belongs to the narrowest drawn node whose source span covers the
error's span (the `combine` of `fan(...) >> combine`); an error no node
covers (a whole declaration) marks the nodes inside its span. A node drawn
several times (a let used by two programs) is marked wherever it is drawn.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

import networkx as nx

from qvr_core.text.diagnostics import Diagnostic, Severity
from qvr_core.text.span import Span

#: At most this many messages per node: the mark says "here", the Problems panel lists all.
MAX_MESSAGES_PER_NODE = 5


def mark_errors(graph: nx.DiGraph, diagnostics: Iterable[Diagnostic]) -> None:
    """Sets each node's `errors` (a tuple of "QVRnnn: message", empty when none)."""
    by_line: dict[int, list[tuple[str, Span]]] = defaultdict(list)
    for ident, span in graph.nodes(data="span"):
        graph.nodes[ident]["errors"] = ()
        if span is not None:
            for line in range(span.start_line, span.end_line + 1):
                by_line[line].append((ident, span))
    found: dict[str, list[str]] = defaultdict(list)
    for d in diagnostics:
        if d.severity is not Severity.ERROR:
            continue
        for ident in _nodes_of(d.span, by_line):
            messages = found[ident]
            if len(messages) < MAX_MESSAGES_PER_NODE:
                messages.append(f"{d.code}: {d.message}")
    for ident, messages in found.items():
        graph.nodes[ident]["errors"] = tuple(messages)


def _nodes_of(span: Span, by_line: dict[int, list[tuple[str, Span]]]) -> list[str]:
    candidates = by_line.get(span.start_line, [])
    covering = [(s.length, ident) for ident, s in candidates if s.covers(span)]
    if covering:
        narrowest = min(length for length, _ in covering)
        return [ident for length, ident in covering if length == narrowest]
    inside: list[str] = []
    for line in range(span.start_line, span.end_line + 1):
        inside += [ident for ident, s in by_line.get(line, []) if span.covers(s)]
    return list(dict.fromkeys(inside))
