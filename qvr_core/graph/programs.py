"""Programs and standalone lets as clusters of dataflow.

A program draws its input (one node per named parameter), its steps in
source order (sites, local values) and its output. A site's value flows
from its morphism; an application `f(a, b)` reads the named values.
"""

from __future__ import annotations

from qvr_core.check.module import LetInfo, ProgramInfo, SiteInfo
from qvr_core.graph.builder import GraphBuilder
from qvr_core.graph.expressions import expand, expand_let, is_let, morphism_node, source_text
from qvr_core.graph.nodes import ClusterKind, NodeKind
from qvr_core.syntax import ast
from qvr_core.text.span import Span


def draw_program(b: GraphBuilder, info: ProgramInfo) -> None:
    decl = info.decl
    t = info.type or info.header
    with b.cluster((info.name,), ClusterKind.PROGRAM, info.name, t, decl.span) as cid:
        prefix = tuple(cid.split("."))
        values: dict[str, str] = {}
        inputs = _inputs(b, info, prefix, values)
        sites = {site.step: site for site in info.sites}
        for step in decl.steps:
            if isinstance(step, ast.SampleStep | ast.ObserveStep):
                site = sites.get(step)
                if site is not None:
                    _site(b, site, prefix, inputs, values)
            elif isinstance(step, ast.LetStep):
                _value(b, info, (step.target,), step.value, step.span, prefix, values)
            elif isinstance(step, ast.DestructureStep):
                _value(b, info, step.targets, step.value, step.span, prefix, values)
            elif isinstance(step, ast.ReturnStep):
                out = b.node((*prefix, "output"), "output", NodeKind.OUTPUT, t.cod, step.span)
                b.edges([values[v.text] for v in step.values if v.text in values], out)


def draw_let(b: GraphBuilder, info: LetInfo) -> None:
    """A let on its own: its argument, its expression, its result."""
    decl = info.decl
    t = info.type
    with b.cluster((info.name,), ClusterKind.LET, info.name, t, decl.span) as cid:
        prefix = tuple(cid.split("."))
        start = b.node(
            (*prefix, "input"), "input", NodeKind.INPUT, t.dom if t else None, decl.expr.span
        )
        b.expanding.append(info.name)
        try:
            exits = expand(b, decl.expr, [start], prefix)
        finally:
            b.expanding.pop()
        out = b.node(
            (*prefix, "output"), "output", NodeKind.OUTPUT, t.cod if t else None, decl.expr.span
        )
        b.edges(exits, out)


def _inputs(
    b: GraphBuilder, info: ProgramInfo, prefix: tuple[str, ...], values: dict[str, str]
) -> list[str]:
    decl = info.decl
    if decl.params is None:
        t = (info.type or info.header).dom
        return [b.node((*prefix, "input"), "input", NodeKind.INPUT, t, decl.dom.span)]
    types = dict(info.params)
    nodes = []
    for p in decl.params:
        if p.text in values:
            continue  # a repeated parameter name: the checker reports it
        node = b.node((*prefix, p.text), p.text, NodeKind.INPUT, types.get(p.text), p.span)
        values[p.text] = node
        nodes.append(node)
    return nodes


def _site(
    b: GraphBuilder,
    site: SiteInfo,
    prefix: tuple[str, ...],
    inputs: list[str],
    values: dict[str, str],
) -> None:
    kind = NodeKind.OBSERVE if site.kind == "observe" else NodeKind.SAMPLE
    step = site.step
    inner = (*prefix, site.name)
    if site.args is not None:
        assert isinstance(site.source, ast.NameRef)
        args = [values[a] for a in site.args if a in values]
        if is_let(b, site.source.name.text):
            exits = expand_let(b, site.source, site.morphism_type, args, inner)
        else:
            exits = [morphism_node(b, site.source.name, inner, site.morphism_type)]
            b.edges(args, exits[0])
    else:
        exits = expand(b, step.source, inputs, inner)
    node = b.node(inner, site.name, kind, site.value_type, step.span)
    b.edges(exits, node)
    for name in site.parts or (site.name,):  # a tuple site's names all read its node
        values.setdefault(name, node)


def _value(
    b: GraphBuilder,
    info: ProgramInfo,
    targets: tuple[ast.Name, ...],
    value: ast.Arith,
    span: Span,
    prefix: tuple[str, ...],
    values: dict[str, str],
) -> None:
    """`let y = ...` or `let (a, b) = ...`: each bound name reads the values used."""
    used = [values[n] for n in _names(value) if n in values]
    formula = source_text(b, value)
    for target in targets:
        if target.text in values:
            continue  # rebound: the checker reports it
        node = b.node(
            (*prefix, target.text),
            target.text,
            NodeKind.VALUE,
            info.values.get(target.text),
            span,
            detail=f"= {formula}",
        )
        b.edges(used, node)
        values[target.text] = node


def _names(node: ast.Arith) -> list[str]:
    """Names read by an arithmetic expression, once each, in reading order."""
    found: dict[str, None] = {}
    stack: list[ast.Arith] = [node]  # its own stack, children pushed right to left
    while stack:
        n = stack.pop()
        if isinstance(n, ast.Var):
            found.setdefault(n.name.text)
        elif isinstance(n, ast.Unary):
            stack.append(n.operand)
        elif isinstance(n, ast.Binary):
            stack += (n.right, n.left)
        elif isinstance(n, ast.Apply):
            stack += reversed(n.args)
        elif isinstance(n, ast.Index):  # `h[0]`, `h[picks]`: reads h (picks is data)
            found.setdefault(n.base.name.text)
    return list(found)
