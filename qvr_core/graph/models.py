"""Bayesian models as plate diagrams: sites in boxes, one box per plate.

A model (check/model.py) draws its parameters and data variables as inputs,
each site as a node with its family, each `let`/`score` as a value, and its
return. A site over plates sits in the box of those plates (`plate School
(8)`); the body of a `marginalize` sits in a box of its own inside which its
plates nest. Edges run from each value a step reads to the step.
"""

from __future__ import annotations

from qvr_core.check.model import Let, Model, Node, Site
from qvr_core.check.types import Plated
from qvr_core.graph.builder import GraphBuilder
from qvr_core.graph.expressions import source_text
from qvr_core.graph.nodes import ClusterKind, NodeKind


def draw_model(b: GraphBuilder, model: Model) -> None:
    decl = model.decl
    with b.cluster((model.name,), ClusterKind.PROGRAM, model.name, None, decl.span) as cid:
        prefix = tuple(cid.split("."))
        values: dict[str, str] = {}
        for p in model.params:
            detail = f": {p.kind}" if p.kind else ""
            values[p.name] = b.node((*prefix, p.name), p.name, NodeKind.INPUT, None, p.span, detail)
        for d in model.data:
            if not d.observed:
                values[d.name] = b.node(
                    (*prefix, d.name), d.name, NodeKind.INPUT, d.type, d.span, "data"
                )
        boxes = _Boxes(b, prefix, cid)
        _steps(b, model, model.tree, cid, boxes, prefix, values)
        if model.returns:
            out = b.node((*prefix, "output"), "output", NodeKind.OUTPUT, None, decl.span)
            b.edges([values[n] for n in model.returns if n in values], out)


def _steps(
    b: GraphBuilder,
    model: Model,
    nodes: tuple[Node, ...],
    scope: str,
    boxes: _Boxes,
    prefix: tuple[str, ...],
    values: dict[str, str],
) -> None:
    """The steps of the model's tree (`Model.tree`) from `nodes`, in the box `scope`; a
    `marginalize`'s body in a box of its own inside it. Without recursion: scopes nest
    as deep as a program writes them."""
    stack = [(iter(nodes), scope)]
    while stack:
        node = next(stack[-1][0], None)
        if node is None:
            stack.pop()
            continue
        outer = stack[-1][1]
        step = node.step
        if isinstance(step, Let) and step.name in model.observed_lets:
            continue  # drawn as the data its observe step observes
        with b.inside(boxes.box(outer, step.type)):
            if isinstance(step, Site):
                _site(b, step, prefix, values, model.observed_let(step.name))
            else:
                _let(b, step, prefix, values)
        if node.scope:
            assert isinstance(step, Site)
            stack.append((iter(node.body), boxes.scope(step, outer)))


class _Boxes:
    """The cluster each step goes in: its marginalised scope's box, then its plates."""

    def __init__(self, b: GraphBuilder, prefix: tuple[str, ...], program: str) -> None:
        self.b = b
        self.prefix = prefix
        self.plates: dict[tuple[str, tuple[str, ...]], str] = {}

    def scope(self, site: Site, parent: str) -> str:
        """A box for the body of the marginalize `site`, inside its own scope's box."""
        with (
            self.b.inside(parent),
            self.b.cluster(
                (*self.prefix, "marginalize", site.name),
                ClusterKind.MARGINAL,
                site.name,
                None,
                site.step.span,
            ) as ident,
        ):
            return ident

    def box(self, outer: str, t: Plated | None) -> str:
        """The box of the plates of a step in the scope box `outer` (made once)."""
        if t is None or not t.plates:
            return outer
        names = tuple(p.name for p in t.plates)
        key = (outer, names)
        if key not in self.plates:
            label = " * ".join(f"{p.name} ({p.size})" if p.size >= 0 else p.name for p in t.plates)
            with (
                self.b.inside(outer),
                self.b.cluster(
                    (*self.prefix, "plate", *names), ClusterKind.PLATE, label, None, None
                ) as ident,
            ):
                self.plates[key] = ident
        return self.plates[key]


def _site(
    b: GraphBuilder,
    site: Site,
    prefix: tuple[str, ...],
    values: dict[str, str],
    computed: Let | None = None,
) -> None:
    """A site's node, with edges from what its arguments read. An observed let
    (`computed`: `let log_earn = log(earn)`) is one observed node, the data it is,
    with edges from the data names it is computed from too, as PyMC draws an observed
    variable computed from `pm.Data`."""
    kind = NodeKind.OBSERVE if site.kind == "observe" else NodeKind.SAMPLE
    if site.family is not None:
        detail = f"~ {site.family}"
    else:
        detail = f"<- {site.callee}({', '.join(site.call_args)})"
    if computed is not None:
        detail += f", = {source_text(b, computed.step.value)}"
    node = b.node((*prefix, site.name), site.name, kind, site.type, site.step.span, detail)
    read: list[str] = list(computed.uses) if computed is not None else []
    for a in site.args:
        read += [n for n in (a.name, *a.index) if n is not None]
    if site.measure is not None:  # the distributions a measure step builds from
        read += site.measure.names()
    if site.via:
        read.append(site.via)
    b.edges([values[n] for n in dict.fromkeys(read) if n in values], node)
    values.setdefault(site.name, node)


def _let(b: GraphBuilder, let: Let, prefix: tuple[str, ...], values: dict[str, str]) -> None:
    formula = source_text(b, let.step.value)
    kind = NodeKind.VALUE
    node = b.node((*prefix, let.name), let.name, kind, let.type, let.step.span, f"= {formula}")
    b.edges([values[n] for n in let.uses if n in values], node)
    values.setdefault(let.name, node)
