"""A call of an ODE solver in a model's let: `ode_rk45(f, z0, t0, ts, theta)`.

Stan's `ode_rk45(f, z0, t0, ts, theta)` solves dz/dt = f(t, z, theta) from z(t0) = z0 and
gives the state at each output time. In QVR, f names a pure `define` over numbers and
vectors (define_values.py), written as Stan's function is:

    define lotka_volterra(t : Real, z : State -> Real, theta : Param -> Real) : State -> Real !{} =

and the call's value is a T x N value: one row per output time (the times' rows, as the
data give them, or their plate), then the state's plate (`State`, from the define's `z`).

What is checked, each at the argument it is about: f names a define the checker types (an
undefined name is QVR101, another kind of name QVR104), which takes (t, z, theta) (QVR406),
t a number and f's result the state's type (QVR207), pure: no effect row and no draw
(QVR410); the call has its five arguments (eight for `ode_rk45_tol`, QVR406); z0 and theta
are as long as f's z and theta (QVR207); t0, ts and the tolerances are data, or computed
from data only (QVR104): the solver reads them as numbers (runtime/ode.py). The let's
term carries the define's body (`terms.Call.function`), so the runtime never looks the define up.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from qvr_core.builtins import FUNCTIONS
from qvr_core.builtins.functions import Function
from qvr_core.check.computations import is_computation, placed_at
from qvr_core.check.context import SymbolKey
from qvr_core.check.define_values import length
from qvr_core.check.defines import NUMBER, Bind, Computation
from qvr_core.check.model import Let, Site
from qvr_core.check.terms import (
    Body,
    Call,
    Comprehension,
    Fold,
    Gather,
    Num,
    Op,
    Ref,
    Stack,
    Term,
    Unary,
    subterms,
)
from qvr_core.check.types import Plated
from qvr_core.syntax import ast
from qvr_core.text import rules

if TYPE_CHECKING:
    from qvr_core.check.passes import Env, ModelPass, ProgramPass

#: What the right-hand side takes, in order: Stan's f(t, z, theta).
RHS_PARAMS = ("t", "z", "theta")


def ode_type(mc: ModelPass, fn: Function, node: ast.Apply) -> Plated | None:
    """The type of a solver's call, its misuses reported where they are written."""
    ctx = mc.ctx
    args = dict(zip(fn.params, node.args, strict=False))
    comp = None
    for param, arg in args.items():
        if param in fn.defines:
            comp = _define(mc, fn, arg)
    types = {p: mc.arith(a) for p, a in args.items() if p not in fn.defines}
    if len(node.args) != fn.arity:
        ctx.report(
            rules.ARGUMENT_COUNT,
            f"{fn.name} takes {fn.arity} values: {fn.name}({', '.join(fn.params)})",
            node.span,
        )
        return None
    data_ok = all([_data(mc, fn, p, args[p]) for p in fn.data])  # each one reported
    if comp is None or not _signature(mc, fn, comp, args["f"]) or not data_ok:
        return None
    state, theta = comp.types[1], comp.types[2]
    fits = _fits(mc, fn, "z0", args["z0"], types["z0"], state)
    fits = _fits(mc, fn, "theta", args["theta"], types["theta"], theta) and fits
    times = types["ts"]
    if not fits or times is None:
        return None
    return _solution(mc, fn, args["ts"], times, state)


def _define(mc: ModelPass, fn: Function, arg: ast.Arith) -> Computation | None:
    """The typed define `arg` names, or None after a located error."""
    ctx = mc.ctx
    what = f"{fn.name}'s f is the right-hand side, the name of a `define f(t : Real, z : ..., "
    if not isinstance(arg, ast.Var):
        ctx.report(rules.WRONG_KIND, what + f"theta : ...)`, not {ctx.source(arg.span)}", arg.span)
        return None
    name = arg.name
    decl = ctx.top.get(name.text)
    if decl is None:
        if name.text in mc.pc.locals:
            ctx.report(
                rules.WRONG_KIND,
                what + f"theta : ...)`; '{name.text}' is a value of the program",
                name.span,
            )
        else:
            ctx.undefined(name, "define", _computations(mc))
        return None
    ctx.ref(name.span, SymbolKey(name.text))
    comp = mc.env.computation(name.text)
    if comp is None and not (isinstance(decl, ast.OtherDecl) and is_computation(decl)):
        kind = type(decl).__name__.removesuffix("Decl").lower()
        ctx.report(rules.WRONG_KIND, what + f"theta : ...)`; '{name.text}' is a {kind}", name.span)
    return comp  # a define not typed: `solver_reason` kept the program from here


