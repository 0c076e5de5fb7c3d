"""Types of morphism expressions: names, `>>`, `@` and the combinators.

Sequence lifting (spec section 3): a morphism `A -> B` meeting a sequence
is applied pointwise, `[A] -> [B]`; so `tok_embed >> scan(cell)` is
`[Token] -> Hidden`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, assert_never

from qvr_core import builtins
from qvr_core.builtins.combinators import learned_init
from qvr_core.check.change_base import check_change_base
from qvr_core.check.context import COMBINATOR_KWARGS, COMBINATORS, SymbolKey, describe
from qvr_core.check.curry import check_curry
from qvr_core.check.marginals import check_marginalize
from qvr_core.check.matching import Sides, match
from qvr_core.check.types import Arrow, Group, Product, Seq, dims_text
from qvr_core.check.unchecked import note as not_checked
from qvr_core.check.unchecked import refer
from qvr_core.check.wiring import CONTRACTION, Param
from qvr_core.syntax import ast
from qvr_core.text import rules

if TYPE_CHECKING:
    from qvr_core.check.passes import Env


#: quivers' expression forms beyond qvr's combinators (parsers, cups and caps, data).
EXPR_BUILTINS = frozenset({"parser", "ccg", "lambek", "chart_fold", "cup", "cap", "from_data"})


def infer(env: Env, expr: ast.Expr) -> Arrow | Group | None:
    """The type of a morphism expression, recorded for hover; None after an error."""
    match expr:
        case ast.NameRef():
            t = env.name_type(expr.name)
        case ast.Compose():
            t = _compose(env, expr)
        case ast.Tensor():
            t = _tensor(env, expr)
        case ast.Call():
            t = _call(env, expr)
        case ast.Literal():  # a literal where a morphism is expected
            env.ctx.report(
                rules.WRONG_KIND,
                f"expected a morphism, found {env.ctx.source(expr.span)}",
                expr.span,
            )
            return None
        case ast.Method() if expr.is_dagger:
            t = _dagger(env, expr)
        case ast.Method() if expr.is_change_base:
            t = check_change_base(env, expr, arrow(env, expr.receiver, "`.change_base`"))
        case ast.Method() if expr.is_curry:
            t = check_curry(env, expr, arrow(env, expr.receiver, f"`.{expr.method.text}`"))
        case ast.Method():  # `.marginalize(A)`, the other method typed (expr_reason)
            t = check_marginalize(env, expr, arrow(env, expr.receiver, "`.marginalize`"))
        case _:
            assert_never(expr)
    if t is not None:
        env.ctx.expr_types[expr] = t
        env.ctx.record_type(expr.span, t)
    return t


def _dagger(env: Env, expr: ast.Method) -> Arrow | None:
    """`f.dagger : B -> A` for `f : A -> B` between finite sets, quivers' transpose of the
    tensor (0.25.2, `Morphism.dagger`): compiled only under a rule at the algebra level,
    and in qvr only under a declared one, since without a declaration a latent is a
    kernel to draw from, whose transpose is no kernel."""
    ctx = env.ctx
    inner = arrow(env, expr.receiver, "`.dagger`")
    declared = env.algebra()
    if declared is None or declared.level != "algebra":
        why = (
            "the file declares no composition rule (qvr's latents are then kernels to draw "
            "from, whose transpose is none)"
            if declared is None
            else f"`composition {declared.name}` is declared at the {declared.level} level"
        )
        ctx.report(
            rules.COMPOSITION_RULE,
            f"`.dagger` needs a composition rule at the algebra level (`composition real "
            f"[level=algebra]`): {why}",
            expr.method.span,
        )
        return None
    if inner is None:
        return None
    sides = (inner.dom, inner.cod)
    if not all(isinstance(v, Product) and v.discrete for v in sides):
        ctx.report(
            rules.ROLE_TYPE_MISMATCH,
            f"`.dagger` transposes a relation between finite sets, not "
            f"{ctx.source(expr.receiver.span)} : {inner.label}",
            expr.receiver.span,
        )
        return None
    return Arrow(inner.cod, inner.dom)


def arrow(env: Env, expr: ast.Expr, where: str) -> Arrow | None:
    """Infer an expression that must be a single morphism (not a replicate group)."""
    t = infer(env, expr)
    if isinstance(t, Group):
        env.ctx.report(
            rules.GROUP_AS_MORPHISM,
            f"{env.ctx.source(expr.span)} is a replicate={t.count} group; {where} needs one "
            f"morphism: use fan({env.ctx.source(expr.span)}) or one copy such as "
            f"{env.ctx.source(expr.span)}_0",
            expr.span,
        )
        return None
    return t


def text(env: Env, expr: ast.Arg) -> str:
    return env.ctx.source(expr.span)


# ---------------------------------------------------------------- compose


def _compose(env: Env, expr: ast.Compose) -> Arrow | None:
    """`a >> b >> c ...`: along the chain's left spine in a loop, so that a long flat
    chain does not recurse once per `>>` (each inner `>>` is recorded as `infer` would)."""
    spine = _spine(expr, ast.Compose)
    t = arrow(env, spine[-1].left, "'>>'")
    for node in reversed(spine):
        right = arrow(env, node.right, "'>>'")
        t = (
            None
            if t is None or right is None
            else compose_types(env, t, right, node.left, node.right)
        )
        if node is not expr and t is not None:
            env.ctx.expr_types[node] = t
            env.ctx.record_type(node.span, t)
    return t


def _spine(expr: ast.Compose | ast.Tensor, kind: type) -> list[ast.Compose | ast.Tensor]:
    """`expr` and the nodes of its kind down its left side, outermost first."""
    spine = [expr]
    while isinstance(left := spine[-1].left, ast.Compose | ast.Tensor) and type(left) is kind:
        spine.append(left)
    return spine


def compose_types(
    env: Env, left: Arrow, right: Arrow, lnode: ast.Expr, rnode: ast.Expr
) -> Arrow | None:
    """left >> right with sequence lifting on either side."""
    produced, expected = left.cod, right.dom
    sides = Sides(text(env, lnode), text(env, rnode), projection_at=lnode.span.end)
    if isinstance(produced, Seq) and isinstance(expected, Product):
        # right is applied to every element: [A] -> [B]
        if not match(env.ctx, produced.elem, expected, rnode.span, sides):
            return None
        return Arrow(left.dom, lift(right.cod))
    if isinstance(produced, Product) and isinstance(expected, Seq):
        if isinstance(left.dom, Seq):
            env.ctx.report(
                rules.SEQUENCE_MISMATCH,
                f"cannot compose: {sides.consumer} expects a sequence {expected.label} but "
                f"{sides.producer} produces one value {produced.label} from a whole sequence",
                rnode.span,
            )
            return None
        # left is applied to every element of the incoming sequence
        if not match(env.ctx, produced, expected.elem, rnode.span, sides):
            return None
        return Arrow(lift(left.dom), right.cod)
    if isinstance(produced, Seq) and isinstance(expected, Seq):
        if not match(env.ctx, produced.elem, expected.elem, rnode.span, sides):
            return None
        return Arrow(left.dom, right.cod)
    if isinstance(produced, Product) and isinstance(expected, Product):
        if not match(env.ctx, produced, expected, rnode.span, sides):
            return None
        return Arrow(left.dom, right.cod)
    return None


def lift(t: Product | Seq | object) -> Seq:
    return t if isinstance(t, Seq) else Seq(t)  # type: ignore[arg-type]  # callers pass a Product


# ----------------------------------------------------------------- tensor


def _tensor(env: Env, expr: ast.Tensor) -> Arrow | None:
    """`a @ b @ c ...`: along the left spine in a loop, as `_compose` does."""
    spine = _spine(expr, ast.Tensor)
    t = arrow(env, spine[-1].left, "'@'")
    for node in reversed(spine):
        right = arrow(env, node.right, "'@'")
        t = None if t is None or right is None else _pair(env, node, t, right)
        if node is not expr and t is not None:
            env.ctx.expr_types[node] = t
            env.ctx.record_type(node.span, t)
    return t


def _pair(env: Env, expr: ast.Compose | ast.Tensor, left: Arrow, right: Arrow) -> Arrow | None:
    parts = (left.dom, left.cod, right.dom, right.cod)
    if not all(isinstance(p, Product) for p in parts):
        bad = expr.left if any(isinstance(p, Seq) for p in (left.dom, left.cod)) else expr.right
        env.ctx.report(
            rules.SEQUENCE_MISMATCH,
            f"'@' pairs single values, but {text(env, bad)} works on sequences "
            f"({describe(env.ctx.expr_types.get(bad))}): apply '@' per element and scan "
            "afterwards",
            bad.span,
        )
        return None
    return Arrow(product(left.dom, right.dom), product(left.cod, right.cod))  # type: ignore[arg-type]  # Products, checked above


def product(*ps: Product) -> Product:
    return Product(tuple(f for p in ps for f in p.factors), tuple(n for p in ps for n in p.written))


# ------------------------------------------------------------------ calls


def _call(env: Env, call: ast.Call) -> Arrow | Group | None:
    name = call.callee.text
    decl = env.ctx.top.get(name)
    if isinstance(decl, ast.OtherDecl) and decl.clause.kind == CONTRACTION:
        return _contraction_call(env, call)
    if name in EXPR_BUILTINS or isinstance(decl, ast.OtherDecl):
        refer(env.ctx, call)
        not_checked(env.ctx, call.callee.span, f"{name}(...)")
        return None
    if name not in COMBINATORS:
        if name in env.ctx.top:
            decl = env.ctx.top[name]
            kind = type(decl).__name__.removesuffix("Decl").lower()
            env.ctx.ref(call.callee.span, SymbolKey(name))
            env.ctx.report(
                rules.MORPHISM_CALL_IN_LET,
                f"{name}(...) applies a {kind} to values, which only a program step can do "
                f"(sample x <- {name}(...)); in a let, compose with '>>'",
                call.span,
            )
        else:
            env.ctx.undefined(call.callee, "combinator", COMBINATORS)
        return None
    _check_kwargs(env, call, tuple(COMBINATOR_KWARGS.get(name, {})))
    return COMBINATOR_RULES[name](env, call)


def _contraction_call(env: Env, call: ast.Call) -> Arrow | None:
    """`bilinear_score(f, g, h)`: the declared contraction's `dom -> cod`, each argument
    a declared morphism or let (quivers looks the arguments up by name) whose type is
    its parameter's. quivers checks only that the sizes multiply out alike; an argument
    whose factors have the sizes of the parameter's, but other names, is a hint (QVR203,
    as a match by dimension), other sizes an error (QVR201: the einsum cannot align
    them). Its tensor is a relation, so the file must declare a composition rule: without
    one qvr's latents are kernels to draw from (QVR316 where the call is written)."""
    ctx = env.ctx
    name = call.callee.text
    ctx.ref(call.callee.span, SymbolKey(name))
    found = env.contraction(name)
    _check_kwargs(env, call, ())
    if found is None:  # its declaration is wrong (reported there) or names only
        refer(ctx, call.args)
        return None
    declared = env.algebra()
    if declared is None:
        refer(ctx, call.args)
        ctx.report(
            rules.COMPOSITION_RULE,
            f"{name}(...) contracts relations, but the file declares no composition rule "
            "(qvr's latents are then kernels to draw from): declare one above the morphisms "
            "(`composition real [level=algebra]`)",
            call.callee.span,
        )
        return None
    if len(call.args) != len(found.params):
        refer(ctx, call.args)
        wanted = ", ".join(p.name for p in found.params)
        ctx.report(
            rules.ARGUMENT_COUNT,
            f"contraction {name} takes {len(found.params)} argument"
            f"{'s' if len(found.params) != 1 else ''} ({wanted}), not {len(call.args)}",
            call.span,
        )
        return None
    ok = True
    for arg, param in zip(call.args, found.params, strict=True):
        if not isinstance(arg, ast.NameRef):
            refer(ctx, arg)
            ctx.report(
                rules.ARGUMENT_NOT_A_NAME,
                f"the argument {param.name} of contraction {name} is a morphism's name "
                f"(quivers looks it up by name), not {text(env, arg)}: bind it with "
                "`define` first",
                arg.span,
            )
            ok = False
            continue
        t = arrow(env, arg, f"contraction {name}")
        ok = t is not None and _fits_param(env, arg, t, name, param) and ok
    return found.type if ok else None


