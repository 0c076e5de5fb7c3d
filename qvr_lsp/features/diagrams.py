"""`qvr.diagram`: the core's diagram of a document, with node ranges in protocol positions.

Result: `{format, text, nodes: [{id, label, kind, type, dims, errors, range}]}`; each
node id is the id used in `text`, so a client can map a click on a drawn
node back to its source range.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from qvr_lsp.protocol.command_errors import CommandError, invalid
from qvr_lsp.protocol.contract import DIAGRAM, DIAGRAM_ARGUMENTS, DiagramNode, DiagramResult, names
from qvr_lsp.protocol.convert import TextPositions

if TYPE_CHECKING:
    from qvr_core.graph import Diagram, Node
    from qvr_lsp.analysis.kinds import Open

FORMATS = ("mermaid", "dot", "svg")
SVG_TIMEOUT_SECONDS = 20.0


def diagram_arguments(args: tuple[Any, ...]) -> tuple[str, str | None, str]:
    """`[{uri, name?, format?}]` or `[uri, name?]` (a code lens) -> (uri, name, format)."""
    if len(args) == 1 and isinstance(args[0], dict):
        fields = args[0]
    elif 1 <= len(args) <= 2 and all(isinstance(a, str) or a is None for a in args):
        fields = {"uri": args[0], "name": args[1] if len(args) == 2 else None}
    else:
        raise invalid(f"{DIAGRAM} takes one object {{uri, name?, format?}}")
    unknown = sorted(set(fields) - names(DIAGRAM_ARGUMENTS))
    if unknown:
        raise invalid(f"{DIAGRAM}: unknown argument(s) {', '.join(map(str, unknown))}")
    uri, name, fmt = fields.get("uri"), fields.get("name"), fields.get("format", "mermaid")
    if not isinstance(uri, str) or not uri:
        raise invalid("qvr.diagram: uri must be a non-empty string")
    if name is not None and (not isinstance(name, str) or not name):
        raise invalid("qvr.diagram: name must be a program or let name")
    if fmt not in FORMATS:
        raise invalid(f"qvr.diagram: format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    return uri, name, fmt


async def diagram_result(open_documents: Open, args: tuple[Any, ...]) -> DiagramResult:
    uri, name, fmt = diagram_arguments(args)
    source = await open_documents.drawable_source(uri)
    diagram = await asyncio.to_thread(_draw, source.module, name, fmt)
    return {
        "format": diagram.format,
        "text": diagram.text,
        "nodes": [_node_json(n, source.positions) for n in diagram.nodes],
    }


def _draw(module: Any, name: str | None, fmt: str) -> Diagram:
    from qvr_core.graph import SvgRenderError, UnknownDiagramName, draw

    try:
        return draw(module, name=name, format=fmt, svg_timeout=SVG_TIMEOUT_SECONDS)  # type: ignore[arg-type]  # draw checks fmt
    except UnknownDiagramName as exc:
        raise CommandError(str(exc), "invalid") from exc
    except SvgRenderError as exc:
        raise CommandError(str(exc), "graphviz") from exc


def _node_json(node: Node, positions: TextPositions) -> DiagramNode:
    rng = positions.range(node.span) if node.span is not None else None
    return {
        "id": node.id,
        "label": node.label,
        "kind": node.kind.value,
        "type": node.type,
        "dims": node.dims,
        "errors": list(node.errors),
        "range": None
        if rng is None
        else {
            "start": {"line": rng.start.line, "character": rng.start.character},
            "end": {"line": rng.end.line, "character": rng.end.character},
        },
    }
