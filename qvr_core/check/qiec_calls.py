"""A program's steps that run QIEC computations: a call step `let r <- f[S](args)` of a
checked computation (`traverse(xs, x -> f(x))` over one too), and a let whose value uses
the computations' own functions (`int(d)`, `real(length(xs))`, `map` over a list the
program writes).

The checker runs these with the program's values (`qiec_eval.Evaluator` in staging
mode): a list the program writes is known, as are the static arguments and the
constructors a call writes, so branches, handlers and lists fold away, and what is left
is draws, weights and a value, terms over the program's names. They are put in place at
the step as a numbers-only call's are (`call_steps.py`): each draw a site under its
label, each weight a score term, the target bound to the value (a number, or a list of
numbers: a vector of that length). What a run cannot do (a draw of an Int, a branch a
run would choose) is the model's runtime gap, said when a run is asked for.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from qvr_core.builtins.effects import COMPUTATION_FUNCTIONS, REAL_TYPE, TO_INT, TRAVERSE
from qvr_core.builtins.functions import MAP
from qvr_core.check.context import SymbolKey
from qvr_core.check.defines import Computation
from qvr_core.check.qiec_eval import Evaluator
from qvr_core.check.qiec_evaluation import Failed, Refused
from qvr_core.check.qiec_types import INT, TensorT
from qvr_core.check.qiec_values import NotRun, Scalar, Value, leaves, term_of, type_of
from qvr_core.check.terms import Ref
from qvr_core.check.types import Element, Plated
from qvr_core.syntax import ast
from qvr_core.syntax.walk import walk
from qvr_core.text.span import Span

if TYPE_CHECKING:
    from qvr_core.check.passes import Env, ModelPass

LIFTING = (TRAVERSE.name, MAP.name)
WHOLE = "integer"  # the element kind of a computation's Int (BASE_VALUES["Int"])


def runs_computation(env: Env, step: ast.CallStep) -> bool:
    """Whether the evaluator runs this call step: a checked computation, or `traverse`
    (`map`) whose function calls one."""
    if env.staged(step.callee.text) is not None:
        return True
    if step.callee.text in LIFTING and len(step.args) == 2:
        f = step.args[1]
        return isinstance(f, ast.Lambda) and _calls_staged(env, f.body)
    return False


def computed_let(env: Env, value: ast.Arith, literal_lists: set[str]) -> bool:
    """Whether a program's let is computed by the evaluator: its value uses a function
    only computations have (`int`, `real`, `length`, ...), calls a checked computation,
    or maps over a list the program writes (`literal_lists`)."""
    for node in walk(value):
        if isinstance(node, ast.Apply):
            if node.func.text in COMPUTATION_FUNCTIONS or env.staged(node.func.text):
                return True
            xs = node.args[0] if node.args else None
            if (
                node.func.text == MAP.name
                and isinstance(xs, ast.Var)
                and xs.name.text in literal_lists
            ):
                return True
    return False


def literal_lists(steps: tuple[ast.Step, ...]) -> set[str]:
    """The program's lets of a list of numbers written out (`let states = [0, 1, 2]`)."""
    return {
        s.target.text
        for s in steps
        if isinstance(s, ast.LetStep) and isinstance(s.value, ast.ListExpr) and _numbers(s.value)
    }


def _numbers(node: ast.Arith) -> bool:
    if isinstance(node, ast.ListExpr):
        return all(_numbers(i) for i in node.items)
    return isinstance(node, ast.Number) or (
        isinstance(node, ast.Unary) and isinstance(node.operand, ast.Number)
    )


def _calls_staged(env: Env, node: ast.Arith) -> bool:
    return any(isinstance(n, ast.Apply) and env.staged(n.func.text) is not None for n in walk(node))


def _reads(nodes: list[ast.Arith | ast.Clause]) -> tuple[list[ast.Var], set[str]]:
    """The names the nodes read, and the names their lambdas bind (not the program's)."""
    read: list[ast.Var] = []
    bound: set[str] = set()
    for node in nodes:
        for n in walk(node):
            if isinstance(n, ast.Var):
                read.append(n)
            elif isinstance(n, ast.Lambda):
                bound.add(n.param.text)
    return read, bound


def _program_values(
    mc: ModelPass, nodes: list[ast.Arith | ast.Clause], tensors: dict[str, TensorT]
) -> dict[str, object]:
    """The program's values the nodes read, as the evaluator's: a list the program
    writes is known; a number a run decides is its name; a vector its entries; a name
    passed whole where a tensor goes (`tensors`) that tensor's entries."""
    read, bound = _reads(nodes)
    written = {
        s.target.text: s.value
        for s in mc.pc.decl.steps
        if isinstance(s, ast.LetStep) and isinstance(s.value, ast.ListExpr) and _numbers(s.value)
    }
    env: dict[str, object] = {}
    ev = Evaluator(mc.ctx, staging=True)
    for var in read:
        n = var.name.text
        if n in bound or n in env or n in mc.ctx.top:
            continue
        t = mc.arith(var)
        if n in written:
            env[n] = ev.expr(written[n], {})
        elif n in tensors:
            _data_shape(mc, n, tensors[n])
            env[n] = leaves(tensors[n], n, var.span)
        elif t is not None and not t.plates and t.element.event:
            env[n] = leaves(TensorT(REAL_TYPE, t.element.event), n, var.span)
        elif t is not None and not t.plates:
            kind = INT if t.element.discrete or t.element.kind == WHOLE else REAL_TYPE
            env[n] = Scalar(kind, term=Ref(n, var.span))
    return env