def _fits_param(env: Env, arg: ast.NameRef, t: Arrow, name: str, param: Param) -> bool:
    want = param.type
    message = (
        f"the argument {arg.name.text} of contraction {name} is {t.label} "
        f"({dims_text(t.dom)} -> {dims_text(t.cod)}), but its parameter {param.name} is "
        f"{want.label} ({dims_text(want.dom)} -> {dims_text(want.cod)})"
    )
    dom, cod, want_dom, want_cod = t.dom, t.cod, want.dom, want.cod
    if not (isinstance(dom, Product) and isinstance(cod, Product)):
        env.ctx.report(rules.DIMENSION_MISMATCH, message, arg.span)
        return False
    assert isinstance(want_dom, Product) and isinstance(want_cod, Product)  # finite sets
    if (dom.names, cod.names) == (want_dom.names, want_cod.names):
        return True
    if _sizes(dom, cod) == _sizes(want_dom, want_cod) and dom.discrete and cod.discrete:
        env.ctx.hint_or_error(
            rules.MATCHED_BY_DIMENSION,
            f"matched by size, not by name: {message}",
            arg.span,
        )
        return not env.ctx.strict
    env.ctx.report(rules.DIMENSION_MISMATCH, message, arg.span)
    return False


def _sizes(*sides: Product) -> tuple[tuple[int, ...], ...]:
    """Each side's factor sizes: what quivers compares a contraction's arguments by."""
    return tuple(tuple(f.size for f in side.factors) for side in sides)


