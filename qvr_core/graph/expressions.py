"""Morphism expressions as dataflow: one node per use of a morphism or combinator.

`expand(builder, expr, sources, prefix)` draws `expr` fed by the nodes in
`sources` and returns the nodes its result leaves from. A let used by name is
drawn inline, inside a cluster of its own, so that two uses never share nodes
(each use is its own flow of data). A combinator call is one node; an
attention call (`multihead`) is labelled with its kind and the checker's note
on the callee (`2 heads, d_k = ...`). Types come from the checker's
`expr_types`; nothing here infers one.
"""

from __future__ import annotations

import re

from qvr_core.builtins import COMBINATORS, Combinator
from qvr_core.builtins.schemas import PARSER
from qvr_core.check.module import MorphismInfo
from qvr_core.check.types import Arrow, Group
from qvr_core.graph.builder import GraphBuilder
from qvr_core.graph.nodes import ClusterKind, NodeKind, TypeLike
from qvr_core.syntax import ast

#: Combinators drawn as one box; the variadic one (`fan`) is drawn as its branches.
OPAQUE_COMBINATORS = frozenset(n for n, c in COMBINATORS.items() if not c.variadic)
#: The detail of a let drawn as one node (see `GraphBuilder.drawn_in_place`).
FOLDED = "let, folded: nested too deeply to draw in place"
#: How an attention node names its kind (the registry's `Combinator.attention`).
ATTENTION_WORDS = {
    "self": "self-attention",
    "causal": "causal self-attention",
    "cross": "cross-attention",
}


def expand(
    b: GraphBuilder,
    expr: ast.Expr,
    sources: list[str],
    prefix: tuple[str, ...],
    reversed_: bool = False,
) -> list[str]:
    """Draw `expr` fed by `sources`; `reversed_` marks the edges that enter it."""
    if isinstance(expr, ast.Compose):
        # a loop along the left spine: a long flat chain does not recurse per '>>'
        rights = []
        while isinstance(expr, ast.Compose):
            rights.append(expr.right)
            expr = expr.left
        exits = expand(b, expr, sources, prefix, reversed_)
        for right in reversed(rights):
            exits = expand(b, right, exits, prefix)
        return exits
    if isinstance(expr, ast.Tensor):
        return _tensor(b, expr, sources, prefix, reversed_)
    if isinstance(expr, ast.Call):
        return _call(b, expr, sources, prefix, reversed_)
    if isinstance(expr, ast.NameRef):
        return _name(b, expr, sources, prefix, reversed_)
    if expr.typed:
        return _method(b, expr, sources, prefix, reversed_)
    return []


def _method(
    b: GraphBuilder,
    expr: ast.Method,
    sources: list[str],
    prefix: tuple[str, ...],
    reversed_: bool,
) -> list[str]:
    """`f.dagger` (the relation read backwards), `f.curry_right` (a domain factor moved
    into a residual), `f.change_base(phi)` (the relation moved to another rule) or
    `f.marginalize(A)` (factors of its codomain summed out): one box, its receiver being
    one morphism."""
    text = b.module.source[expr.span.start : expr.span.end]
    t = b.module.expr_types.get(expr)
    detail = (
        "transposed relation"
        if expr.is_dagger
        else "curried relation"
        if expr.is_curry
        else "change of base"
        if expr.is_change_base
        else "codomain factors summed out"
    )
    node = b.node((*prefix, text), text, NodeKind.MORPHISM, t, expr.span, detail=detail)
    b.edges(sources, node, reversed_)
    return [node]


def morphism_node(
    b: GraphBuilder, name: ast.Name, prefix: tuple[str, ...], t: TypeLike | None
) -> str:
    """A use of a declared morphism (or program) by name, labelled with its family."""
    return b.node(
        (*prefix, name.text),
        name.text,
        NodeKind.MORPHISM,
        t,
        name.span,
        detail=_morphism_detail(b, name.text),
    )


