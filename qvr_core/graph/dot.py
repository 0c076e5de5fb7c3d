"""Graphviz DOT: programs and lets as nested clusters, nodes labelled with types and dimensions.

Sampled sites are ellipses, observed ones shaded (as in PyMC's model graphs);
the right-to-left branch of a bidirectional fan is a labelled dashed edge;
a node with errors has a thick dashed red border and its messages as tooltip.
Every id and label is quoted and escaped, so any name the user writes is safe.
"""

from __future__ import annotations

from collections import defaultdict

import networkx as nx

from qvr_core.graph.build import graph_clusters, graph_edges, graph_nodes
from qvr_core.graph.nodes import Cluster, ClusterKind, Node, NodeKind

NODE_STYLE: dict[NodeKind, str] = {
    NodeKind.INPUT: 'shape=parallelogram, style="filled", fillcolor="#eef4fb"',
    NodeKind.MORPHISM: 'shape=box, style="rounded"',
    NodeKind.COMBINATOR: 'shape=box, style="rounded,bold"',
    NodeKind.SAMPLE: "shape=ellipse",
    NodeKind.OBSERVE: 'shape=ellipse, style="filled", fillcolor="#d9d9d9"',
    NodeKind.VALUE: 'shape=box, style="dashed"',
    NodeKind.OUTPUT: 'shape=invtrapezium, style="filled", fillcolor="#eef4fb"',
}

# Added to the style of a node with errors (which is also dashed).
ERROR_STYLE = 'color="#d32f2f", penwidth=2.5'


def to_dot(graph: nx.DiGraph, title: str = "qvr") -> str:
    nodes = graph_nodes(graph)
    clusters = graph_clusters(graph)
    members: dict[str | None, list[Node]] = defaultdict(list)
    for n in nodes:
        members[n.cluster].append(n)
    children: dict[str | None, list[Cluster]] = defaultdict(list)
    for c in clusters:
        children[c.parent].append(c)

    lines = [
        f"digraph {quote(title)} {{",
        "    graph [rankdir=LR, compound=true, fontsize=11];",
        "    node [fontsize=10];",
        "    edge [fontsize=9];",
    ]
    lines += _body(None, members, children, depth=1)
    for source, target, data in graph_edges(graph):
        attrs = f' [label={quote(str(data["label"]))}, style="dashed"]' if data["reversed"] else ""
        lines.append(f"    {quote(source)} -> {quote(target)}{attrs};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _body(
    cluster: str | None,
    members: dict[str | None, list[Node]],
    children: dict[str | None, list[Cluster]],
    depth: int,
) -> list[str]:
    pad = "    " * depth
    lines = [
        f"{pad}{quote(n.id)} [label={quote(node_label(n))}, {_node_style(n)}];"
        for n in members[cluster]
    ]
    for c in children[cluster]:
        lines.append(f"{pad}subgraph {quote('cluster_' + c.id)} {{")
        lines.append(f"{pad}    label={quote(cluster_label(c))};")
        style = '"rounded"' if c.kind is ClusterKind.PROGRAM else '"rounded,dashed"'
        lines.append(f"{pad}    style={style};")
        lines += _body(c.id, members, children, depth + 1)
        lines.append(f"{pad}}}")
    return lines


def _node_style(node: Node) -> str:
    """The kind's style; a node with errors also gets a thick dashed red border (readable
    without colour) and its messages as the SVG tooltip."""
    style = NODE_STYLE[node.kind]
    if not node.errors:
        return style
    if 'style="' in style:
        style = style.replace('style="', 'style="dashed,', 1)
    else:
        style += ', style="dashed"'
    return f"{style}, {ERROR_STYLE}, tooltip={quote(chr(10).join(node.errors))}"


def node_label(node: Node) -> str:
    """Name (and family or formula), type, dimensions: one per line."""
    first = f"{node.label} {node.detail}" if node.detail.startswith("=") else node.label
    parts = [first]
    if node.detail and not node.detail.startswith("="):
        parts.append(node.detail)
    if node.type:
        parts.append(node.type)
    if node.dims and node.dims != node.type:
        parts.append(node.dims)
    return "\n".join(parts)


def cluster_label(cluster: Cluster) -> str:
    dims = f"\n{cluster.dims}" if cluster.dims and cluster.dims != cluster.type else ""
    return cluster.label + dims


def quote(text: str) -> str:
    """A DOT double-quoted string: backslashes and quotes escaped, newlines as centred breaks."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'