def _check_kwargs(env: Env, call: ast.Call, allowed: tuple[str, ...]) -> None:
    from qvr_core.check.context import suggest

    for kw in call.kwargs:
        if kw.key.text not in allowed:
            close = suggest(kw.key.text, allowed)
            hint = f": did you mean '{close[0]}'?" if close else ""
            takes = f"takes {', '.join(allowed)}" if allowed else "takes no keyword arguments"
            env.ctx.report(
                rules.UNKNOWN_OPTION,
                f"unknown keyword '{kw.key.text}' for {call.callee.text} ({takes}){hint}",
                kw.key.span,
            )


def _positional(env: Env, call: ast.Call, count: int, usage: str) -> bool:
    if len(call.args) != count:
        env.ctx.report(
            rules.ARGUMENT_COUNT,
            f"{call.callee.text} takes {count} argument{'s' if count > 1 else ''}: {usage}",
            call.span,
        )
        return False
    return True


def _fan(env: Env, call: ast.Call) -> Arrow | None:
    if not call.args:
        env.ctx.report(
            rules.ARGUMENT_COUNT, "fan needs branches: fan(f, g, ...) or fan(group)", call.span
        )
        return None
    exprs = [a for a in call.args if isinstance(a, ast.Expr)]
    for a in call.args:
        if not isinstance(a, ast.Expr):
            env.ctx.report(rules.WRONG_KIND, f"fan takes morphisms, not {text(env, a)}", a.span)
    if len(exprs) == 1:
        t = infer(env, exprs[0])
        if isinstance(t, Group):
            m = t.member
            if not isinstance(m.cod, Product):
                return None
            return Arrow(m.dom, product(*([m.cod] * t.count)))
        if t is None:
            return None
        return t
    types: list[Arrow | None] = [arrow(env, e, "a fan branch") for e in exprs]
    if any(t is None for t in types):
        return None
    arrows: list[Arrow] = types  # type: ignore[assignment]  # no None, checked above
    first = arrows[0].dom
    for e, t in zip(exprs[1:], arrows[1:], strict=True):
        if not _same_domain(first, t.dom):
            branches = "; ".join(
                f"{text(env, x)} takes {a.dom.label} ({dims_text(a.dom)})"
                for x, a in zip(exprs, arrows, strict=True)
            )
            env.ctx.report(
                rules.FAN_DOMAINS,
                f"fan branches must take the same input, but {branches}",
                e.span,
            )
            return None
    cods = [a.cod for a in arrows]
    if all(isinstance(c, Product) for c in cods):
        result = Arrow(first, product(*cods))  # type: ignore[arg-type]  # all Products
    elif all(isinstance(c, Seq) for c in cods):
        result = Arrow(first, Seq(product(*(c.elem for c in cods))))  # type: ignore[union-attr]  # all Seqs
    else:
        env.ctx.report(
            rules.SEQUENCE_MISMATCH,
            "fan branches must all produce single values or all produce sequences",
            call.span,
        )
        return None
    _bidirectional(env, call, exprs, arrows)
    return result