def _tensor_args(mc: ModelPass, step: ast.CallStep) -> dict[str, TensorT]:
    """The names a call passes whole where its callee takes a tensor."""
    staged = mc.env.staged(step.callee.text)
    if staged is None:
        return {}
    nodes = _written_args(step)
    out: dict[str, TensorT] = {}
    for node, (_, want) in zip(nodes, staged.header.params, strict=False):
        if isinstance(node, ast.Var) and isinstance(want, TensorT):
            out[node.name.text] = want
    return out


def _written_args(step: ast.CallStep) -> list[ast.Arith | ast.Clause]:
    """The call's values in the order written: its arithmetic and its `construct`s."""
    nodes: list[ast.Arith | ast.Clause] = [*step.args, *step.constructs]
    nodes.sort(key=lambda n: n.span.start)
    return nodes


def staged_call_step(mc: ModelPass, step: ast.CallStep) -> tuple[Computation, Plated] | None:
    """The call run with the program's values: the lines to put in place and the type of
    the target; None when it cannot be (an error reported, or the model's runtime gap)."""
    if mc.env.staged(step.callee.text) is not None:
        mc.ctx.ref(step.callee.span, SymbolKey(step.callee.text))
    nodes = _written_args(step)
    env = _program_values(mc, nodes, _tensor_args(mc, step))
    ev = Evaluator(mc.ctx, staging=True)
    statics = (
        [] if step.static is None else [p for p in step.static.parts if isinstance(p, ast.Name)]
    )
    try:
        if step.callee.text in LIFTING:
            value = ev.lifted(step.callee, tuple(nodes), env, step.span)
        else:
            value = ev.call(step.callee, statics, tuple(nodes), env, step.span)
    except Failed as why:
        _failed(mc, why, f"its call of {step.callee.text}", step.span)
        return None
    except (NotRun, Refused) as why:
        _gap(mc, step.span.start_line, f"its call of {step.callee.text}: {why}")
        return None
    _whole_data(mc, ev)
    return _result(mc, ev, value, step.callee.text, step.span.start_line)


def _whole_data(mc: ModelPass, ev: Evaluator) -> None:
    """A data value that picks one of n categories (through `let k = int(d)`) is one whole
    number of 0..n-1: so typed, `qvr data` writes such a value."""
    for name, n in ev.picks.items():
        source = mc.whole_data.get(name, name)
        known = mc.data.get(source)
        if known is not None and not known.observed:
            kind = "boolean" if n == 2 else "nonnegative_integer"
            mc.data[source] = replace(known, type=Plated((), Element(kind)))


def staged_let(mc: ModelPass, step: ast.LetStep) -> tuple[Computation, Plated] | None:
    """A let the evaluator computes (`computed_let`), as a call with no callee."""
    env = _program_values(mc, [step.value], {})
    ev = Evaluator(mc.ctx, staging=True)
    value_node = step.value
    if (
        isinstance(value_node, ast.Apply)
        and value_node.func.text == TO_INT.name
        and len(value_node.args) == 1
        and isinstance(value_node.args[0], ast.Var)
        and value_node.args[0].name.text in mc.data
    ):  # `let k = int(d)`: d is one whole number
        d = value_node.args[0].name.text
        mc.whole_data[step.target.text] = d
        mc.data[d] = replace(mc.data[d], type=Plated((), Element(WHOLE)))
    try:
        value = ev.expr(step.value, env)
    except Failed as why:
        _failed(mc, why, f"its let {step.target.text}", step.span)
        return None
    except (NotRun, Refused) as why:
        _gap(mc, step.span.start_line, f"its let {step.target.text}: {why}")
        return None
    return _result(mc, ev, value, step.target.text, step.span.start_line)


def _result(
    mc: ModelPass, ev: Evaluator, value: Value, what: str, line: int
) -> tuple[Computation, Plated] | None:
    result = term_of(value, mc.pc.decl.span)
    if result is None:
        _gap(mc, line, f"{what} gives {type(value).__name__.lower()}, no number or list of numbers")
        return None
    comp = Computation(what, (), (), tuple(ev.lines), result)
    t = type_of(value)
    if isinstance(t, TensorT):
        return comp, Plated((), Element("real", t.dims))
    if isinstance(value, Scalar) and value.kind == INT:
        return comp, Plated((), Element(WHOLE))
    return comp, Plated(())


def _failed(mc: ModelPass, why: Failed, what: str, span: Span) -> None:
    """An error inside a computation with the program's values (an entry past a list's
    end, given this call's static arguments), reported at the step that runs it."""
    if not why.reported:
        mc.ctx.report(why.rule, f"{what}: {why}", span)


def _gap(mc: ModelPass, line: int, why: str) -> None:
    mc.gaps.append(f"line {line + 1}: {why}")


def _data_shape(mc: ModelPass, name: str, want: TensorT) -> None:
    """A data name passed whole where a tensor goes has the tensor's shape (so `qvr data`
    writes one of that shape, and the run checks the file's)."""
    known = mc.data.get(name)
    if known is not None and not known.observed:
        mc.data[name] = replace(known, type=Plated((), Element("real", want.dims)))
