"""One networkx dataflow graph of a checked module: the single source of every diagram.

Nodes carry `label`, `kind` (a `NodeKind`), `type`, `dims`, `span`, `cluster`,
`detail`, `order` and `errors` (marks.py); edges carry `reversed` and `label` ("right to left" on
the branch of a bidirectional fan that reads its sequence backwards, and into
a `scan(..., reverse=true)`). `graph.graph["clusters"]` maps cluster ids to
`Cluster`s (programs, and lets drawn where they are used).

It reads the checker's facts (`programs`, `lets`, `expr_types`,
`reversed_branches`, `reversed_scans`) and works on modules with errors: what
the checker could not type is drawn without a type.
"""

from __future__ import annotations

from collections.abc import Iterator

import networkx as nx

from qvr_core.builtins import COMBINATORS
from qvr_core.check.module import CheckedModule, LetInfo, ProgramInfo
from qvr_core.graph.builder import GraphBuilder
from qvr_core.graph.expressions import source_text
from qvr_core.graph.marks import mark_errors
from qvr_core.graph.models import draw_model
from qvr_core.graph.nodes import Cluster, ClusterKind, Node
from qvr_core.graph.programs import draw_let, draw_program
from qvr_core.syntax import ast


class UnknownDiagramName(ValueError):
    """`--name` names neither a program nor a let of the module."""

    def __init__(self, name: str, available: list[str]) -> None:
        names = ", ".join(available) if available else "none in this file"
        super().__init__(f"no program or let named '{name}' to draw (available: {names})")
        self.name = name
        self.available = available


def build_graph(module: CheckedModule, name: str | None = None) -> nx.DiGraph:
    """The dataflow of program or let `name`, or of the whole module.

    The whole module is every program plus every let that nothing else uses
    (lets that are used are drawn inside their users). A program that is the
    block of a `stack` or `repeat` is drawn inside a box named after the call
    (`stack(encoder_block, 2)`): the call stays one node where it is used, and
    the box says what it repeats.
    """
    b = GraphBuilder(module)
    if name is None:
        used = _referenced_names(module)
        blocks = _block_calls(module)
        for decl in module.ast.decls:
            n = decl.name.text
            program = module.programs.get(n)
            model = module.models.get(n)
            let = module.lets.get(n)
            if program is not None and program.decl is decl:
                _draw_block_or_program(b, program, blocks.get(n, []))
            elif model is not None and model.decl is decl:
                draw_model(b, model)
            elif let is not None and let.decl is decl and n not in used and _drawn(let):
                draw_let(b, let)
    elif name in module.programs:
        draw_program(b, module.programs[name])
    elif name in module.models:
        draw_model(b, module.models[name])
    elif name in module.lets and _drawn(module.lets[name]):
        draw_let(b, module.lets[name])
    else:
        raise UnknownDiagramName(name, drawable_names(module))
    mark_errors(b.graph, module.diagnostics)
    return b.graph


def drawable_names(module: CheckedModule) -> list[str]:
    """Programs and lets in source order: what `name` may be."""
    return [
        d.name.text
        for d in module.ast.decls
        if isinstance(d, ast.ProgramDecl | ast.LetDecl)
        and (
            d.name.text in module.programs
            or d.name.text in module.models
            or (d.name.text in module.lets and _drawn(module.lets[d.name.text]))
        )
    ]


def _drawn(let: LetInfo) -> bool:
    """A let of morphisms is a dataflow; one bound to a change-of-base transformation
    (`define pipe = softmax(B) >>> expectation`) moves values between rules, not along
    the flow, and is shown where a `.change_base(pipe)` applies it."""
    return let.transformation is None


def graph_nodes(graph: nx.DiGraph) -> list[Node]:
    """The nodes in drawing order."""
    ordered = sorted(graph.nodes(data=True), key=lambda item: item[1]["order"])
    return [
        Node(
            id=ident,
            label=data["label"],
            kind=data["kind"],
            type=data["type"],
            dims=data["dims"],
            span=data["span"],
            cluster=data["cluster"],
            detail=data["detail"],
            errors=data.get("errors", ()),
        )
        for ident, data in ordered
    ]


def graph_edges(graph: nx.DiGraph) -> list[tuple[str, str, dict[str, object]]]:
    """The edges in drawing order: by their source's order, then their target's."""
    order = graph.nodes(data="order")
    return sorted(graph.edges(data=True), key=lambda e: (order[e[0]], order[e[1]]))


def graph_clusters(graph: nx.DiGraph) -> list[Cluster]:
    return list(graph.graph["clusters"].values())


def _draw_block_or_program(b: GraphBuilder, program: ProgramInfo, calls: list[ast.Call]) -> None:
    """The program, inside a box for the `stack`/`repeat` calls that repeat it (if any)."""
    if not calls:
        draw_program(b, program)
        return
    first = calls[0]
    label = "; ".join(dict.fromkeys(source_text(b, c) for c in calls))
    t = b.module.expr_types.get(first)
    segment = f"{first.callee.text}_{program.name}"
    with b.cluster((segment,), ClusterKind.COPIES, label, t, first.span):
        draw_program(b, program)


def _block_calls(module: CheckedModule) -> dict[str, list[ast.Call]]:
    """The `stack`/`repeat` calls whose block is a program, by program, in source order."""
    found: dict[str, list[ast.Call]] = {}
    for _, e in _expressions(module):
        if not isinstance(e, ast.Call):
            continue
        combinator = COMBINATORS.get(e.callee.text)
        body = e.args[0] if e.args else None
        if (
            combinator is not None
            and combinator.cost.runs == "count"
            and isinstance(body, ast.NameRef)
            and body.name.text in module.programs
            and module.resolve_morphism(body.name.text) is None
        ):
            found.setdefault(body.name.text, []).append(e)
    return found


def _referenced_names(module: CheckedModule) -> set[str]:
    """Names used inside another let or program (combinator bodies included)."""
    used: set[str] = set()
    for decl, e in _expressions(module):
        if isinstance(e, ast.NameRef):
            n = e.name.text
        elif isinstance(e, ast.Call):
            n = e.callee.text
        else:
            continue
        if n != decl.name.text:  # a let defined by itself is still drawn (and reported)
            used.add(n)
    return used


def _expressions(module: CheckedModule) -> Iterator[tuple[ast.Decl, ast.Arg]]:
    """Every expression a graph draws, with its let or program, in source order: a let's
    expression and each site's source, the sides of each composition and tensor, and the
    arguments of each call."""
    for decl in module.ast.decls:
        if isinstance(decl, ast.LetDecl):
            roots: list[ast.Arg] = [decl.expr]
        elif isinstance(decl, ast.ProgramDecl):
            sites = (s for s in decl.steps if isinstance(s, ast.SampleStep | ast.ObserveStep))
            roots = [s.source for s in sites]
        else:
            continue
        stack = roots[::-1]  # its own stack: no depth of nesting overflows Python's
        while stack:
            e = stack.pop()
            yield decl, e
            if isinstance(e, ast.Compose | ast.Tensor):
                stack += (e.right, e.left)
            elif isinstance(e, ast.Call):
                stack += reversed(e.args)