def _same_domain(a: object, b: object) -> bool:
    if isinstance(a, Seq) and isinstance(b, Seq):
        return a.elem.names == b.elem.names
    if isinstance(a, Product) and isinstance(b, Product):
        return a.names == b.names
    return False


def _bidirectional(env: Env, call: ast.Call, exprs: list[ast.Expr], arrows: list[Arrow]) -> None:
    """fan(p, q), both scanning the same sequence, no explicit reverse=: q reads right to left."""
    if len(exprs) != 2 or not all(isinstance(a.dom, Seq) for a in arrows):
        return
    scans = [env.sequence_scans(e) for e in exprs]
    if not all(scans):
        return
    if any(kw.key.text == "reverse" for s in scans for c in s for kw in c.kwargs):
        return
    env.ctx.reversed_branches[call] = frozenset({1})
    notes = ("reads the sequence left to right", "reads the sequence right to left")
    for e, t, note in zip(exprs, arrows, notes, strict=True):
        env.ctx.record_type(e.span, t, f"{note} (bidirectional fan)")


def _scan(env: Env, call: ast.Call) -> Arrow | None:
    """`scan(cell)`, the last state, and `scanl(cell)`, every state: both need a cell
    `A * H -> H`."""
    name = call.callee.text
    combinator = builtins.COMBINATORS[name]
    if not _positional(env, call, 1, f"{name}(cell), {name}(cell, init=learned)"):
        return None
    for kw in call.kwargs:
        v = kw.value
        if kw.key.text not in combinator.quivers_keywords:
            _extension(env, kw, f"`{name}(..., {kw.key.text}=...)`")
        if kw.key.text == "reverse":
            if not isinstance(v, ast.Literal) or v.kind != "bool":
                env.ctx.report(
                    rules.INVALID_OPTION_VALUE,
                    f"reverse must be true or false, not {text(env, v)}",
                    v.span,
                )
            elif v.value:
                env.ctx.reversed_scans.add(call)
        elif kw.key.text == "init" and learned_init(kw.word) is None:
            env.ctx.report(
                rules.INVALID_OPTION_VALUE,
                f"init must be zeros or learned, not {text(env, v)}",
                v.span,
            )
    cell_node = _morphism_arg(env, call.args[0], f"{name} needs a cell morphism")
    if cell_node is None:
        return None
    cell = arrow(env, cell_node, call.callee.text)
    if cell is None:
        return None
    cname = text(env, cell_node)
    shape = "the scan cell must have the form A * H -> H (per-step input, then the state)"
    if not isinstance(cell.dom, Product) or not isinstance(cell.cod, Product):
        env.ctx.report(
            rules.BAD_SCAN_CELL, f"{shape}, but {cname} has type {cell.label}", cell_node.span
        )
        return None
    dom, state = cell.dom, cell.cod
    k = len(state.factors)
    if len(dom.factors) <= k:
        env.ctx.report(
            rules.BAD_SCAN_CELL,
            f"{shape}, but {cname} : {cell.label} has no per-step input before the state "
            f"{state.label}",
            cell_node.span,
        )
        return None
    tail = Product(dom.factors[-k:], tuple(f.name for f in dom.factors[-k:]))
    head = _leading(env, dom, len(dom.factors) - k)
    if tail.names != state.names:
        if tail.continuous and state.continuous and tail.dim == state.dim:
            sides = Sides(f"the state of {cname}", "its input", verb=call.callee.text)
            match(env.ctx, state, tail, cell_node.span, sides)
        else:
            env.ctx.report(
                rules.BAD_SCAN_CELL,
                f"{shape}, but {cname} : {cell.label} ends its input with "
                f"{tail.label} ({dims_text(tail)}) where the state {state.label} "
                f"({dims_text(state)}) should be",
                cell_node.span,
            )
            return None
    return Arrow(Seq(head), Seq(state) if combinator.cost.keeps_positions else state)


