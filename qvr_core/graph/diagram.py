"""One call from a checked module to a drawn diagram: what the CLI and the server use."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from qvr_core.check.module import CheckedModule
from qvr_core.graph.build import build_graph, graph_nodes
from qvr_core.graph.dot import to_dot
from qvr_core.graph.mermaid import to_mermaid
from qvr_core.graph.nodes import Node
from qvr_core.graph.svg import render_svg

Format = Literal["mermaid", "dot", "svg"]
FORMATS: tuple[Format, ...] = ("mermaid", "dot", "svg")


@dataclass(frozen=True)
class Diagram:
    format: Format
    text: str
    nodes: tuple[Node, ...]  # in drawing order; their ids are the ids in `text`


def draw(
    module: CheckedModule,
    *,
    name: str | None = None,
    format: Format = "mermaid",
    svg_timeout: float | None = None,
) -> Diagram:
    """Raises `UnknownDiagramName`, `SvgRenderError`, or ValueError for an unknown format."""
    if format not in FORMATS:
        raise ValueError(f"unknown diagram format '{format}' (choose {', '.join(FORMATS)})")
    graph = build_graph(module, name)
    if format == "mermaid":
        text = to_mermaid(graph)
    else:
        title = name or "qvr"
        text = to_dot(graph, title)
        if format == "svg":
            if svg_timeout is None:
                text = render_svg(text)
            else:
                text = render_svg(text, timeout=svg_timeout)
    return Diagram(format, text, tuple(graph_nodes(graph)))
