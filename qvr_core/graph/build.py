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

import networkx as nx

from qvr_core.check.module import CheckedModule
from qvr_core.graph.builder import GraphBuilder
from qvr_core.graph.marks import mark_errors
from qvr_core.graph.models import draw_model
from qvr_core.graph.nodes import Cluster, Node
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
    (lets that are used are drawn inside their users).
    """
    b = GraphBuilder(module)
    if name is None:
        used = _referenced_names(module)
        for decl in module.ast.decls:
            n = decl.name.text
            program = module.programs.get(n)
            model = module.models.get(n)
            let = module.lets.get(n)
            if program is not None and program.decl is decl:
                draw_program(b, program)
            elif model is not None and model.decl is decl:
                draw_model(b, model)
            elif let is not None and let.decl is decl and n not in used:
                draw_let(b, let)
    elif name in module.programs:
        draw_program(b, module.programs[name])
    elif name in module.models:
        draw_model(b, module.models[name])
    elif name in module.lets:
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
            or d.name.text in module.lets
        )
    ]


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


def _referenced_names(module: CheckedModule) -> set[str]:
    """Names used inside another let or program (combinator bodies included)."""
    found: set[str] = set()

    def walk(root: ast.Arg) -> None:
        stack = [root]  # its own stack: no depth of nesting overflows Python's
        while stack:
            e = stack.pop()
            if isinstance(e, ast.NameRef):
                found.add(e.name.text)
            elif isinstance(e, ast.Compose | ast.Tensor):
                stack += (e.left, e.right)
            elif isinstance(e, ast.Call):
                found.add(e.callee.text)
                stack += e.args

    used: set[str] = set()
    for decl in module.ast.decls:
        if isinstance(decl, ast.LetDecl):
            walk(decl.expr)
        elif isinstance(decl, ast.ProgramDecl):
            for step in decl.steps:
                if isinstance(step, ast.SampleStep | ast.ObserveStep):
                    walk(step.source)
        else:
            continue
        found.discard(decl.name.text)  # a let defined by itself is still drawn (and reported)
        used |= found
        found.clear()
    return used