def _morphism_arg(env: Env, arg: ast.Arg, need: str) -> ast.Expr | None:
    """A combinator's argument that must be a morphism expression; QVR104 otherwise."""
    if isinstance(arg, ast.Expr):
        return arg
    env.ctx.report(rules.WRONG_KIND, f"{need}, not {text(env, arg)}", arg.span)
    return None


def _extension(env: Env, kw: ast.KeywordArg, spelling: str) -> None:
    """QVR012: a keyword quivers' grammars do not parse on this call."""
    env.ctx.hint_or_error(
        rules.QVR_EXTENSION,
        f"{spelling} is a qvr extension: quivers' grammars do not parse it "
        "(an error under --strict)",
        kw.span,
    )


def _multihead(env: Env, call: ast.Call) -> Arrow | None:
    """`multihead(q, k, v)` and `causal_multihead`: h heads of `q, k : A -> K`,
    `v : A -> V`, [A] -> [V * ... * V]; `cross_multihead`: `q : Q -> K` reads the
    queries' sequence and `k, v` the memory's, [Q * M] -> [V * ... * V]."""
    name = call.callee.text
    kind = builtins.COMBINATORS[name].attention
    if not _positional(env, call, 3, f"{name}(query, key, value)"):
        return None
    roles = ("query", "key", "value")
    heads: list[tuple[ast.Expr, Arrow, int]] = []
    for role, arg in zip(roles, call.args, strict=True):
        a = _morphism_arg(env, arg, f"{name}'s {role} must be morphisms")
        if a is None:
            return None
        t = infer(env, a)
        if t is None:
            return None
        member, count = (t.member, t.count) if isinstance(t, Group) else (t, 1)
        if not isinstance(member.dom, Product) or not isinstance(member.cod, Product):
            env.ctx.report(
                rules.ATTENTION_MISMATCH,
                f"{name}'s {role} maps read and give single values per position, but "
                f"{text(env, a)} has type {member.label}",
                a.span,
            )
            return None
        if not member.cod.continuous:
            env.ctx.report(
                rules.ATTENTION_MISMATCH,
                f"{name}'s {role} maps must give real vectors, but {text(env, a)} gives "
                f"{member.cod.label} ({dims_text(member.cod)})",
                a.span,
            )
            return None
        heads.append((a, member, count))
    (q_node, q, hq), (k_node, k, hk), (v_node, v, hv) = heads
    if not hq == hk == hv:
        counts = ", ".join(f"{text(env, n)} has {h}" for n, _, h in heads)
        env.ctx.report(
            rules.ATTENTION_MISMATCH,
            f"{name} needs one head count for query, key and value, but {counts} "
            "(declare them with the same replicate=)",
            call.span,
        )
        return None
    # keys and values read one sequence: the input's (self-attention) or the memory's
    read, reader = (k, k_node) if kind == "cross" else (q, q_node)
    for node, member in ((k_node, k), (v_node, v)):
        if member.dom.names != read.dom.names:  # type: ignore[union-attr]  # Products, checked
            what = "self-attention reads one sequence"
            if kind == "cross":
                what = "keys and values read one memory"
            env.ctx.report(
                rules.ATTENTION_MISMATCH,
                f"{what}, but {text(env, reader)} reads {read.dom.label} and "
                f"{text(env, node)} reads {member.dom.label}",
                node.span,
            )
            return None
    if q.cod.names != k.cod.names:  # type: ignore[union-attr]  # Products, checked
        env.ctx.report(
            rules.ATTENTION_MISMATCH,
            f"queries and keys are compared by a dot product, but {text(env, q_node)} gives "
            f"{q.cod.label} ({dims_text(q.cod)}) and {text(env, k_node)} gives "
            f"{k.cod.label} ({dims_text(k.cod)})",
            k_node.span,
        )
        return None
    dom = product(q.dom, k.dom) if kind == "cross" else q.dom  # type: ignore[arg-type]  # Products
    result = Arrow(Seq(dom), Seq(product(*([v.cod] * hv))))  # type: ignore[arg-type]  # Products
    d_k = q.cod.dim  # type: ignore[union-attr]  # a Product, checked above
    note = f"{hq} head{'s' if hq > 1 else ''}, d_k = {d_k}"
    if kind == "causal":
        note += ", position t sees positions 0..t"
    elif kind == "cross":
        note += f", queries read {q.dom.label}, keys and values the memory {k.dom.label}"
    env.ctx.record_type(call.callee.span, result, note)
    return result