def _name(
    b: GraphBuilder,
    ref: ast.NameRef,
    sources: list[str],
    prefix: tuple[str, ...],
    reversed_: bool,
) -> list[str]:
    t = b.module.expr_types.get(ref)
    if is_let(b, ref.name.text):
        if b.drawn_in_place(ref.name.text):
            return expand_let(b, ref, t, sources, prefix, reversed_)
        name = ref.name.text
        node = b.node((*prefix, name), name, NodeKind.MORPHISM, t, ref.span, detail=FOLDED)
        b.edges(sources, node, reversed_)
        return [node]
    node = morphism_node(b, ref.name, prefix, t)
    b.edges(sources, node, reversed_)
    return [node]


def is_let(b: GraphBuilder, name: str) -> bool:
    """A let that can be drawn inline here (not shadowed, not already being drawn)."""
    return (
        b.module.resolve_morphism(name) is None
        and b.let_decl(name) is not None
        and name not in b.expanding
    )


def expand_let(
    b: GraphBuilder,
    ref: ast.NameRef,
    t: Arrow | Group | None,
    sources: list[str],
    prefix: tuple[str, ...],
    reversed_: bool = False,
) -> list[str]:
    """A let used by name: its expression inside a cluster of its own."""
    name = ref.name.text
    decl = b.let_decl(name)
    assert decl is not None
    with b.cluster((*prefix, name), ClusterKind.LET, name, t, ref.span) as cluster_id:
        b.expanding.append(name)
        try:
            return expand(b, decl.expr, sources, tuple(cluster_id.split(".")), reversed_)
        finally:
            b.expanding.pop()


def _tensor(
    b: GraphBuilder,
    expr: ast.Tensor,
    sources: list[str],
    prefix: tuple[str, ...],
    reversed_: bool,
) -> list[str]:
    """`f @ g`: each side reads its part of the input; the pair meets at an `@` node.

    `a @ b @ c` nests an `@` node inside another; the left spine is followed
    in a loop (ids taken outermost first, nodes added innermost first, as a
    recursion would), so a long flat chain does not recurse per `@`.
    """
    spine: list[tuple[ast.Tensor, str, tuple[str, ...]]] = []
    node: ast.Expr = expr
    while isinstance(node, ast.Tensor):
        join = b.ids.make(*prefix, "tensor")
        prefix = tuple(join.split("."))
        spine.append((node, join, prefix))
        node = node.left
    exits = expand(b, node, sources, prefix, reversed_)
    for tensor, join, inner in reversed(spine):
        exits = exits + expand(b, tensor.right, sources, inner, reversed_)
        b.add(join, "@", NodeKind.COMBINATOR, b.module.expr_types.get(tensor), tensor.span)
        b.edges(exits, join)
        exits = [join]
    return exits


def _call(
    b: GraphBuilder,
    call: ast.Call,
    sources: list[str],
    prefix: tuple[str, ...],
    reversed_: bool,
) -> list[str]:
    callee = call.callee.text
    if callee in b.module.contractions:
        return _contraction(b, call, sources, prefix, reversed_)
    combinator = COMBINATORS.get(callee)
    if combinator is not None and combinator.variadic:  # branches on one input
        return _fan(b, call, sources, prefix, reversed_)
    t = b.module.expr_types.get(call)
    kind = NodeKind.COMBINATOR if callee in OPAQUE_COMBINATORS else NodeKind.MORPHISM
    label = source_text(b, call)
    if combinator is not None and combinator.attention is not None:
        label = _attention_label(b, call, combinator, label)
    detail = ""
    if callee == PARSER:  # a chart parser: its grammar is the let's record
        found = [i.grammar for i in b.module.lets.values() if i.decl.expr is call and i.grammar]
        detail = found[0].summary() if found else ""
    node = b.node((*prefix, _call_segment(call)), label, kind, t, call.span, detail)
    b.edges(sources, node, reversed_ or call in b.module.reversed_scans)
    return [node]