def solver_reason(pc: ProgramPass, node: ast.Arith) -> str | None:
    """Why a let calling a solver is not typed: its define is one the checker does not
    type (its own note or error says why), as a call step of one is not."""
    stack: list[object] = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, ast.Apply):
            fn = FUNCTIONS.get(item.func.text)
            at = [i for i, p in enumerate(fn.params) if p in fn.defines] if fn else []
            named = item.args[at[0]] if at and at[0] < len(item.args) else None
            if isinstance(named, ast.Var):
                decl = pc.ctx.top.get(named.name.text)
                computation = isinstance(decl, ast.OtherDecl) and is_computation(decl)
                if computation and pc.env.computation(named.name.text) is None:
                    return f"its call of {item.func.text} with {named.name.text}"
            stack.extend(item.args)
        elif isinstance(item, ast.Binary):
            stack += [item.left, item.right]
        elif isinstance(item, ast.Unary):
            stack.append(item.operand)
        elif isinstance(item, ast.MethodCall):
            stack.extend(item.args)
        elif isinstance(item, ast.ListExpr):
            stack.extend(item.items)
    return None


def _computations(mc: ModelPass) -> list[str]:
    """The defines a misspelt name may be (for the did-you-mean)."""
    return [n for n in mc.ctx.top if mc.env.computation(n) is not None]


def _signature(mc: ModelPass, fn: Function, comp: Computation, arg: ast.Arith) -> bool:
    """f takes (t, z, theta), t a number, returns the state's type, and is pure."""
    ctx = mc.ctx
    at = arg.span
    if len(comp.params) != len(RHS_PARAMS):
        ctx.report(
            rules.ARGUMENT_COUNT,
            f"{fn.name} calls {comp.name} as {comp.name}(t, z, theta), 3 values, but it "
            f"takes {len(comp.params)} ({', '.join(comp.params)})",
            at,
        )
        return False
    t, z = comp.types[0], comp.types[1]
    if t != NUMBER:
        ctx.report(
            rules.ARITHMETIC_DIMENSIONS,
            f"{comp.name}'s first value, {comp.params[0]}, is the time: one number (`Real`)",
            at,
        )
        return False
    if length(comp.result_type) != length(z):
        ctx.report(
            rules.ARITHMETIC_DIMENSIONS,
            f"{comp.name} gives dz/dt, so it returns what its {comp.params[1]} is "
            f"({_entries(z)}), not {_entries(comp.result_type)}",
            at,
        )
        return False
    if comp.row or not all(isinstance(line, Bind) for line in comp.lines):
        ctx.report(
            rules.EFFECT_ROW,
            f"{fn.name} evaluates {comp.name} many times per step, so it is a function of "
            f"its values: no draw or weight, and the row `!{{}}`, not "
            f"!{{{', '.join(comp.row)}}}",
            at,
        )
        return False
    return True


def _entries(t: Plated) -> str:
    n = length(t)
    return "one number" if n == 0 else f"{n} numbers" if n is not None else t.label


def _fits(
    mc: ModelPass, fn: Function, param: str, arg: ast.Arith, got: Plated | None, want: Plated
) -> bool:
    """An argument passed for f's z or theta is as long as f's parameter (where the
    program fixes its length: a data name's is the file's)."""
    if got is None:
        return False
    if got.data_plates and not got.plates:
        return True  # read from the data: its length is the file's
    n, m = length(got), length(want)
    if n == m:
        return True
    ctx = mc.ctx
    ctx.report(
        rules.ARITHMETIC_DIMENSIONS,
        f"{fn.name}'s {param} is f's {'z' if param == 'z0' else param}, {_entries(want)}, but "
        f"{ctx.source(arg.span)} is {got.label}",
        arg.span,
    )
    return False


def _data(mc: ModelPass, fn: Function, param: str, arg: ast.Arith) -> bool:
    """t0 or ts is a number or a list of numbers written in the program, or a name of the
    data or of a let computed from data only."""
    if _written_numbers(arg):
        return True
    why = _not_data(mc, arg.name.text) if isinstance(arg, ast.Var) else "an expression"
    if why is None:
        return True
    ctx = mc.ctx
    ctx.report(
        rules.WRONG_KIND,
        f"{fn.name}'s {param} is data, fixed for the run (the solver's steps are made from "
        f"it once), but {ctx.source(arg.span)} reads {why}: give a data name, or a let of "
        "data names and numbers",
        arg.span,
    )
    return False


def _written_numbers(arg: ast.Arith) -> bool:
    if isinstance(arg, ast.Unary) and arg.op == "-":
        arg = arg.operand
    if isinstance(arg, ast.ListExpr):
        return all(_written_numbers(i) for i in arg.items)
    return isinstance(arg, ast.Number)