def _leading(env: Env, dom: Product, n: int) -> Product:
    """The first n flattened factors, named as written when alias boundaries allow."""
    written: list[str] = []
    count = 0
    for name in dom.written:
        if count >= n:
            break
        alias = env.ctx.aliases.get(name)
        written.append(name)
        count += len(alias.factors) if alias is not None else 1
    if count != n:
        written = [f.name for f in dom.factors[:n]]
    return Product(dom.factors[:n], tuple(written))


def _stack_repeat(env: Env, call: ast.Call) -> Arrow | None:
    name = call.callee.text
    if builtins.COMBINATORS[name].default_count is not None:  # `repeat(b)` or `repeat(b, n)`
        if len(call.args) not in (1, 2):
            env.ctx.report(
                rules.ARGUMENT_COUNT,
                f"{name} takes 1 or 2 arguments: {name}(body) or {name}(body, n)",
                call.span,
            )
            return None
    elif not _positional(env, call, 2, f"{name}(body, n)"):
        return None
    written, *count = call.args  # no count: the registry's default, set at run time
    n = count[0] if count else None
    if isinstance(n, ast.Literal):
        if n.kind != "int" or int(n.value) < 1:
            env.ctx.report(
                rules.BAD_STACK_BODY,
                f"{name} needs a positive whole number of copies, not {n.raw}",
                n.span,
            )
    elif n is not None:
        env.ctx.report(
            rules.BAD_STACK_BODY, f"{name} needs a number of copies, not {text(env, n)}", n.span
        )
    body_node = _morphism_arg(env, written, f"{name} needs a morphism body")
    if body_node is None:
        return None
    body = arrow(env, body_node, name)
    if body is None:
        return None
    dom: object = body.dom
    cod: object = body.cod
    if isinstance(dom, Seq) and isinstance(cod, Seq):  # a block over a whole sequence
        dom, cod = dom.elem, cod.elem
    elif isinstance(dom, Seq) or isinstance(cod, Seq):
        dom = cod = None  # one side a sequence: reported below
    if isinstance(dom, Product) and isinstance(cod, Product):
        if dom.names == cod.names:
            return body
        if dom.continuous and cod.continuous and dom.dim == cod.dim:
            match(
                env.ctx,
                cod,
                dom,
                body_node.span,
                Sides(f"{text(env, body_node)}", "its next copy", verb=name),
            )
            return body
    env.ctx.report(
        rules.BAD_STACK_BODY,
        f"{name} chains copies of its body, so the body must be A -> A, but "
        f"{text(env, body_node)} has type {body.label} "
        f"({_dims(body.dom)} -> {_dims(body.cod)})",
        body_node.span,
    )
    return None


