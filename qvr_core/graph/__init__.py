"""The dataflow graph of a checked module and its renderings (Mermaid, DOT, SVG).

`build_graph` makes one networkx graph; `to_mermaid`, `to_dot` and
`render_svg` draw it; `draw` does all three steps for the CLI and the server.
No torch here.
"""

from qvr_core.graph.build import (
    UnknownDiagramName,
    build_graph,
    drawable_names,
    graph_clusters,
    graph_edges,
    graph_nodes,
)
from qvr_core.graph.diagram import FORMATS, Diagram, draw
from qvr_core.graph.dot import to_dot
from qvr_core.graph.mermaid import to_mermaid
from qvr_core.graph.nodes import REVERSED_LABEL, Cluster, ClusterKind, Node, NodeKind
from qvr_core.graph.svg import SvgRenderError, render_svg

__all__ = [
    "FORMATS",
    "REVERSED_LABEL",
    "Cluster",
    "ClusterKind",
    "Diagram",
    "Node",
    "NodeKind",
    "SvgRenderError",
    "UnknownDiagramName",
    "build_graph",
    "draw",
    "drawable_names",
    "graph_clusters",
    "graph_edges",
    "graph_nodes",
    "render_svg",
    "to_dot",
    "to_mermaid",
]
