"""Mermaid flowcharts in the style of the gallery's diagrams.

`flowchart LR`, one `a["label"] --> b["label"]` line per edge in reading
order, sites drawn as circles (observed ones doubled and shaded), the branch
that reads its sequence right to left labelled on its edge, nodes with
errors in the `error` class (a thick dashed red border).
"""

from __future__ import annotations

import networkx as nx

from qvr_core.graph.build import graph_clusters, graph_edges, graph_nodes
from qvr_core.graph.nodes import Cluster, ClusterKind, Node, NodeKind

# Opening and closing brackets of each kind's shape.
SHAPES: dict[NodeKind, tuple[str, str]] = {
    NodeKind.INPUT: ("[/", "/]"),
    NodeKind.MORPHISM: ("[", "]"),
    NodeKind.COMBINATOR: ("[[", "]]"),
    NodeKind.SAMPLE: ("((", "))"),
    NodeKind.OBSERVE: ("(((", ")))"),
    NodeKind.VALUE: ("{{", "}}"),
    NodeKind.OUTPUT: ("[/", "\\]"),
}

CLASS_DEFS: dict[NodeKind, str] = {
    NodeKind.SAMPLE: "fill:#ffffff,stroke:#333333",
    NodeKind.OBSERVE: "fill:#d9d9d9,stroke:#333333",
}

# Nodes with errors: a thick dashed red border (dashed, so it reads without colour too).
ERROR_CLASS = "error"
ERROR_STYLE = "stroke:#d32f2f,stroke-width:3px,stroke-dasharray:6 3"

# Characters that would end a quoted label or start markup, as Mermaid entity codes.
_ESCAPES = {'"': "#quot;", "#": "#35;", "<": "#lt;", ">": "#gt;"}


def to_mermaid(graph: nx.DiGraph) -> str:
    nodes = {n.id: n for n in graph_nodes(graph)}
    lines = ["flowchart LR"]
    linked: set[str] = set()
    for source, target, data in graph_edges(graph):
        arrow = f"-->|{data['label']}|" if data["label"] else "-->"
        lines.append(f"    {_node(nodes[source])} {arrow} {_node(nodes[target])}")
        linked.update((source, target))
    lines += [f"    {_node(n)}" for n in nodes.values() if n.id not in linked]
    lines += _boxes(graph, nodes)
    for kind, style in CLASS_DEFS.items():
        members = [n.id for n in nodes.values() if n.kind is kind]
        if members:
            lines.append(f"    classDef {kind.value} {style}")
            lines.append(f"    class {','.join(members)} {kind.value}")
    marked = [n.id for n in nodes.values() if n.errors]
    if marked:
        lines.append(f"    classDef {ERROR_CLASS} {ERROR_STYLE}")
        lines.append(f"    class {','.join(marked)} {ERROR_CLASS}")
    return "\n".join(lines) + "\n"


#: Clusters Mermaid draws as subgraphs: a model's plates and marginalised scopes, and
#: the program a `stack` or `repeat` repeats.
BOXED = (ClusterKind.PLATE, ClusterKind.MARGINAL, ClusterKind.COPIES)


def _boxes(graph: nx.DiGraph, nodes: dict[str, Node]) -> list[str]:
    """`subgraph` blocks for plates, marginalised scopes and stacked blocks, nested as in
    the graph; a node belongs to the innermost box around its cluster."""
    clusters = {c.id: c for c in graph_clusters(graph)}
    boxed = {i for i, c in clusters.items() if c.kind in BOXED}
    if not boxed:
        return []

    def innermost_box(cluster: str | None) -> str | None:
        while cluster is not None and cluster not in boxed:
            cluster = clusters[cluster].parent
        return cluster

    children: dict[str | None, list[Cluster]] = {}
    for i in boxed:
        children.setdefault(innermost_box(clusters[i].parent), []).append(clusters[i])
    members: dict[str, list[str]] = {}
    for n in nodes.values():
        box = innermost_box(n.cluster)
        if box is not None:
            members.setdefault(box, []).append(n.id)
    order = list(clusters)
    lines: list[str] = []

    def emit(c: Cluster, depth: int) -> None:
        pad = "    " * depth
        lines.append(f'{pad}subgraph {c.id}["{escape(c.label)}"]')
        lines.extend(f"{pad}    {m}" for m in members.get(c.id, []))
        for child in sorted(children.get(c.id, []), key=lambda k: order.index(k.id)):
            emit(child, depth + 1)
        lines.append(f"{pad}end")

    for c in sorted(children.get(None, []), key=lambda k: order.index(k.id)):
        emit(c, 1)
    return lines


def _node(node: Node) -> str:
    start, end = SHAPES[node.kind]
    return f'{node.id}{start}"{escape(node.label)}"{end}'


def escape(text: str) -> str:
    return "".join(_ESCAPES.get(ch, ch) for ch in text)