def _contraction(
    b: GraphBuilder,
    call: ast.Call,
    sources: list[str],
    prefix: tuple[str, ...],
    reversed_: bool,
) -> list[str]:
    """`bilinear_score(f, g, h)`: one box for the contraction, fed by the input and by
    each argument (a relation it combines, drawn as its own node: an argument is a
    morphism the contraction reads whole, not a step the data passes through)."""
    found = b.module.contractions[call.callee.text]
    box = b.ids.make(*prefix, call.callee.text)
    inner = tuple(box.split("."))
    for arg in call.args:
        if isinstance(arg, ast.NameRef):
            b.edges(_name(b, arg, [], inner, False), box)
    b.add(
        box,
        source_text(b, call),
        NodeKind.MORPHISM,
        b.module.expr_types.get(call),
        call.span,
        detail=f"contraction under {found.rule}: {found.wiring.spec}",
    )
    b.edges(sources, box, reversed_)
    return [box]


def _attention_label(b: GraphBuilder, call: ast.Call, combinator: Combinator, text: str) -> str:
    """`multihead(w_q, w_k, w_v): self-attention, 2 heads, d_k = ...`: the call, its kind
    and what the checker noted on the callee (heads and key size), as hover shows it."""
    words = ATTENTION_WORDS.get(combinator.attention or "", "attention")
    typed = b.module.type_at(call.callee.span.start)
    note = typed.note if typed is not None and typed.span == call.callee.span else ""
    return f"{text}: {words}, {note}" if note else f"{text}: {words}"


def _fan(
    b: GraphBuilder,
    call: ast.Call,
    sources: list[str],
    prefix: tuple[str, ...],
    reversed_: bool,
) -> list[str]:
    """Every branch reads the same input; the bidirectional branch reads it right to left."""
    join = b.ids.make(*prefix, call.callee.text)
    inner = tuple(join.split("."))
    branches = [a for a in call.args if isinstance(a, ast.Expr)]
    group = _group(b, branches)
    exits: list[str] = []
    if group is not None:
        ref, info = group
        for member in info.members:
            node = b.node(
                (*inner, member),
                member,
                NodeKind.MORPHISM,
                info.type,
                ref.span,
                detail=_morphism_detail(b, info.name),
            )
            b.edges(sources, node, reversed_)
            exits.append(node)
    else:
        backwards = b.module.reversed_branches.get(call, frozenset())
        for i, branch in enumerate(branches):
            exits += expand(b, branch, sources, inner, reversed_ or i in backwards)
    b.add(join, call.callee.text, NodeKind.COMBINATOR, b.module.expr_types.get(call), call.span)
    b.edges(exits, join)
    return [join]


def _group(b: GraphBuilder, branches: list[ast.Expr]) -> tuple[ast.NameRef, MorphismInfo] | None:
    """`fan(head)` over a `replicate=k` morphism: its k copies are the branches."""
    if len(branches) != 1 or not isinstance(branches[0], ast.NameRef):
        return None
    ref = branches[0]
    if not isinstance(b.module.expr_types.get(ref), Group):
        return None
    info = b.module.morphisms.get(ref.name.text)
    return (ref, info) if info is not None and info.replicate else None


def _call_segment(call: ast.Call) -> str:
    """`scan_fwd_cell`, `stack_block`: the combinator and its body when that is a name."""
    body = call.args[0] if call.args else None
    if isinstance(body, ast.NameRef):
        return f"{call.callee.text}_{body.name.text}"
    return call.callee.text


def _morphism_detail(b: GraphBuilder, name: str) -> str:
    resolved = b.module.resolve_morphism(name)
    if resolved is None:
        return "program" if b.is_program(name) else ""
    info = resolved[0]
    role = info.role or ""
    return f"{role} ~ {info.family}" if info.family else role


_SPACE = re.compile(r"\s+")
_COMMENT = re.compile(r"#[^\n]*")


def source_text(b: GraphBuilder, node: ast.Expr | ast.Arith) -> str:
    """The node's source on one line, as the user wrote it, without comments."""
    span = node.span
    text = _COMMENT.sub("", b.module.source[span.start : span.end])
    return _SPACE.sub(" ", text).strip()
