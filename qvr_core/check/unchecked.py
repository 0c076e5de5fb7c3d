"""What the checker does not check yet: names only, and one QVR011 saying so.

quivers' language is larger than what qvr types (the seeds' dialect). For the
rest (declaration kinds such as `deduction` or `effect`, object expressions
beyond products of names, programs with family steps, plates, options and
data variables) the checker still declares the names they define and records
the names they use, so that navigation works and nothing downstream reports
a false "undefined"; and it says once per declaration, at information level,
that the rest is not checked. One root cause, one diagnostic.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import TYPE_CHECKING

from qvr_core.builtins import FAMILIES as REGISTRY
from qvr_core.builtins import bind
from qvr_core.check.context import BINARY_FUNCS, COMBINATORS, FAMILIES, UNARY_FUNCS, SymbolKey
from qvr_core.check.deduction_calls import not_a_morphism
from qvr_core.check.deduction_system import DEDUCTION
from qvr_core.check.module import SymbolKind
from qvr_core.check.types import inline_object
from qvr_core.syntax import ast
from qvr_core.text import rules
from qvr_core.text.span import Span

if TYPE_CHECKING:
    from qvr_core.check.context import Context
    from qvr_core.check.passes import ProgramPass

_SEED_OPS = frozenset({"+", "-", "*", "/"})
_KNOWN_FUNCS = frozenset(UNARY_FUNCS + BINARY_FUNCS)
_SEED_ARITH = (ast.Number, ast.Var, ast.Unary, ast.Binary, ast.Apply)


def note(ctx: Context, span: Span, what: str) -> None:
    """The one information diagnostic of a declaration the checker does not check."""
    ctx.report(rules.NOT_CHECKED, f"{what} is not checked yet (names only)", span)


def declared_names(decl: ast.Decl) -> tuple[ast.Name, ...]:
    """The top-level names a declaration declares (an export declares none)."""
    if isinstance(decl, ast.ExportDecl):
        return ()
    if isinstance(decl, ast.ObjectDecl | ast.MorphismDecl | ast.OtherDecl):
        return decl.names
    return (decl.name,)


def names_in(node: object) -> Iterator[ast.Name]:
    """Every Name under a node (iteratively), in no particular order."""
    return (leaf for leaf in _leaves(node) if isinstance(leaf, ast.Name))


def _leaves(node: object) -> Iterator[ast.Name | ast.Literal]:
    """Every Name and every literal under a node (iteratively), in no particular order."""
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, ast.Name | ast.Literal):
            yield item
        elif isinstance(item, tuple):
            stack.extend(item)
        elif type(item) is not Span and dataclasses.is_dataclass(item):
            stack.extend(getattr(item, f.name) for f in dataclasses.fields(item))


def refer(ctx: Context, node: object, skip: frozenset[int] = frozenset()) -> None:
    """Record every name under `node` that is a top-level declaration as a use of it: a
    name, or an option's or keyword argument's word (`parser(terminal=Token)`), which in
    a construct checked for names only may well name one."""
    top = ctx.top
    for leaf in _leaves(node):
        if isinstance(leaf, ast.Name):
            if id(leaf) not in skip and leaf.text in top:
                ctx.ref(leaf.span, SymbolKey(leaf.text))
        elif leaf.kind == "name" and leaf.raw in top:  # `terminal=Token`'s word
            ctx.ref(leaf.span, SymbolKey(leaf.raw))


def check_other(ctx: Context, decl: ast.OtherDecl) -> None:
    """A declaration kind the checker does not model: its uses of top-level names."""
    own = frozenset(id(n) for n in decl.names)
    refer(ctx, decl.clause, own)
    keyword = decl.clause.keyword.text if decl.clause.keyword else decl.clause.kind
    if decl.clause.kind == "pragma":
        return
    label = f"{keyword} {decl.name.text}" if decl.names else keyword
    note(ctx, decl.name.span, label)


# ---------------------------------------------------------------- programs


def program_reason(pc: ProgramPass, mixed: bool = False) -> str | None:
    """Why a program needs more than the seeds' checks (None: the checker types it).

    `mixed`: the program also applies morphisms, so the model checker cannot type it;
    the seeds' checker then takes what it can type beside them (quivers' meaning): a
    number family drawing one coordinate per entry of named values (`Normal(h, 0.5)`,
    `seed_family`), and a free name that only morphisms read, per-example data of
    their domain (`observe y : Resp <- net(x)`)."""
    decl = pc.decl
    if not all(isinstance(s, ast.TypeRef) or inline_object(s) for s in (decl.dom, decl.cod)):
        return "its domain or codomain"
    if decl.param_kinds:
        return "its typed parameters"
    bound: set[str] = {p.text for p in decl.params or ()}
    used: list[ast.Name] = []
    fed: list[ast.Name] = []  # the named arguments of morphism applications
    for step in decl.steps:
        why = _step_reason(pc, step, used, fed if mixed else None)
        if why:
            return why
        if isinstance(step, ast.SampleStep | ast.ObserveStep):
            bound.update(t.text for t in (step.target, *step.more_targets))
        elif isinstance(step, ast.LetStep):
            bound.add(step.target.text)
        elif isinstance(step, ast.DestructureStep):
            bound.update(t.text for t in step.targets)
    from qvr_core.check.context import suggest

    fed_ids = {id(n) for n in fed}
    only_fed = {n.text for n in fed} - {n.text for n in used if id(n) not in fed_ids}
    for name in used:
        n = name.text
        if n in bound or n in pc.ctx.top or n in only_fed:
            continue
        if not suggest(n, sorted(bound)):
            return f"its data variable '{n}'"
    pc.fed_data = {n for n in only_fed - bound if n not in pc.ctx.top}
    return None


def _step_reason(
    pc: ProgramPass, step: ast.Step, used: list[ast.Name], fed: list[ast.Name] | None
) -> str | None:
    if isinstance(step, ast.MarginalizeStep | ast.CallStep | ast.ScoreStep):
        return f"its {_kind(step)} step"
    if isinstance(step, ast.SampleStep | ast.ObserveStep):
        if step.options:
            return "its step options"
        if isinstance(step, ast.SampleStep) and step.plate is not None:
            return "its plates"
        if isinstance(step, ast.ObserveStep) and not isinstance(step.declared, ast.TypeRef):
            return "its plates"
        source = step.source
        if isinstance(source, ast.NameRef) and is_family(pc.ctx, source.name):
            return f"its family step {source.name.text}"  # bare (`Flat`): model_steps types it
        if isinstance(source, ast.Call):
            if is_family(pc.ctx, source.callee):
                if fed is None or not seed_family(source):
                    return f"its family step {source.callee.text}(...)"
                used.extend(a.name for a in _family_values(source) if isinstance(a, ast.NameRef))
                return None
            if source.callee.text not in COMBINATORS:
                # a declared morphism takes named values: the checker says so of any other (QVR407)
                morphism = isinstance(pc.ctx.top.get(source.callee.text), ast.MorphismDecl)
                for a in (*source.args, *source.kwargs):
                    if isinstance(a, ast.NameRef):
                        used.append(a.name)
                        if fed is not None and source.callee.text in pc.ctx.top:
                            fed.append(a.name)
                    elif not (morphism and isinstance(a, ast.Literal | ast.Number | ast.Var)):
                        return "its step arguments"
        if _has_unchecked_expr(source):
            return "its step source"
        return None
    if isinstance(step, ast.LetStep) and isinstance(step.value, ast.Index):
        return _position_reason(step.value, used)
    if isinstance(step, ast.LetStep | ast.DestructureStep):
        for node in _arith_nodes(step.value):
            if not isinstance(node, _SEED_ARITH):
                return "its expressions"
            if isinstance(node, ast.Binary) and node.op not in _SEED_OPS:
                return "its expressions"
            if isinstance(node, ast.Unary) and node.op != "-":
                return "its expressions"
            # a declared morphism applied in a let is the checker's to report (QVR408)
            if (
                isinstance(node, ast.Apply)
                and node.func.text not in _KNOWN_FUNCS
                and not isinstance(pc.ctx.top.get(node.func.text), ast.MorphismDecl)
            ):
                return f"its function {node.func.text}"
            if isinstance(node, ast.Var):
                used.append(node.name)
        return None
    if isinstance(step, ast.ReturnStep):
        if step.labels:
            return "its labelled return"
        used.extend(step.values)
    return None


def seed_family(call: ast.Call) -> bool:
    """Whether the seeds' checker types this family step (`family_steps.py`): a number
    family over the reals (one draw per coordinate) whose parameters are numbers, written
    as numbers or read from named values, at least one of them named (its value's type is
    theirs: quivers' "the argument's axes being the plate")."""
    family = REGISTRY[call.callee.text]
    if family.event_rank or family.discrete or family.dirac:
        return False
    if any(p.rank for schema in family.schemas for p in schema):
        return False
    values = _family_values(call)
    if not all(
        isinstance(a, ast.NameRef) or (isinstance(a, ast.Literal) and a.kind in ("int", "float"))
        for a in values
    ):
        return False
    bound = bind(family, call.args, {kw.key.text: kw.value for kw in call.kwargs})
    if not isinstance(bound, str):  # else the checker reports the call
        bounds = (family.support.low, family.support.high)
        if any(isinstance(bound[1].get(b), ast.NameRef) for b in bounds if isinstance(b, str)):
            return False  # a support that moves with the values: no object holds the draws
    return any(isinstance(a, ast.NameRef) for a in values)


def _family_values(call: ast.Call) -> tuple[object, ...]:
    return (*call.args, *(kw.value for kw in call.kwargs))


def _position_reason(node: ast.Index, used: list[ast.Name]) -> str | None:
    """`let y = h[0]` or `let y = h[positions]`: one value of a sequence, or those at
    positions a data name gives. The index is not a use of a bound value: a free index
    name is the program's data."""
    if len(node.indices) != 1:
        return "its expressions"
    index = node.indices[0]
    whole = isinstance(index, ast.Number) and float(index.value).is_integer()
    if not (whole or isinstance(index, ast.Var)):
        return "its expressions"
    used.append(node.base.name)
    return None


def _kind(step: ast.Step) -> str:
    return type(step).__name__.removesuffix("Step").lower()


def is_family(ctx: Context, callee: ast.Name) -> bool:
    """A distribution family applied in a step: a family of the builtin registry that
    the file does not shadow. Any other undeclared name is undefined, capitalised or not
    (the registry holds every family quivers has, so `Normall` is a typo, not a family)."""
    n = callee.text
    return n not in ctx.top and n in FAMILIES


def _has_unchecked_expr(expr: object) -> bool:
    stack = [expr]
    while stack:
        e = stack.pop()
        if isinstance(e, ast.Method):
            if not e.typed:
                return True  # `.dagger`, `.marginalize(A)`, `.curry_*` are typed (expressions.py)
            stack.append(e.receiver)
        if isinstance(e, ast.Compose):
            if e.op not in (">>", "<<"):  # quivers 0.25.2's two (`g << f` is `f >> g`)
                return True
            stack += [e.left, e.right]
        elif isinstance(e, ast.Tensor):
            stack += [e.left, e.right]
        elif isinstance(e, ast.Call):
            for a in e.args:
                if isinstance(a, ast.ListArg | ast.IndexArg) or (
                    isinstance(a, ast.Literal) and a.kind == "string"
                ):
                    return True
                stack.append(a)
            for kw in e.kwargs:
                if not isinstance(kw.value, ast.Literal):
                    return True
    return False


def expr_reason(expr: ast.Expr) -> bool:
    """Whether a morphism expression uses what the checker does not type yet."""
    return _has_unchecked_expr(expr)


def _arith_nodes(node: object) -> Iterator[object]:
    stack = [node]
    while stack:
        item = stack.pop()
        yield item
        if isinstance(item, ast.Binary):
            stack += [item.left, item.right]
        elif isinstance(item, ast.Unary):
            stack.append(item.operand)
        elif isinstance(item, ast.Apply):
            stack.extend(item.args)


def structural(pc: ProgramPass, reason: str) -> None:
    """Names only: bind what the steps bind, resolve what they use; unbound names are
    data variables (quivers binds them at fit time). One QVR011 on the program."""
    ctx = pc.ctx
    decl = pc.decl
    refer(ctx, (decl.dom, decl.cod, decl.param_kinds, decl.options))
    for p in decl.params or ():
        pc.define(p, SymbolKind.PARAM, p.span, None, is_input=True)
    data: set[str] = set()
    errors = _errors(ctx)
    _steps(pc, decl.steps, data)
    if _errors(ctx) > errors:
        return  # an undefined callee, a step over a deduction: refused, as by quivers
    note(ctx, decl.name.span, f"program {decl.name.text} ({reason})")


def _errors(ctx: Context) -> int:
    return sum(d.is_error for d in ctx.diagnostics)


def _steps(pc: ProgramPass, steps: tuple[ast.Step, ...], data: set[str]) -> None:
    for step in steps:
        if isinstance(step, ast.SampleStep | ast.ObserveStep | ast.MarginalizeStep):
            plate = step.plate if not isinstance(step, ast.ObserveStep) else step.declared
            refer(pc.ctx, (plate, step.options))
            _source(pc, step.source, data)
            targets = (step.target, *getattr(step, "more_targets", ()))
            kind = SymbolKind.OBSERVE if isinstance(step, ast.ObserveStep) else SymbolKind.SAMPLE
            for t in targets:
                pc.define(t, kind, step.span, None)
            if isinstance(step, ast.MarginalizeStep):
                _steps(pc, step.steps, data)
        elif isinstance(step, ast.LetStep | ast.ScoreStep):
            _value(pc, step.value, data, frozenset())
            pc.define(step.target, SymbolKind.LOCAL, step.span, None)
        elif isinstance(step, ast.DestructureStep):
            _value(pc, step.value, data, frozenset())
            for t in step.targets:
                pc.define(t, SymbolKind.LOCAL, step.span, None)
        elif isinstance(step, ast.CallStep):
            _callee(pc, step.callee)
            for a in step.args:
                _value(pc, a, data, frozenset())
            pc.define(step.target, SymbolKind.LOCAL, step.span, None)
        elif isinstance(step, ast.ReturnStep):
            for n in step.values:
                use(pc, n, data)


def _callee(pc: ProgramPass, name: ast.Name) -> None:
    n = name.text
    if n in pc.locals:
        use(pc, name, set())
    elif n in pc.ctx.top:
        pc.ctx.ref(name.span, SymbolKey(n))
        decl = pc.ctx.top[n]
        if isinstance(decl, ast.OtherDecl) and decl.clause.kind == DEDUCTION:
            not_a_morphism(pc.ctx, name)
    elif n[:1].isupper():  # not a family of the registry (is_family), nor declared
        pc.ctx.undefined(name, "family", FAMILIES)


def _source(pc: ProgramPass, expr: object, data: set[str]) -> None:
    """A step's source: callees are declarations or families; arguments are values."""
    if isinstance(expr, ast.Call):
        if not is_family(pc.ctx, expr.callee):
            _callee(pc, expr.callee)
        for a in (*expr.args, *(kw.value for kw in expr.kwargs)):
            _argument(pc, a, data)
    elif isinstance(expr, ast.NameRef):
        if not is_family(pc.ctx, expr.name):
            _callee(pc, expr.name)
    elif isinstance(expr, ast.Compose | ast.Tensor):
        _source(pc, expr.left, data)
        _source(pc, expr.right, data)
    elif isinstance(expr, ast.Method):
        _source(pc, expr.receiver, data)


def _argument(pc: ProgramPass, arg: object, data: set[str]) -> None:
    if isinstance(arg, ast.NameRef):
        use(pc, arg.name, data)
    elif isinstance(arg, ast.Call):
        _source(pc, arg, data)
    elif isinstance(arg, ast.ListArg):
        for item in arg.items:
            _argument(pc, item, data)
    elif isinstance(arg, ast.IndexArg):
        use(pc, arg.name, data)
        _index(pc, arg.index, data)
    elif isinstance(arg, ast.Compose | ast.Tensor | ast.Method):
        _source(pc, arg, data)


def _index(pc: ProgramPass, index: object, data: set[str]) -> None:
    """An index is a plate (an object) or a bound value."""
    for name in names_in(index):
        if name.text in pc.locals:
            use(pc, name, data)
        elif name.text in pc.ctx.top:
            pc.ctx.ref(name.span, SymbolKey(name.text))


def use(pc: ProgramPass, name: ast.Name, data: set[str]) -> None:
    n = name.text
    if n in pc.locals:
        pc.ctx.ref(name.span, SymbolKey(n, pc.scope))
        pc.use(n)
        return
    if n in pc.ctx.top:
        pc.ctx.ref(name.span, SymbolKey(n))
        return
    # a data variable, bound when the program is fitted: its first use defines it
    pc.define(name, SymbolKind.PARAM, name.span, None, is_input=True)
    data.add(n)


def _value(pc: ProgramPass, node: object, data: set[str], bound: frozenset[str]) -> None:
    """Names in an arithmetic value: locals, data variables, functions, lambda and
    factor binders (local to the expression)."""
    stack: list[tuple[object, frozenset[str]]] = [(node, bound)]
    while stack:
        item, inner = stack.pop()
        if isinstance(item, ast.Var):
            if item.name.text not in inner:
                use(pc, item.name, data)
        elif isinstance(item, ast.Binary):
            stack += [(item.left, inner), (item.right, inner)]
        elif isinstance(item, ast.Unary):
            stack.append((item.operand, inner))
        elif isinstance(item, ast.Apply):
            if item.func.text in pc.ctx.top:
                pc.ctx.ref(item.func.span, SymbolKey(item.func.text))
            stack += [(a, inner) for a in item.args]
        elif isinstance(item, ast.Index):
            stack.append((item.base, inner))
            stack += [(a, inner) for a in item.indices]
        elif isinstance(item, ast.MethodCall):
            stack.append((item.receiver, inner))
            stack += [(a, inner) for a in item.args]
        elif isinstance(item, ast.ListExpr):
            stack += [(a, inner) for a in item.items]
        elif isinstance(item, ast.Lambda):
            stack.append((item.body, inner | {item.param.text}))
        elif isinstance(item, ast.Factor):
            names = inner | {n.text for n, _ in item.binders}
            refer(pc.ctx, tuple(obj for _, obj in item.binders))
            if item.body is not None:
                stack.append((item.body, names))
            stack += [(value, names) for _, value in item.cases]
