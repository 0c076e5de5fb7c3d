"""The mutable state of one graph construction: the networkx graph, ids, clusters.

Nodes get an `order` (creation order, which follows the source) so that every
renderer emits them, and the edges between them, in the same reading order.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TypeVar

import networkx as nx

from qvr_core.check.module import CheckedModule
from qvr_core.check.nesting import MAX_INLINED_DEPTH, inlined_depths
from qvr_core.graph.nodes import (
    REVERSED_LABEL,
    Cluster,
    ClusterKind,
    IdAllocator,
    NodeKind,
    TypeLike,
    type_dims,
    type_label,
)
from qvr_core.syntax import ast
from qvr_core.text.span import Span

_D = TypeVar("_D", ast.LetDecl, ast.ProgramDecl)
#: Lets drawn inside lets at most this many clusters deep (deeper ones are folded).
MAX_DRAWN_LETS = 16


class GraphBuilder:
    """Adds typed nodes and data edges; clusters nest through `cluster()`."""

    def __init__(self, module: CheckedModule) -> None:
        self.module = module
        self.graph: nx.DiGraph = nx.DiGraph(clusters={})
        self.ids = IdAllocator()
        self._clusters: list[str] = []
        self._lets = _first_decls(module, ast.LetDecl)
        self._programs = _first_decls(module, ast.ProgramDecl)
        self.expanding: list[str] = []  # lets being expanded, innermost last (cycle guard)
        self._depths: dict[str, int] | None = None

    def drawn_in_place(self, let: str) -> bool:
        """Whether a let used here is drawn inside a cluster of its own, or folded into a node.

        Lets inside lets are drawn in place up to `MAX_DRAWN_LETS` clusters deep, and a
        let only when its own depth (`nesting.inlined_depths`) is within
        `MAX_INLINED_DEPTH`: a chain of thousands of lets is drawn, folded, without
        overflowing the stack, and stays readable.
        """
        if len(self.expanding) >= MAX_DRAWN_LETS:
            return False
        if self._depths is None:
            decls: list[ast.LetDecl | ast.ProgramDecl] = [*self._lets.values()]
            decls += self._programs.values()
            top = {d.name.text: d for d in decls}
            self._depths = inlined_depths(decls, top)
        return self._depths.get(let, 0) <= MAX_INLINED_DEPTH

    # ------------------------------------------------------------ lookups

    def let_decl(self, name: str) -> ast.LetDecl | None:
        return self._lets.get(name)

    def is_program(self, name: str) -> bool:
        return name in self._programs

    # -------------------------------------------------------------- build

    @property
    def current_cluster(self) -> str | None:
        return self._clusters[-1] if self._clusters else None

    @contextmanager
    def cluster(
        self,
        segments: tuple[str, ...],
        kind: ClusterKind,
        name: str,
        t: TypeLike | None,
        span: Span | None,
    ) -> Iterator[str]:
        ident = self.ids.make(*segments)
        self.graph.graph["clusters"][ident] = Cluster(
            ident, kind, name, type_label(t), type_dims(t), span, self.current_cluster
        )
        self._clusters.append(ident)
        try:
            yield ident
        finally:
            self._clusters.pop()

    @contextmanager
    def inside(self, ident: str) -> Iterator[str]:
        """Add to a cluster made earlier (a plate box its sites come back to)."""
        self._clusters.append(ident)
        try:
            yield ident
        finally:
            self._clusters.pop()

    def node(
        self,
        segments: tuple[str, ...],
        label: str,
        kind: NodeKind,
        t: TypeLike | None,
        span: Span | None,
        detail: str = "",
    ) -> str:
        return self.add(self.ids.make(*segments), label, kind, t, span, detail)

    def add(
        self,
        ident: str,
        label: str,
        kind: NodeKind,
        t: TypeLike | None,
        span: Span | None,
        detail: str = "",
    ) -> str:
        """A node under an id taken earlier from `ids` (a join drawn after its branches)."""
        self.graph.add_node(
            ident,
            label=label,
            kind=kind,
            type=type_label(t),
            dims=type_dims(t),
            span=span,
            cluster=self.current_cluster,
            detail=detail,
            order=self.graph.number_of_nodes(),
        )
        return ident

    def edges(self, sources: list[str], target: str, reversed_: bool = False) -> None:
        for s in sources:
            self.edge(s, target, reversed_)

    def edge(self, source: str, target: str, reversed_: bool = False) -> None:
        """A data edge; `reversed_` marks a sequence read right to left."""
        if self.graph.has_edge(source, target):
            reversed_ = reversed_ or self.graph.edges[source, target]["reversed"]
        self.graph.add_edge(
            source,
            target,
            reversed=reversed_,
            label=REVERSED_LABEL if reversed_ else "",
        )


def _first_decls(module: CheckedModule, kind: type[_D]) -> dict[str, _D]:
    """Declarations by name, the first one winning as in the checker."""
    out: dict[str, _D] = {}
    for d in module.ast.decls:
        if isinstance(d, kind) and d.name.text not in out:
            out[d.name.text] = d
    return out