def _not_data(mc: ModelPass, name: str) -> str | None:
    """What `name` reads, itself or through lets, that is not data (in words), or None."""
    lets = {s.name: s for s in mc.steps if isinstance(s, Let)}
    sites = {s.name: s for s in mc.steps if isinstance(s, Site)}
    todo, seen = [name], set()
    while todo:
        n = todo.pop()
        if n in seen:
            continue
        seen.add(n)
        d = mc.data.get(n)
        if d is not None:
            if d.observed:  # drawn anew by a predictive run
                return f"'{n}', an observed site"
            continue
        let = lets.get(n)
        if let is not None and let.kind == "let" and let.called is None:
            todo += let.uses
            continue
        site = sites.get(n)
        if site is not None:
            return f"'{n}', a {site.kind}d value"
        return f"'{n}', which is not data"
    return None


def _solution(
    mc: ModelPass, fn: Function, arg: ast.Arith, times: Plated, state: Plated
) -> Plated | None:
    """One state per output time: the times' rows (the data's, or one plate), then the
    state's plate (or its length, for a state written as a list)."""
    if times.data_plates and not times.plates and not times.element.event:
        return Plated(state.plates, state.element, data_plates=True)
    if len(times.plates) == 1 and not times.element.event and not times.data_plates:
        return Plated((*times.plates, *state.plates), state.element)
    ctx = mc.ctx
    ctx.report(
        rules.ARITHMETIC_DIMENSIONS,
        f"{fn.name}'s ts are the output times, a data name or a value over one plate (its "
        f"rows are the solution's), not {ctx.source(arg.span)}, which is {times.label}",
        arg.span,
    )
    return None


# ---------------------------------------------------------------- the let's term


def body_of(comp: Computation) -> Body | None:
    """A pure define's body as a function (None for one with draws or weights)."""
    if comp.row or not all(isinstance(line, Bind) for line in comp.lines):
        return None
    lines = tuple((line.local, line.term) for line in comp.lines if isinstance(line, Bind))
    sizes = tuple(length(t) or 0 for t in comp.types)
    return Body(comp.name, comp.params, sizes, lines, comp.result, comp.result.span)


def with_functions(term: Term, env: Env) -> Term:
    """`term` with each solver call's define argument replaced by the define's body
    (`Call.function`), so the runtime evaluates the let without looking anything up. A
    call whose define the checker did not type is left as it is (its error is reported,
    so it never runs)."""
    if not any(_names_define(t) for t in subterms(term)):
        return term
    return _rewrite(term, env)


def _names_define(t: Term) -> bool:
    spec = FUNCTIONS.get(t.fn) if isinstance(t, Call) else None  # not `parse`'s
    return isinstance(t, Call) and t.function is None and spec is not None and bool(spec.defines)


def _rewrite(term: Term, env: Env) -> Term:
    match term:
        case Unary(op=op, operand=operand, span=span):
            return Unary(op, _rewrite(operand, env), span)
        case Op(op=op, left=left, right=right, span=span):
            return Op(op, _rewrite(left, env), _rewrite(right, env), span)
        case Stack(items=items, span=span):
            return Stack(tuple(_rewrite(i, env) for i in items), span)
        case Gather(base=base, indices=indices, span=span, plates=plates):
            moved = tuple(None if i is None else _rewrite(i, env) for i in indices)
            return Gather(base, moved, span, plates)
        case Call(fn=fn, args=args, span=span, axis=axis, function=function):
            inner = tuple(_rewrite(a, env) for a in args)
            spec = FUNCTIONS.get(fn)
            at = [i for i, p in enumerate(spec.params) if p in spec.defines] if spec else []
            if function is not None or not at or at[0] >= len(inner):
                return replace(term, args=inner)  # (a deduction's `parse` keeps its record)
            named = inner[at[0]]
            comp = env.computation(named.name) if isinstance(named, Ref) else None
            body = body_of(comp) if comp is not None else None
            if body is None:
                return Call(fn, inner, span, axis)
            rest = inner[: at[0]] + inner[at[0] + 1 :]
            return Call(fn, rest, span, axis, placed_at(body, span))
        case Comprehension(body=each, cases=cases):
            cells = None if each is None else _rewrite(each, env)
            return replace(term, body=cells, cases=tuple(_rewrite(c, env) for c in cases))
        case Fold(items=xs, init=init, body=step):
            read = _rewrite(xs, env)
            return replace(term, items=read, init=_rewrite(init, env), body=_rewrite(step, env))
        case Num() | Ref():
            return term
