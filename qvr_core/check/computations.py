"""Typed computations a program calls (`let c <- noisy(b)`), and the prelude's instances.

quivers' QIEC `define f(x : Real) : Real !{random, score} = ...` declares a
computation with an effect row. qvr types the part of that calculus a Bayesian
program calls: value parameters and a result of type `Real` (a number), a row
of instances of the prelude's `Random` and `Score` (`instance random : Random`,
builtins/effects.py), and a body of `let x = e`, `let x <- perform
random.sample[Real](site("l"), F(args))` (a draw at the sample site labelled
"l"), `perform score.add(weight(e))` (a term of the log weight), `let x <-
g(args)` (another such computation, whose row this one's must hold) and
`return e`, every value a number. Anything else keeps the names-only check
(one QVR011 saying what). A pure define (`!{}`) may also take and return vectors,
`z : State -> Real` (define_values.py): a function a solver calls, Stan's ODE right-hand
side, never a call step, whose values are numbers.

A call step puts the callee in place (`inline`, quivers' meaning of a call from
a program): its draw is a site of the program under the label it gives (a label
drawn again in one run is counted, `noise`, `noise@1`, as quivers replays it),
its weights are score terms of the joint, and the call's target is bound to the
returned value. Everything inlined is placed at the call step, in the program's
own coordinates.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from qvr_core.builtins import FAMILIES, bind, resolved
from qvr_core.builtins.effects import (
    EFFECTS,
    RANDOM,
    REAL_TYPE,
    SCORE,
    SITE,
    UNIT_TYPE,
    WEIGHT,
    Effect,
    Operation,
)
from qvr_core.check.context import SymbolKey
from qvr_core.check.declarations import report_binding, report_constraint
from qvr_core.check.define_values import NotTyped, length, value_type
from qvr_core.check.defines import NUMBER, Bind, Computation, Draw, Invoke, Line, Weigh
from qvr_core.check.qiec_checks import Staged, check_define
from qvr_core.check.terms import (
    Body,
    Call,
    Gather,
    Num,
    Op,
    Ref,
    Stack,
    Term,
    Unary,
    lower,
    subterms,
)
from qvr_core.check.types import Element, Plated
from qvr_core.check.unchecked import note, refer
from qvr_core.check.user_effects import UserEffect, UserOperation, user_effect
from qvr_core.syntax import ast
from qvr_core.text import rules
from qvr_core.text.span import Span

if TYPE_CHECKING:
    from qvr_core.check.context import Context
    from qvr_core.check.passes import Env

COMPUTATION = "computation"  # the clause kind of a `define` with parameters and a row
#: The QIEC base types other than Real, as a computation's values have them: one value
#: each, kept apart from numbers (the kernel never converts between them).
BASE_VALUES: dict[str, Plated] = {
    "Int": Plated((), Element("integer")),
    "Bool": Plated((), Element("boolean")),
    "String": Plated((), Element("string")),
    UNIT_TYPE: Plated((), Element("unit")),
}
_BASE = frozenset(BASE_VALUES.values())
INSTANCE = "instance"


def is_computation(decl: ast.Decl) -> bool:
    return isinstance(decl, ast.OtherDecl) and decl.clause.kind == COMPUTATION


def instance_effect(ctx: Context, name: str) -> Effect | None:
    """The prelude interface `instance NAME : Random` applies, or None (no such instance,
    or one of a declared `effect`, which the checker does not model)."""
    decl = ctx.top.get(name)
    if not isinstance(decl, ast.OtherDecl) or decl.clause.kind != INSTANCE:
        return None
    parts = decl.clause.parts
    if len(parts) != 2 or not all(isinstance(p, ast.Name) for p in parts):
        return None  # `instance s : State[Int]`: an applied interface of the module's
    applied = parts[1]
    assert isinstance(applied, ast.Name)
    effect = EFFECTS.get(applied.text)
    if effect is None or applied.text in ctx.top:
        return None
    return effect


def check_instance(ctx: Context, decl: ast.OtherDecl) -> bool:
    """`instance random : Random`: an instance of a prelude interface, fully checked."""
    own = ctx.top.get(decl.name.text) is decl  # a duplicate is reported where it is
    return own and instance_effect(ctx, decl.name.text) is not None


class _Unsupported(Exception):
    """What the checker does not type in a computation: names only, one QVR011."""


class _Failed(Exception):
    """A computation with an error (reported where it is): no type, and no QVR011."""


def check_computation(env: Env, decl: ast.OtherDecl) -> Computation | Staged | None:
    """Type one `define` (its diagnostics reported), or give it the names-only check.

    A define of numbers (and a solver's function of vectors) is typed here into lines a
    call puts in place; any other (static parameters, indexed families, `case`, lists,
    handlers) is checked by running it (`qiec_eval.py`) and run again at each call."""
    ctx = env.ctx
    refer(ctx, decl.clause, frozenset(id(n) for n in decl.names))
    reported = len(ctx.diagnostics)
    typing = _Typing(env, decl)
    try:
        return typing.run()
    except _Unsupported:
        del ctx.diagnostics[reported:]  # the evaluator checks it whole, from the start
        found = check_define(ctx, decl)
        if isinstance(found, str):
            note(ctx, decl.name.span, f"define {decl.name.text} ({found})")
            return None
        return found
    except _Failed:
        pass
    return None


class _Typing:
    def __init__(self, env: Env, decl: ast.OtherDecl) -> None:
        self.env = env
        self.ctx = env.ctx
        self.decl = decl
        self.name = decl.name.text
        self.bound: dict[str, Span] = {}
        self.row: tuple[str, ...] = ()
        self.lines: list[Line] = []
        self.types: dict[str, Plated] = {}  # of the names bound so far
        self.result_type = NUMBER
        self.vectors = False  # a parameter or the result is a vector (define_values.py)
        self.handlers: list[str] = []  # the module's own operations it performs, in order

    def run(self) -> Computation:
        params = self._header()
        result: Term | None = None
        for line in self.decl.clause.body:
            if result is not None:
                raise _Unsupported("its lines after its return")
            if line.kind == "let_value":
                local, value = self._local(line), line.parts[1]
                term, t = self._typed_value(value)
                self.lines.append(Bind(local.text, term))
                self._bind(local)
                self.types[local.text] = t
            elif line.kind == "let_bind":
                local = self._local(line)
                bound = self._inline(line.parts[1], local)
                self._bind(local)
                self.types[local.text] = bound  # a draw's or a call's: a number
            elif line.kind == "do":
                self._inline(line.parts[0], None)
            elif line.kind == "return" and len(line.parts) == 1:
                result, t = self._typed_value(line.parts[0])
                self._returns(t, line.parts[0])
            else:
                word = line.keyword.text if line.keyword is not None else line.kind
                raise _Unsupported(f"its `{word}` line")
        if result is None:
            raise _Unsupported("its body without a return")
        types = tuple(self.types[p] for p in params)
        lines = tuple(self.lines)
        return Computation(
            self.name,
            params,
            self.row,
            lines,
            result,
            types,
            self.result_type,
            tuple(self.handlers),
        )

    # ------------------------------------------------------------ header

    def _header(self) -> tuple[str, ...]:
        """Value parameters `x : Real`, the result `Real` and the row `!{random, score}`."""
        parts = self.decl.clause.parts[1:]
        params: list[ast.Name] = []
        names: list[ast.Name] = []
        start = self.decl.name.span.end
        for p in parts:
            if isinstance(p, ast.Clause) and p.kind == "value_param":
                param = p.parts[0]
                assert isinstance(param, ast.Name)
                self.types[param.text] = self._declared(p.parts[1:], "its parameter types")
                params.append(param)
                start = p.span.end
            elif isinstance(p, ast.Name):
                names.append(p)
            else:
                raise _Unsupported("its static parameters")
        text = self.ctx.text
        end = self.decl.clause.body[0].span.start if self.decl.clause.body else len(text)
        bang = text.find("!", start, end)
        close = text.find("}", bang, end)
        if bang < 0 or close < 0 or "|" in text[bang:close]:
            raise _Unsupported("its open effect row")
        result = [n for n in names if n.span.start < bang]
        if text[start:bang].count(":") != 1:
            raise _Unsupported("its result type")
        self.result_type = self._declared(result, "its result type")
        self.vectors = any(
            t.plates or t.element.event for t in (*self.types.values(), self.result_type)
        )
        if self.vectors and any(t in _BASE for t in self.types.values()):
            raise _Unsupported("its vectors beside values other than numbers")
        row = [n for n in names if n.span.start > bang]
        undefined = False
        for n in row:
            if instance_effect(self.ctx, n.text) is None and user_effect(self.ctx, n.text) is None:
                if n.text in self.ctx.top:
                    raise _Unsupported(f"its effect instance {n.text}")
                self.ctx.undefined(n, "effect instance", self._instances())
                undefined = True
        if undefined:
            raise _Failed
        self.row = tuple(n.text for n in row)
        for p in params:
            self._bind(p)
        return tuple(p.text for p in params)

    def _instances(self) -> list[str]:
        return [
            n
            for n in self.ctx.top
            if instance_effect(self.ctx, n) is not None or user_effect(self.ctx, n) is not None
        ]

    def _declared(self, names: tuple[object, ...] | list[ast.Name], what: str) -> Plated:
        """A written type: `Real`, one number, or `A -> Real`, a vector of one number per
        element of the declared finite set A (the grammar keeps the names, so the arrow
        is read between them)."""
        if len(names) == 1 and _is_real(names[0]):
            return NUMBER
        if len(names) == 1 and isinstance(names[0], ast.Name) and names[0].text in BASE_VALUES:
            return BASE_VALUES[names[0].text]
        if len(names) == 2 and all(isinstance(n, ast.Name) for n in names):
            first, second = names
            assert isinstance(first, ast.Name) and isinstance(second, ast.Name)
            obj = self.ctx.objects.get(first.text)
            between = self.ctx.text[first.span.end : second.span.start].strip()
            sized = obj is not None and obj.discrete and obj.size >= 0
            if _is_real(second) and between == "->" and sized:
                assert obj is not None
                self.ctx.ref(first.span, SymbolKey(obj.name))
                return Plated((obj,))
        raise _Unsupported(what)

    # ------------------------------------------------------------ lines

    def _local(self, line: ast.Clause) -> ast.Name:
        local = line.parts[0]
        if not isinstance(local, ast.Clause) or not local.parts:
            raise _Unsupported("its bindings")
        name = local.parts[0]
        if not isinstance(name, ast.Name) or not all(_is_real(t) for t in local.parts[1:]):
            raise _Unsupported("its bindings")
        return name

    def _bind(self, name: ast.Name) -> None:
        if name.text in self.bound:
            self.ctx.report(
                rules.REBOUND_VARIABLE,
                f"'{name.text}' is already bound in define {self.name}: choose a new name",
                name.span,
            )
        self.bound[name.text] = name.span

    def _value(self, node: object) -> Term:
        """A number of the body (a draw's argument, a weight, a call's argument)."""
        term, t = self._typed_value(node)
        if t != NUMBER:
            raise _Unsupported("its vector passed where a number goes")
        return term

    def _typed_value(self, node: object) -> tuple[Term, Plated]:
        """A value of the body and its type: arithmetic over the names bound so far, on
        numbers (and, in a define over vectors, on vectors: define_values.py)."""
        if self.vectors:
            return self._vector_value(node)
        if isinstance(node, ast.Var):
            t = self.types.get(node.name.text)
            if t is not None and t in _BASE:
                self._unbound([Ref(node.name.text, node.span)])
                return Ref(node.name.text, node.span), t
        return self._number_value(node), NUMBER

    def _returns(self, t: Plated, node: object) -> None:
        """The returned value has the declared result type (a vector of its length)."""
        want = self.result_type
        if _fits(t, want, node) and length(t) == length(want):
            return
        assert isinstance(node, ast.Arith)
        self.ctx.report(
            rules.DECLARED_TYPE_MISMATCH,
            f"define {self.name} returns {_written(want)}, but {self.ctx.source(node.span)} "
            f"is {_written(t)}",
            node.span,
        )
        raise _Failed

    def _vector_value(self, node: object) -> tuple[Term, Plated]:
        kinds = (ast.Number, ast.Var, ast.Unary, ast.Binary, ast.Apply, ast.Index, ast.ListExpr)
        if not isinstance(node, kinds):
            raise _Unsupported("its values")
        term = lower(node, lambda _: False)
        if term is None:
            raise _Unsupported("its expressions")
        read = [t if isinstance(t, Ref) else Ref(t.base, t.span) for t in _reads(term)]
        self._unbound(read)
        try:
            t = value_type(self.ctx, term, self.types, self.name)
        except NotTyped as why:
            raise _Unsupported(str(why)) from None
        if t is None:
            raise _Failed
        return _folded(term), t

    def _number_value(self, node: object) -> Term:
        """A number of the body: arithmetic on numbers, over the names bound so far."""
        if not isinstance(node, ast.Number | ast.Var | ast.Unary | ast.Binary | ast.Apply):
            raise _Unsupported("its values")
        term = lower(node, lambda _: False)
        read = _number_refs(term) if term is not None else None
        if term is None or read is None:
            raise _Unsupported("its expressions")
        self._unbound(read)
        if any(self.types.get(r.name) in _BASE for r in read):
            raise _Unsupported("its arithmetic on values other than numbers")
        return _folded(term)

    def _unbound(self, read: list[Ref]) -> None:
        """QVR401 for each name read that is not bound; then the value is not typed."""
        unbound = [ref for ref in read if ref.name not in self.bound]
        for ref in unbound:
            self.ctx.did_you_mean(
                rules.UNBOUND_VARIABLE,
                f"unbound variable '{ref.name}' in define {self.name}",
                ref.span,
                ref.name,
                list(self.bound),
            )
        if unbound:
            raise _Failed

    def _inline(self, node: object, local: ast.Name | None) -> Plated:
        """Put a performance or a call in place; the type of the value it gives."""
        if not isinstance(node, ast.Clause):
            raise _Unsupported("its bindings")
        if node.kind == "perform":
            return self._perform(node, local)
        if node.kind == "call":
            if local is None:
                raise _Unsupported("its call without a binding")
            self._call(node, local)
            return NUMBER
        raise _Unsupported(f"its {node.kind}")

    def _perform(self, node: ast.Clause, local: ast.Name | None) -> Plated:
        instance, op_name = node.parts[0], node.parts[1]
        assert isinstance(instance, ast.Name) and isinstance(op_name, ast.Name)
        statics = [p for p in node.parts[2:] if isinstance(p, ast.Name)]
        values = [p for p in node.parts[2:] if not isinstance(p, ast.Name)]
        effect = instance_effect(self.ctx, instance.text)
        own = user_effect(self.ctx, instance.text) if effect is None else None
        if own is not None:
            if statics:
                raise _Unsupported("its static arguments")
            return self._perform_own(node, instance, op_name, own, values)
        if effect is None:
            if instance.text in self.ctx.top:
                raise _Unsupported(f"its effect instance {instance.text}")
            self.ctx.undefined(instance, "effect instance", self._instances())
            raise _Failed
        op = self._operation(node, instance, op_name, effect, len(values))
        assert isinstance(op, Operation)
        if effect is RANDOM:
            if len(statics) != op.statics or not _is_real(statics[0]):
                raise _Unsupported("its draw of a value other than a Real")
            self._draw(values[0], values[1], local)
        elif effect is SCORE:
            if local is not None:
                raise _Unsupported("its binding of a score")
            self.lines.append(Weigh(self._wrapped(values[0], WEIGHT)))
        return NUMBER

    def _operation(
        self,
        node: ast.Clause,
        instance: ast.Name,
        op_name: ast.Name,
        effect: Effect | UserEffect,
        given: int,
    ) -> Operation | UserOperation:
        """The operation `instance.op_name` performs, once the row lists the instance, the
        interface has the operation and it is given as many values as it takes."""
        self.ctx.ref(instance.span, SymbolKey(instance.text))
        if instance.text not in self.row:
            self.ctx.report(
                rules.EFFECT_ROW,
                f"define {self.name} performs on '{instance.text}', which its row "
                f"!{{{', '.join(self.row)}}} does not list: add it to the row",
                instance.span,
            )
        op = effect.operation(op_name.text)
        if op is None:
            ops = ", ".join(o.name for o in effect.operations)
            self.ctx.report(
                rules.EFFECT_ROW,
                f"{effect.name} has no operation '{op_name.text}' (its operations: {ops})",
                op_name.span,
            )
            raise _Failed
        if given != len(op.params):
            self.ctx.report(
                rules.ARGUMENT_COUNT,
                takes(f"{instance.text}.{op.name}", op.params, given),
                node.span,
            )
            raise _Failed
        return op

    def _perform_own(
        self,
        node: ast.Clause,
        instance: ast.Name,
        op_name: ast.Name,
        effect: UserEffect,
        values: list[object],
    ) -> Plated:
        """`perform ask.get()` of a module's own effect: its row, its operation, its
        arguments' types; the result has the operation's type, and a handler, which qvr
        does not run, gives it (`Computation.handlers`)."""
        op = self._operation(node, instance, op_name, effect, len(values))
        assert isinstance(op, UserOperation)
        for value, param in zip(values, op.params, strict=True):
            _, t = self._typed_value(value)
            want = BASE_VALUES.get(param, NUMBER)
            if not _fits(t, want, value):
                assert isinstance(value, ast.Arith)
                self.ctx.report(
                    rules.DECLARED_TYPE_MISMATCH,
                    f"{instance.text}.{op.name} takes {_written(want)} ({op.signature}), but "
                    f"{self.ctx.source(value.span)} is {_written(t)}",
                    value.span,
                )
                raise _Failed
        self.handlers.append(f"{instance.text}.{op.name}")
        return BASE_VALUES.get(op.result, NUMBER)

    def _wrapped(self, node: object, constructor: str) -> Term:
        """`weight(e)`: the value inside the prelude's constructor."""
        if not isinstance(node, ast.Apply) or node.func.text != constructor or len(node.args) != 1:
            raise _Unsupported(f"its {constructor} argument")
        return self._value(node.args[0])

    def _draw(self, site: object, dist: object, local: ast.Name | None) -> None:
        if (
            not isinstance(site, ast.Apply)
            or site.func.text != SITE
            or len(site.args) != 1
            or not isinstance(site.args[0], ast.Literal)
            or site.args[0].kind != "string"
        ):
            raise _Unsupported("its site")
        label = str(site.args[0].value)
        if not isinstance(dist, ast.Apply) or dist.func.text not in FAMILIES:
            raise _Unsupported("its distribution")
        family = resolved(FAMILIES[dist.func.text])
        if family.event_rank or family.discrete or family.dirac:
            raise _Unsupported(f"its draw from {family.name}")
        bound = bind(family, dist.args, {})
        if isinstance(bound, str):
            report_binding(self.ctx, family, bound, dist.span)
            raise _Failed
        schema, given = bound
        numbers = {k: float(v.value) for k, v in given.items() if isinstance(v, ast.Number)}
        args: list[tuple[str, Term]] = []
        for p in schema:
            node = given.get(p.name)
            if node is None:
                continue
            term = self._value(node)
            if isinstance(term, Num) and p.constraint.admits(term.value, numbers) is False:
                report_constraint(self.ctx, family, p, self.ctx.source(term.span), term.span)
            args.append((p.name, term))
        self.lines.append(Draw(local.text if local else None, label, family.name, tuple(args)))

    def _call(self, node: ast.Clause, local: ast.Name) -> None:
        callee = node.parts[0]
        assert isinstance(callee, ast.Name)
        if any(isinstance(p, ast.Name) for p in node.parts[1:]):
            raise _Unsupported("its static arguments")
        target = self.env.computation(callee.text) if callee.text != self.name else None
        if target is None or not target.numbers_only:
            raise _Unsupported(f"its call of {callee.text}")
        self.ctx.ref(callee.span, SymbolKey(callee.text))
        args = tuple(self._value(a) for a in node.parts[1:])
        if len(args) != len(target.params):
            self.ctx.report(
                rules.ARGUMENT_COUNT, takes(callee.text, target.params, len(args)), node.span
            )
            raise _Failed
        missing = [i for i in target.row if i not in self.row]
        if missing:
            self.ctx.report(
                rules.EFFECT_ROW,
                f"{callee.text} performs on {', '.join(repr(m) for m in missing)}, which the "
                f"row of define {self.name} does not list: add "
                f"{'it' if len(missing) == 1 else 'them'} to the row",
                callee.span,
            )
        self.lines.append(Invoke(local.text, callee.text, args))


def takes(callee: str, params: tuple[str, ...], given: int) -> str:
    """`noisy takes 1 value (x), not 2`: a call given the wrong number of values."""
    s = "s" if len(params) != 1 else ""
    return f"{callee} takes {len(params)} value{s} ({', '.join(params)}), not {given}"


def _folded(term: Term) -> Term:
    """`-0.1` (a minus before a number) as the number it is."""
    if isinstance(term, Unary) and term.op == "-" and isinstance(term.operand, Num):
        return Num(-term.operand.value, term.span)
    return term


def _reads(term: Term) -> list[Ref | Gather]:
    """The names a value reads, each where it is written (a gather's is the whole `z[0]`)."""
    return [t for t in subterms(term) if isinstance(t, Ref | Gather)]


def _fits(t: Plated, want: Plated, node: object) -> bool:
    """Whether a value of type `t` (written `node`) goes where `want` is declared: the same
    base type, a whole-number literal for an Int, and any number where a Real goes (a
    vector's length is compared by the caller)."""
    if want in _BASE or t in _BASE:
        whole = isinstance(node, ast.Number) and node.raw.isdigit()  # `42`, not `42.0`, `4e1`
        return t == want or (want == BASE_VALUES["Int"] and t == NUMBER and whole)
    return True


def _written(t: Plated) -> str:
    """A define's value type as a message writes it: `Real`, `Int`, `State -> Real`, or
    the length of a list."""
    for name, base in BASE_VALUES.items():
        if t == base:
            return name
    n = length(t)
    if not n:
        return REAL_TYPE if n == 0 else t.label
    return f"{t.plates[0].name} -> {REAL_TYPE}" if t.plates else f"a list of {n} numbers"


def _is_real(node: object) -> bool:
    return isinstance(node, ast.Name) and node.text == REAL_TYPE


def _number_refs(term: Term) -> list[Ref] | None:
    """The names a term of numbers reads, or None when it is not one: a gather, a stack
    or a reduction along an axis (values here are single numbers)."""
    out: list[Ref] = []
    stack = [term]
    while stack:
        t = stack.pop()
        if isinstance(t, Ref):
            out.append(t)
        elif isinstance(t, Unary):
            stack.append(t.operand)
        elif isinstance(t, Op):
            stack += [t.left, t.right]
        elif isinstance(t, Call) and t.axis is None:
            stack.extend(t.args)
        elif not isinstance(t, Num):
            return None
    return out


# ---------------------------------------------------------------- inlining


def substitute(term: Term, names: dict[str, Term], span: Span) -> Term:
    """`term` with each name read from `names` (a name it lacks stays a name) and every
    node placed at `span`."""
    match term:
        case Num(value=v):
            return Num(v, span)
        case Ref(name=n):
            return names[n] if n in names else Ref(n, span)
        case Unary(op=op, operand=o):
            return Unary(op, substitute(o, names, span), span)
        case Op(op=op, left=left, right=right):
            return Op(op, substitute(left, names, span), substitute(right, names, span), span)
        case Call(args=args, function=function):  # its deduction or density kept
            inner = tuple(substitute(a, names, span) for a in args)
            placed = function and placed_at(function, span)
            return replace(term, args=inner, span=span, function=placed)
        case Stack(items=items):
            return Stack(tuple(substitute(i, names, span) for i in items), span)
        case Gather(base=base, indices=indices, plates=plates):
            moved = tuple(None if i is None else substitute(i, names, span) for i in indices)
            return Gather(base, moved, span, plates)
        case _:
            raise AssertionError(f"not a term: {term!r}")


def placed_at(body: Body, span: Span) -> Body:
    """`body` with every node placed at `span` (a solver's right-hand side at its call)."""
    lines = tuple((name, substitute(term, {}, span)) for name, term in body.lines)
    return Body(body.name, body.params, body.sizes, lines, substitute(body.result, {}, span), span)
