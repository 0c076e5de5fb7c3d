"""Call steps of a Bayesian program: `let c <- noisy(b)` with `noisy` a typed `define`.

quivers' meaning (its QIEC developer note): the program runs the computation with
its own `Random` and `Score` instances, so a draw inside it is a site of the
program under the label it gives (`site("noise")`; a label drawn again in one
run is counted, `noise@1`), a weight it adds is a term of the joint, and the
call's target is the value it returns. The checker puts the callee in place in
the program's `Model` (computations.py types it): a family `Site` per draw, a
`score` `Let` per weight, a `let` for an argument of a draw that is an
expression, and a `let` binding the target; nothing new for the runtime, which
runs these as it runs the program's own steps. Each is placed at the call step.

Every value a computation takes or returns is a number (`Real`): a call reads
numbers, and its draws have no plates.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from qvr_core.builtins import FAMILIES
from qvr_core.check.computations import substitute, takes
from qvr_core.check.context import SymbolKey
from qvr_core.check.defines import Bind, Computation, Draw, Invoke, Weigh
from qvr_core.check.measure_steps import supported
from qvr_core.check.model import Argument, Let, Measure, Site
from qvr_core.check.module import SymbolKind
from qvr_core.check.qiec_calls import runs_computation, staged_call_step
from qvr_core.check.terms import Num, Ref, Stack, Term, lower, refs
from qvr_core.check.types import Element, Plated
from qvr_core.syntax import ast
from qvr_core.text import rules
from qvr_core.text.span import Span

if TYPE_CHECKING:
    from qvr_core.check.passes import ModelPass

NUMBER = Plated(())


def call_step(mc: ModelPass, step: ast.CallStep, scope: tuple[str, ...]) -> None:
    """Type `let c <- f(args)` and put `f` in place in the model `mc` builds."""
    ctx = mc.ctx
    name = step.callee.text
    if runs_computation(mc.env, step):  # a QIEC computation (qiec_calls.py)
        found = staged_call_step(mc, step)
        if found is None:
            mc.bind_target(step.target, SymbolKind.LOCAL, step.span, None)
            return
        put_in_place(mc, step.target, step.callee, step.span, scope, *found, rhs=_rhs(mc, step))
        return
    comp = mc.env.computation(name)
    assert comp is not None  # model_reason: a typed computation
    ctx.ref(step.callee.span, SymbolKey(name))
    ok = True
    args: list[Term] = []
    for i, a in enumerate(step.args):
        t = mc.arith(a)
        param = comp.params[i] if i < len(comp.params) else None
        if t is not None and param is not None and not _number(t):
            ctx.report(
                rules.ARGUMENT_PLATE,
                f"{param} of {name} is a Real, one number, but {ctx.source(a.span)} is "
                f"{t.label}: pass one number (index it, or reduce it first)",
                a.span,
            )
            ok = False
        term = lower(a, mc.is_plate, mc.plates_of)
        assert term is not None  # model_reason: arithmetic that lowers
        args.append(term)
    if len(step.args) != len(comp.params):
        ctx.report(rules.ARGUMENT_COUNT, takes(name, comp.params, len(step.args)), step.span)
        ok = False
    if not ok:
        mc.bind_target(step.target, SymbolKind.LOCAL, step.span, None)
        return
    put_in_place(mc, step.target, step.callee, step.span, scope, comp, NUMBER, args, _rhs(mc, step))


def put_in_place(
    mc: ModelPass,
    target: ast.Name,
    callee: ast.Name,
    span: Span,
    scope: tuple[str, ...],
    comp: Computation,
    t: Plated,
    args: list[Term] | None = None,
    rhs: ast.Arith | None = None,
) -> None:
    """The callee's draws, weights and value as steps of the model, placed at the step
    (`span`), the target of type `t` bound to its value; `rhs` what the steps show as
    their formula (the call as written)."""
    inliner = _Inliner(mc, target, callee, span, scope, rhs)
    result = inliner.call(comp, args or [])
    mc.bind_target(target, SymbolKind.LOCAL, span, t)
    let = ast.LetStep(target, inliner.rhs, span)
    mc.steps.append(Let(target.text, "let", let, _uses(result), result, scope, t))


def _number(t: Plated) -> bool:
    """One number: no plates, no event axes (a data variable's rows are its own)."""
    return not t.plates and not t.element.event and not t.element.discrete


def _rhs(mc: ModelPass, step: ast.CallStep) -> ast.Apply:
    """`noisy(b)` as written: what the steps put in place show as their formula."""
    span = mc.ctx.lines.span(step.callee.span.start, step.span.end)
    return ast.Apply(step.callee, step.args, span)


def _uses(term: Term) -> tuple[str, ...]:
    """The names a term reads, each once, in order of writing."""
    return tuple(dict.fromkeys(refs(term)))


class _Inliner:
    """One call step's callee (and what it calls) as steps of the model."""

    def __init__(
        self,
        mc: ModelPass,
        target: ast.Name,
        callee: ast.Name,
        span: Span,
        scope: tuple[str, ...],
        rhs: ast.Arith | None,
    ) -> None:
        self.mc = mc
        self.target_name = target
        self.callee = callee
        self.scope = scope
        self.span: Span = span
        self.target = target.text
        self.rhs: ast.Arith = rhs if rhs is not None else ast.Var(target, span)
        self.types: dict[str, Plated] = {}
        self.scores = 0

    def call(self, comp: Computation, args: list[Term]) -> Term:
        names: dict[str, Term] = dict(zip(comp.params, args, strict=True))
        for line in comp.lines:
            if isinstance(line, Bind):
                names[line.local] = substitute(line.term, names, self.span)
            elif isinstance(line, Draw):
                site = self._draw(line, names)
                if line.local is not None:
                    names[line.local] = Ref(site, self.span)
            elif isinstance(line, Weigh):
                self._weigh(substitute(line.term, names, self.span))
            elif isinstance(line, Invoke):
                inner = self.mc.env.computation(line.callee)
                assert inner is not None  # computations.py typed the call
                values = [substitute(a, names, self.span) for a in line.args]
                names[line.local] = self.call(inner, values)
        return substitute(comp.result, names, self.span)

    def _draw(self, line: Draw, names: dict[str, Term]) -> str:
        name = self.mc.site_label(line.label, self.callee)
        family = FAMILIES[line.family]
        measure = self._measure(name, line, names) if line.parts else None
        args = (
            measure.args
            if measure is not None
            else tuple(
                self._argument(name, param, substitute(term, names, self.span))
                for param, term in line.args
            )
        )
        kind = measure.support.kind if measure is not None else family.support.kind
        t = Plated((), Element(kind))
        node = ast.SampleStep(
            ast.Name(name, self.target_name.span),
            ast.Call(ast.Name(family.name, self.callee.span), (), (), self.rhs.span),
            self.span,
        )
        site = Site(
            name,
            "sample",
            node,
            family.name,
            args,
            (),
            scope=self.scope,
            type=t,
            called=self.target,
            measure=measure,
        )
        self.mc.steps.append(site)
        self.types[name] = t
        return name

    def _measure(self, site: str, line: Draw, names: dict[str, Term]) -> Measure | None:
        """A draw from a `Mixture` as the measure a family step would have built: its
        weights (numbers written out, or a vector `let` of their terms) and each
        component a leaf at its arguments, the supports worked out as for a step."""

        def leaf(part: Draw) -> Measure:
            args = tuple(
                self._argument(site, param, substitute(term, names, self.span))
                for param, term in part.args
            )
            return Measure(part.family, self.span, args)

        ((param, term),) = line.args
        weights = substitute(term, names, self.span)
        assert isinstance(weights, Stack)  # qiec_eval wrote the weights so
        vector = Plated((), Element("real_vector", (len(weights.items),)))
        argument = self._argument(site, param, weights, vector)
        built = Measure(line.family, self.span, (argument,), tuple(leaf(p) for p in line.parts))
        return supported(self.mc.ctx, built)

    def _argument(self, site: str, param: str, term: Term, t: Plated = NUMBER) -> Argument:
        """A draw's argument of type `t`: a number or a list of numbers written out, a
        name, else a `let` of its own that the draw reads."""
        if isinstance(term, Num):
            return Argument(param, self.span, literal=term.value, type=NUMBER)
        if isinstance(term, Stack) and all(isinstance(i, Num) for i in term.items):
            numbers = tuple(i.value for i in term.items if isinstance(i, Num))
            return Argument(param, self.span, literal=numbers)
        if isinstance(term, Ref):
            return Argument(param, self.span, name=term.name, type=self._type(term.name))
        aux = f"{site}.{param}"  # an expression: a value of its own, which the draw reads
        self._let(aux, "let", term, t)
        return Argument(param, self.span, name=aux, type=t)

    def _weigh(self, term: Term) -> None:
        self.scores += 1
        suffix = "" if self.scores == 1 else f"@{self.scores - 1}"
        self._let(f"{self.target}.score{suffix}", "score", term)

    def _let(self, name: str, kind: str, term: Term, t: Plated = NUMBER) -> None:
        target = ast.Name(name, self.target_name.span)
        node: ast.LetStep | ast.ScoreStep = (
            ast.ScoreStep(target, self.rhs, self.span)
            if kind == "score"
            else ast.LetStep(target, self.rhs, self.span)
        )
        self.mc.steps.append(
            Let(name, kind, node, _uses(term), term, self.scope, t, called=self.target)  # type: ignore[arg-type]  # "let" or "score"
        )
        self.types[name] = t

    def _type(self, name: str) -> Plated | None:
        if name in self.types:
            return self.types[name]
        local = self.mc.pc.locals.get(name)
        t: object = local.type if local is not None else None  # a model's locals hold Plated
        if isinstance(t, Plated):
            return t
        data = self.mc.data.get(name)
        return data.type if data is not None else None