def _dims(t: object) -> str:
    return dims_text(t) if isinstance(t, Product | Seq) else "?"


def _identity(env: Env, call: ast.Call) -> Arrow | None:
    if not _positional(env, call, 1, "identity(Object)"):
        return None
    arg = call.args[0]
    if not isinstance(arg, ast.NameRef):
        env.ctx.report(rules.WRONG_KIND, "identity takes an object name: identity(Token)", arg.span)
        return None
    from qvr_core.check.declarations import resolve_type

    p = resolve_type(env.ctx, ast.TypeRef((arg.name,), arg.span))
    if p is None:
        return None
    return Arrow(p, p)


#: The typing rule of each combinator of the registry (`qvr_core.builtins.COMBINATORS`).
class _Rules:
    """The typing rule of each combinator, named after it (a missing one fails below)."""

    fan = staticmethod(_fan)
    scan = staticmethod(_scan)
    scanl = staticmethod(_scan)
    multihead = staticmethod(_multihead)
    causal_multihead = staticmethod(_multihead)
    cross_multihead = staticmethod(_multihead)
    stack = staticmethod(_stack_repeat)
    repeat = staticmethod(_stack_repeat)
    identity = staticmethod(_identity)


COMBINATOR_RULES: dict[str, Callable[[Env, ast.Call], Arrow | Group | None]] = {
    name: getattr(_Rules, name) for name in COMBINATORS
}
