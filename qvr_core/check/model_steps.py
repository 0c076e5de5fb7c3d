"""Checking a Bayesian program: family steps, plates, data variables, scopes.

quivers' meaning, as its guides give it: `sample v : A <- F(args)` draws one
F-distributed value per index of the finite set A (a plate); `observe r : N
<- F(args)` scores the data bound to `r` at fit time, one row per index of N;
`over=` names a vector family's event axes (for a number-valued family they
are further plates), `iid_over=` batch plates; `marginalize c : K <- F(args)`
sums the coordinate `c` out of its indented body (`over=G` groups the rows of
each observe by its `via=idx`); a name no step binds is a data variable.

What this module knows it types; `model_reason` says what it does not, and
such a program keeps the names-only check (unchecked.py) with one QVR011.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal

from qvr_core.builtins import FAMILIES, FUNCTIONS, METHODS, OPERATORS, Family, Param, bind, resolved
from qvr_core.builtins.deduction_calls import GOAL_WEIGHT, PARSE
from qvr_core.builtins.functions import FOLD, LIFTED, LINEAR_ALGEBRA, MAP, Function
from qvr_core.builtins.objects import PLATE_KINDS, VALUE_KINDS
from qvr_core.check.call_steps import call_step, put_in_place
from qvr_core.check.comprehensions import factor_type, map_type
from qvr_core.check.context import SymbolKey
from qvr_core.check.declarations import (
    number_text,
    report_binding,
    report_constraint,
    resolve_type,
    spread_entries,
)
from qvr_core.check.deduction_calls import admitted, goal_weight_type, parse_type
from qvr_core.check.deduction_system import Deduction
from qvr_core.check.folds import fold_type
from qvr_core.check.lambdas import LambdaValue, inline, innermost
from qvr_core.check.measure_steps import build_measure, measure_typed
from qvr_core.check.model import (
    CONSTRAINT_OPTION,
    REDUCTIONS,
    STEP_OPTIONS,
    Argument,
    DataVariable,
    Let,
    Model,
    Parameter,
    Site,
    Step,
)
from qvr_core.check.module import SymbolKind
from qvr_core.check.ode_calls import ode_type, solver_reason, with_functions
from qvr_core.check.qiec_calls import computed_let, literal_lists, runs_computation, staged_let
from qvr_core.check.spelling import one_edit_apart
from qvr_core.check.step_constraints import constraint_word, value_constraint
from qvr_core.check.step_flags import flag_applies, flag_option
from qvr_core.check.terms import Call, Num, Ref, Term, lower, refs
from qvr_core.check.types import REAL_NUMBER, Element, ObjectType, Plated, Product, inline_object
from qvr_core.check.unchecked import is_family
from qvr_core.syntax import ast
from qvr_core.text import rules
from qvr_core.text.diagnostics import Related
from qvr_core.text.span import Span

if TYPE_CHECKING:
    from qvr_core.check.passes import ProgramPass

_ARITH_OPS = frozenset({"+", "-", "*", "/"})
#: What an entry of a vector draw is, picked by a number (`w[0]` of a simplex).
_ENTRY_KINDS = {"simplex": "unit_interval", "positive_vector": "positive"}
_INDEX_KINDS = ("index", "ordinal", "boolean", "nonnegative_integer", "integer_interval")


def _site_plates(family: Family, a: Argument) -> tuple[ObjectType, ...]:
    """The plates of argument `a` that are the site's: all but those a matrix parameter
    takes as its own rows (`MarkovChain(theta)` with `theta <- Dirichlet(1.0) [over=S,
    iid_over=S]`: the plate S is the transition's rows, not one chain per S)."""
    assert a.type is not None
    param = family.param(a.param)
    own = max(0, (param.rank if param is not None else 0) - len(a.type.element.event))
    plates = a.type.plates
    return plates[: len(plates) - own] if own else plates


# ---------------------------------------------------------------- what it types


def model_reason(pc: ProgramPass) -> str | None:
    """Why this checker cannot type the program (None: it can)."""
    decl = pc.decl
    ctx = pc.ctx
    if not (_header_typed(decl.dom) and _header_typed(decl.cod)):
        return "its domain or codomain"
    for kind in decl.param_kinds:
        if kind is not None and not (
            isinstance(kind, ast.TypeRef)
            and len(kind.factors) == 1
            and kind.factors[0].text in (*VALUE_KINDS, *PLATE_KINDS)
        ):
            return "its typed parameters"
    lists = literal_lists(decl.steps)
    for step in _all_steps(decl.steps):
        if isinstance(step, ast.SampleStep | ast.ObserveStep | ast.MarginalizeStep):
            if getattr(step, "more_targets", ()):
                return "its step with several targets"
            plate = step.declared if isinstance(step, ast.ObserveStep) else step.plate
            if plate is not None and not isinstance(plate, ast.TypeRef):
                return "its plates"
            for o in step.options:  # a flag (no value) is typed: check/step_flags.py
                if not isinstance(o.value, ast.Literal | ast.ValueList | None):
                    return "its step options"
            source = step.source
            if isinstance(source, ast.NameRef) and is_family(ctx, source.name):
                continue  # a family written bare (`Flat`): `_site` reads it as a call
            if not isinstance(source, ast.Call):
                return "its step source"
            if is_family(ctx, source.callee) and FAMILIES[source.callee.text].measure:
                if not measure_typed(source, _family_arg):
                    return "its distribution arguments"
            elif is_family(ctx, source.callee):
                if not all(_family_arg(a) for a in (*source.args, *source.kwargs)):
                    return "its family arguments"
            elif isinstance(ctx.top.get(source.callee.text), ast.ProgramDecl):
                if source.kwargs or not all(
                    isinstance(a, ast.Literal | ast.NameRef) for a in source.args
                ):
                    return "its program call"
            else:
                return "its step source"
        elif isinstance(step, ast.LetStep | ast.ScoreStep):
            # a let may bind a lambda, which map and fold read (check/lambdas.py)
            value = innermost(step.value) if isinstance(step, ast.LetStep) else step.value
            if isinstance(step, ast.LetStep) and computed_let(pc.env, value, lists):
                continue  # the computations' evaluator runs it (qiec_calls.py)
            why = _arith_reason(value) or solver_reason(pc, value)
            if why:
                return why
        elif isinstance(step, ast.CallStep):
            why = _call_reason(pc, step)
            if why:
                return why
        elif not isinstance(step, ast.ReturnStep):
            return f"its {type(step).__name__.removesuffix('Step').lower()} step"
    for step in decl.steps:
        if isinstance(step, ast.MarginalizeStep) and any(
            isinstance(s, ast.CallStep) for s in _all_steps(step.steps)
        ):
            return "its call step inside a marginalize"
    return None


def _call_reason(pc: ProgramPass, step: ast.CallStep) -> str | None:
    """Why a call step `let c <- f(args)` is not typed: `f` is no computation the checker
    types (computations.py), or an argument is no arithmetic it types."""
    if runs_computation(pc.env, step):  # a QIEC computation, run with the call's values
        return None
    if step.static is not None or step.constructs:
        return "its call step"
    comp = pc.env.computation(step.callee.text)
    if comp is None or not comp.numbers_only:  # a function of vectors is a solver's
        return f"its call of {step.callee.text}"
    for a in step.args:
        why = _arith_reason(a)
        if why:
            return why
    return None


def _header_typed(side: object) -> bool:
    """A header side the model checker types: a product of names (`School`, `A * B`) or
    an unnamed sized object of a known constructor (`1`, `FinSet 3`, `Real D`)."""
    return isinstance(side, ast.TypeRef) or inline_object(side)


def _all_steps(steps: tuple[ast.Step, ...]) -> Iterator[ast.Step]:
    for step in steps:
        yield step
        if isinstance(step, ast.MarginalizeStep):
            yield from _all_steps(step.steps)


def _family_arg(arg: object) -> bool:
    if isinstance(arg, ast.KeywordArg):
        arg = arg.value
    if isinstance(arg, ast.Literal):
        return arg.kind in ("int", "float", "name")  # a keyword's name value is a Literal
    if isinstance(arg, ast.NameRef):
        return True
    if isinstance(arg, ast.Call):  # `Bernoulli(sigmoid(eta))`: a builtin function's value
        return _computed_arith(arg) is not None
    if isinstance(arg, ast.IndexArg):
        return isinstance(arg.index, ast.TypeRef)
    if isinstance(arg, ast.ListArg):  # numbers, or names and calls: a vector let (`[pi, q]`)
        return _computed_arith(arg) is not None
    return False


def _reaches(start: str, readers: dict[str, list[str]], sinks: set[str]) -> bool:
    """Whether a step in `sinks` reads `start`, directly or through other steps."""
    seen, stack = {start}, [start]
    while stack:
        name = stack.pop()
        if name in sinks:
            return True
        for reader in readers.get(name, ()):
            if reader not in seen:
                seen.add(reader)
                stack.append(reader)
    return False


def _computed_arith(node: object) -> ast.Arith | None:
    """A family argument written as a call of builtin functions over names and numbers
    (`sigmoid(eta)`, `exp(min(a, b))`), as the arithmetic of a `let`; None for anything
    else (a morphism's call, a keyword, a list), which keeps the names-only check."""
    if isinstance(node, ast.NameRef):
        return ast.Var(node.name, node.span)
    if isinstance(node, ast.Literal) and node.kind in ("int", "float"):
        return ast.Number(float(node.value), node.raw, node.span)
    if isinstance(node, ast.ListArg):
        items = [_computed_arith(i) for i in node.items]
        if not items or any(i is None for i in items):
            return None
        return ast.ListExpr(tuple(i for i in items if i is not None), node.span)
    if not isinstance(node, ast.Call) or node.kwargs:
        return None
    fn = FUNCTIONS.get(node.callee.text)
    if fn is None or not fn.accepts(len(node.args)) or fn.defines:  # a solver: in a let
        return None
    args = [_computed_arith(a) for a in node.args]
    if any(a is None for a in args):
        return None
    return ast.Apply(node.callee, tuple(a for a in args if a is not None), node.span)


def _arith_reason(node: ast.Arith) -> str | None:
    """Why a `let`/`score` expression is not typed: a function, method or construct the
    registry (`qvr_core.builtins.FUNCTIONS`, `OPERATORS`) does not have."""
    stack: list[object] = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, ast.Apply) and item.func.text in LIFTED:  # map, fold: a lambda
            stack += [innermost(a) for a in item.args]
        elif admitted(item):  # `parse(D, s)`, `chart.goal_weight()`: deduction_calls.py
            continue
        elif isinstance(item, ast.Apply):
            fn = FUNCTIONS.get(item.func.text)
            if fn is None:
                return f"its function {item.func.text}"
            if not fn.accepts(len(item.args)) and not fn.defines:  # ode_calls.py reports it
                return f"its call of {fn.name} with {len(item.args)} values"
            stack.extend(item.args)
        elif isinstance(item, ast.MethodCall):
            if item.method.text not in METHODS:
                return f"its method .{item.method.text}()"
            stack.extend(item.args)
        elif isinstance(item, ast.Index):
            if not all(isinstance(i, ast.Var) or _literal(i) for i in item.indices):
                return "its expressions"
        elif isinstance(item, ast.Binary):
            if item.op not in OPERATORS:
                return f"its operator {item.op}"
            stack += [item.left, item.right]
        elif isinstance(item, ast.Unary):
            stack.append(item.operand)
        elif isinstance(item, ast.ListExpr):
            stack.extend(item.items)
        elif isinstance(item, ast.Factor):  # a binder's object is checked where it is typed
            stack += [value for _, value in item.cases]
            if item.body is not None:
                stack.append(item.body)
    # whether it lowers at all: an object argument's size is looked for when it is typed
    if lower(node, lambda _: False, size_of=lambda _: 0) is None:
        return "its expressions"
    return None


def _written_number(node: ast.Arith) -> ast.Number | ast.Unary | None:
    """A let's value that is a number as written (`1`, `-1`, `0.5`), else None: a name
    bound to one indexes as the number does (`ModelChecker._bound_index`)."""
    if _literal(node):
        assert isinstance(node, ast.Number | ast.Unary)  # _literal
        return node
    return None


def _literal(node: ast.Arith) -> bool:
    """An index written as a number (`beta[0]`, or `beta[-1]` and `beta[0.5]`, which the
    checker reports): it picks one entry along its axis."""
    if isinstance(node, ast.Unary) and node.op == "-":
        node = node.operand
    return isinstance(node, ast.Number)


# ---------------------------------------------------------------- typing


@dataclass
class _Scope:
    """An enclosing `marginalize`: its coordinate and grouping plates."""

    name: str
    plates: tuple[ObjectType, ...]


class ModelChecker:
    """Types one Bayesian program into a `Model` (its diagnostics into the context)."""

    def __init__(self, pc: ProgramPass) -> None:
        self.pc = pc
        self.ctx = pc.ctx
        self.env = pc.env
        self.decl = pc.decl
        self.params: dict[str, Parameter] = {}
        self.plate_params: set[str] = set()
        self.data: dict[str, DataVariable] = {}
        self.steps: list[Step] = []
        self.marginal: set[str] = set()  # coordinates summed out (their gathers add no plate)
        self.gaps: list[str] = []  # what it types that the model runtime cannot run
        self._lists = literal_lists(pc.decl.steps)  # lists written out, which a let maps
        self.whole_data: dict[str, str] = {}  # `let k = int(d)`: k, read from data d
        self.labels: dict[str, int] = {}  # labels drawn at inside called computations: draws
        self.drawn: dict[str, str] = {}  # the site names of those draws: the callee drawing
        self.observed_lets: list[str] = []  # lets of the data that observe steps observe
        #: lets bound to a number as written (`let i = 1`, `let j = i`): an index by one
        #: is an index by that number (`_bound_index`)
        self.constants: dict[str, ast.Number | ast.Unary] = {}
        #: the numbers standing for such an index at its use, by id: `_literal_index`
        #: names the let in what it says
        self._bound_at: dict[int, ast.Name] = {}
        self._bound_read: list[str] = []  # such lets a let's value indexes by (`_let`)
        #: the site whose family arguments are being bound, and its scope (`_site`)
        self._owner: tuple[str, tuple[str, ...]] = ("", ())
        self._taken: set[str] | None = None  # `_written_names`, made on first use
        #: the binders of the `factor` expressions being typed, innermost last: names
        #: of the expression only, read before the program's (`comprehensions.py`)
        self.binders: dict[str, Plated] = {}
        #: the lambdas lets bind (`let f = x -> x - 1.0`), which map and fold read by name
        #: (`check/lambdas.py`): no values of the model
        self.lambdas: dict[str, ast.Lambda] = {}
        #: the plates of each fold's accumulator, under `terms.fold_accumulator`'s name,
        #: for `lower` (`check/folds.py`)
        self.accumulators: dict[str, tuple[str, ...]] = {}
        #: the deduction of each `parse(D, s)` by where it is written, and the lets bound
        #: to a chart (`check/deduction_calls.py`)
        self.parses: dict[Span, Deduction] = {}
        self.charts: set[str] = set()
        self._let_value: ast.Arith | None = None

    def run(self) -> Model:
        decl = self.decl
        self._parameters()
        # model_reason admits a product of names or a sized object on either side
        assert isinstance(decl.dom, ast.TypeRef | ast.SizedObject | ast.ObjCtor)
        assert isinstance(decl.cod, ast.TypeRef | ast.SizedObject | ast.ObjCtor)
        dom = self._header(decl.dom)
        cod = self._header(decl.cod)
        returns: tuple[str, ...] = ()
        labels: tuple[str, ...] = ()
        for step in decl.steps:
            if isinstance(step, ast.ReturnStep):
                if returns:
                    self.ctx.report(rules.MISPLACED_RETURN, "a program returns once", step.span)
                    continue
                for n in step.values:
                    self._read(n)
                returns = tuple(n.text for n in step.values)
                labels = tuple(n.text for n in step.labels)
            else:
                if returns:
                    self.ctx.report(
                        rules.MISPLACED_RETURN,
                        "this step comes after the program's return",
                        step.span,
                    )
                self._step(step, ())
        if not returns:
            self.ctx.report(
                rules.MISPLACED_RETURN,
                f"program {self.pc.scope} has no return: end it with `return NAME`",
                decl.name.span,
                related=(Related(decl.header_span, "program header"),),
            )
        self.pc.unused_locals()
        self._uninformed_flat_priors()
        model = Model(
            name=self.pc.scope,
            decl=decl,
            dom=dom,
            cod=cod,
            params=tuple(self.params.values()),
            steps=tuple(self.steps),
            data=tuple(self.data.values()),
            returns=returns,
            return_labels=labels,
            runtime_gaps=tuple(self.gaps),
            observed_lets=tuple(self.observed_lets),
        )
        for name, refusal in model.unsummable.items():  # QVR414: what a run would refuse
            site = model.site(name)
            assert site is not None
            other = refusal.other
            related = () if other is None else (Related(other.step.span, "the call"),)
            self.ctx.report(
                rules.CANNOT_SUM_OUT, refusal.why, site.step.target.span, related=related
            )
        return model

    def _uninformed_flat_priors(self) -> None:
        """QVR413 for an improper flat prior (`Flat`, `HalfFlat`) that no observation or
        score term depends on: nothing multiplies its density of 1 by a likelihood that
        decays, so its posterior does not integrate and NUTS drifts without end (Stan
        samples such a program too, with the same result). A value reaches an observation
        through the lets, the arguments and the gathers that read it, and through the
        priors of other latents that do."""
        readers: dict[str, list[str]] = {}  # a name -> the steps that read it
        sinks: list[str] = []
        flats: list[Site] = []
        for step in self.steps:
            if isinstance(step, Let):
                read = step.uses
                if step.kind == "score":
                    sinks.append(step.name)
            else:
                read = step.reads()  # its arguments' names, a measure's at every depth
                if step.kind == "observe":
                    sinks.append(step.name)
                family = FAMILIES.get(step.family or "")
                # a flat prior between bounds (`BoundedFlat(low, high)`) has a support of
                # finite measure, so its posterior integrates with or without data
                unbounded = family is not None and family.improper and not family.params
                if step.kind == "sample" and unbounded:
                    flats.append(step)
            for name in read:
                readers.setdefault(name, []).append(step.name)
        for flat in flats:
            if not _reaches(flat.name, readers, set(sinks)):
                self.ctx.report(
                    rules.IMPROPER_POSTERIOR,
                    f"'{flat.name}' has the improper prior {flat.family} and no observation "
                    "depends on it: its posterior does not integrate (give it a proper "
                    "prior, or observe data that depend on it)",
                    flat.step.target.span,
                )

    # ------------------------------------------------------------ header

    def _parameters(self) -> None:
        decl = self.decl
        kinds = decl.param_kinds or (None,) * len(decl.params or ())
        for name, kind in zip(decl.params or (), kinds, strict=False):
            word = kind.factors[0].text if isinstance(kind, ast.TypeRef) else None
            self.params[name.text] = Parameter(name.text, name.span, word)
            t: Plated | None = None
            if word in PLATE_KINDS:
                self.plate_params.add(name.text)
            elif word in VALUE_KINDS:
                t = Plated(())
            self.pc.define(name, SymbolKind.PARAM, name.span, t, is_input=True)  # type: ignore[arg-type]  # a model's locals hold Plated values
            if word in PLATE_KINDS:
                self.pc.use(name.text)  # a plate parameter is used by the header or steps

    def _header(self, ref: ast.TypeRef | ast.SizedObject | ast.ObjCtor) -> Product | None:
        if not isinstance(ref, ast.TypeRef):  # `G -> 1`: an unnamed object, as written
            return resolve_type(self.ctx, ref)
        if any(f.text in self.plate_params for f in ref.factors):
            for f in ref.factors:
                self._object_name(f)
            return None
        return resolve_type(self.ctx, ref)

    # ------------------------------------------------------------ steps

    def _step(self, step: ast.Step, scope: tuple[_Scope, ...]) -> None:
        if isinstance(step, ast.SampleStep | ast.ObserveStep | ast.MarginalizeStep):
            self._site(step, scope)
        elif isinstance(step, ast.CallStep):
            self._call_step(step, scope)
        elif isinstance(step, ast.LetStep) and isinstance(step.value, ast.Lambda):
            self._lambda_let(step)
        elif isinstance(step, ast.LetStep) and computed_let(self.env, step.value, self._lists):
            self._computed(step, scope)
        elif isinstance(step, ast.LetStep | ast.ScoreStep):
            t = self._let(step, tuple(s.name for s in scope))
            self.bind_target(step.target, SymbolKind.LOCAL, step.span, t)
            if isinstance(step, ast.ScoreStep):
                self.pc.use(step.target.text)  # a score term is used by the joint density

    def _computed(self, step: ast.LetStep, scope: tuple[_Scope, ...]) -> None:
        """A let the computations' evaluator runs (`int(d)`, a map over a written list)."""
        found = staged_let(self, step)
        if found is None:
            self.bind_target(step.target, SymbolKind.LOCAL, step.span, None)
            return
        comp, t = found
        put_in_place(
            self, step.target, step.target, step.span, tuple(s.name for s in scope), comp, t
        )

    def _lambda_let(self, step: ast.LetStep) -> None:
        """`let f = x -> x - 1.0`: a lambda that map and fold read by name, as quivers reads
        its lambda macro; no value of the model, so no step of it (its body is typed at
        each use, with that call's parameters)."""
        assert isinstance(step.value, ast.Lambda)  # _step
        shown = LambdaValue(self.ctx.source(step.value.span))
        self.bind_target(step.target, SymbolKind.LOCAL, step.span, shown)  # type: ignore[arg-type]  # hover shows the lambda (ide/hover.py)
        local = self.pc.locals.get(step.target.text)
        if local is not None and local.name.span == step.target.span:  # not rebound
            self.lambdas[step.target.text] = step.value
            self.ctx.record_type(
                step.target.span,
                shown,
                f"a lambda bound by a let: the function of a {MAP.name} or {FOLD.name} "
                "that names it, not a value",
            )

    def _let(self, step: ast.LetStep | ast.ScoreStep, scope: tuple[str, ...]) -> Plated | None:
        """Type a let's (or score's) value and put it in the model, in step order."""
        self._bound_read = []
        self._let_value = step.value if isinstance(step, ast.LetStep) else None
        t = self.arith(step.value)
        self._let_value = None
        value = inline(step.value, self.lambdas)
        term = lower(value, self.is_plate, self.plates_of, self.size_of, self._constant)
        assert term is not None  # model_reason admits only what lowers
        if isinstance(term, Call) and term.fn == PARSE:
            term = replace(term, deduction=self.parses.get(term.span))
            self.charts.add(step.target.text)
        if isinstance(step, ast.LetStep):
            number = _written_number(step.value)
            if number is None and isinstance(step.value, ast.Var):
                number = self.constants.get(step.value.name.text)
            if number is not None:
                self.constants[step.target.text] = number
        term = with_functions(term, self.env)  # a solver's define: its body, not a name
        # a let indexed by is read, though its number is in the term: the diagram's edge
        uses = tuple(dict.fromkeys((*refs(term), *self._bound_read)))
        kind: Literal["let", "score"] = "score" if isinstance(step, ast.ScoreStep) else "let"
        self.steps.append(Let(step.target.text, kind, step, uses, term, scope, t))
        return t

    def _site(
        self,
        step: ast.SampleStep | ast.ObserveStep | ast.MarginalizeStep,
        scope: tuple[_Scope, ...],
    ) -> None:
        source = step.source
        if isinstance(source, ast.NameRef):  # a family written bare (model_reason): no arguments
            source = ast.Call(source.name, (), (), source.span)
        assert isinstance(source, ast.Call)
        kind = (
            "observe"
            if isinstance(step, ast.ObserveStep)
            else "marginalize"
            if isinstance(step, ast.MarginalizeStep)
            else "sample"
        )
        annotation = step.declared if isinstance(step, ast.ObserveStep) else step.plate
        assert annotation is None or isinstance(annotation, ast.TypeRef)  # model_reason: names
        opts = self._options(step, kind, scope)
        self._owner = (step.target.text, tuple(s.name for s in scope))
        if is_family(self.ctx, source.callee):
            family = resolved(FAMILIES[source.callee.text])
            site = self._family_site(step, source, kind, family, annotation, opts)
        else:
            site = self._call_site(step, kind, source, annotation)
            if opts.constraint is not None and opts.constraint_at is not None:
                self.ctx.report(
                    rules.OPTION_NOT_APPLICABLE,
                    f"constraint={opts.constraint} orders the numbers a family draws; a draw "
                    f"from {source.callee.text} has the supports of its own sites",
                    opts.constraint_at,
                )
        site = replace(site, scope=tuple(s.name for s in scope))
        target = step.target
        if kind == "observe":
            self._observed(target, step.span, site.type)
        else:
            self.bind_target(target, SymbolKind.SAMPLE, step.span, site.type)
        self.steps.append(site)
        if isinstance(step, ast.MarginalizeStep):
            self.marginal.add(target.text)
            inner = (*scope, _Scope(target.text, opts.over))
            for s in step.steps:
                self._step(s, inner)

    def _call_step(self, step: ast.CallStep, scope: tuple[_Scope, ...]) -> None:
        call_step(self, step, tuple(s.name for s in scope))

    def site_label(self, label: str, callee: ast.Name) -> str:
        """The site name of a draw labelled `label` inside a called computation: the label,
        counted when drawn again (`noise@1`, as quivers replays it). A name the program
        binds as well would be two values under one name: reported at the call."""
        n = self.labels.get(label, 0)
        self.labels[label] = n + 1
        name = label if n == 0 else f"{label}@{n}"
        self.drawn[name] = callee.text
        if name in self.pc.locals or name in self.data:
            self._label_clash(name, callee.span)
        return name

    def _label_clash(self, name: str, span: Span) -> None:
        self.ctx.report(
            rules.REBOUND_VARIABLE,
            f"'{name}' is both a site {self.drawn[name]} draws at and a name of program "
            f"{self.pc.scope}: rename one of them",
            span,
        )

    def bind_target(self, target: ast.Name, kind: SymbolKind, span: Span, t: Plated | None) -> None:
        """Bind a step's target; a name read earlier as data cannot be bound after."""
        if target.text in self.drawn:
            self._label_clash(target.text, target.span)
        known = self.data.get(target.text)
        if known is not None and not known.observed:
            self.ctx.report(
                rules.REBOUND_VARIABLE,
                f"'{target.text}' is read before this step binds it, so that read is a data "
                "variable: move this step above the first read, or choose another name",
                target.span,
                related=(Related(known.span, f"'{target.text}' is first read here"),),
            )
            self.ctx.ref(target.span, SymbolKey(target.text, self.pc.scope))
            return
        self.pc.define(target, kind, span, t)  # type: ignore[arg-type]  # a model's locals hold Plated values

    def _observed(self, target: ast.Name, span: Span, t: Plated | None) -> None:
        """An observed target is a data variable: its value is bound at fit time. A `let`
        of the data (`let log_earn = log(earn)`) is observed as its value, computed from
        the data before the run (Stan's `transformed data`)."""
        n = target.text
        if n in self.drawn:
            self._label_clash(n, target.span)
        let = next((s for s in self.steps if isinstance(s, Let) and s.name == n), None)
        if let is not None and let.kind == "let" and n in self.pc.locals:
            self._observed_let(target, let)
            return
        known = self.data.get(n)
        if known is not None and not known.observed:  # read as data before this step
            self.data[n] = replace(known, observed=True, type=t)
            self.ctx.ref(target.span, SymbolKey(n, self.pc.scope))
            return
        self.pc.define(target, SymbolKind.OBSERVE, span, t)  # type: ignore[arg-type]  # a model's locals hold Plated values
        if n not in self.data:
            self.data[n] = DataVariable(n, target.span, True, t)

    def _observed_let(self, target: ast.Name, let: Let) -> None:
        """`observe log_earn ...` of `let log_earn = log(earn)`: the let's value is the
        observation, so it must be computed from data names and numbers only."""
        n = target.text
        self.ctx.ref(target.span, SymbolKey(n, self.pc.scope))
        self.pc.use(n)
        if n in self.observed_lets:
            self.ctx.report(
                rules.REBOUND_VARIABLE,
                f"'{n}' is already observed in program {self.pc.scope}: observe a value once",
                target.span,
            )
            return
        reason = self._not_data(let)
        if reason is not None:
            what, reader, source = reason
            # where the value it reads is made: related information, which the editor keeps
            # in place when lines move (a line number in the words would go stale)
            made = [Related(source.step.span, f"'{source.name}' is made here")] if source else []
            self.ctx.report(
                rules.OBSERVED_NOT_DATA,
                f"'{n}' is observed, so its value must be data or computed from data only, "
                f"but its let reads {what}: compute it from data names and numbers, or "
                "observe a data name",
                target.span,
                related=(
                    Related(
                        reader.step.span,
                        f"'{n}' is computed here"
                        if reader is let
                        else f"read by the let of '{reader.name}', which '{n}' reads",
                    ),
                    *made,
                ),
            )
            return
        self.observed_lets.append(n)

    def _not_data(self, let: Let) -> tuple[str, Let, Site | Let | None] | None:
        """What a let reads, directly or through other lets, that is not data (in words,
        the let that reads it, and the step that makes it), or None: it is computed from
        data only."""
        lets = {s.name: s for s in self.steps if isinstance(s, Let)}
        todo: list[tuple[str, Let]] = [(let.name, let)]
        seen: set[str] = set()
        while todo:
            name, reader = todo.pop()
            if name in seen:
                continue
            seen.add(name)
            d = self.data.get(name)
            if d is not None and not d.observed:  # a data name
                continue
            if d is not None:  # observed data: not read before the run, as the data are
                return f"'{name}', an observed site", reader, None
            inner = lets.get(name)
            if inner is not None and inner.called is not None:
                return f"'{name}', what a call step returns", reader, inner
            if inner is not None and inner.kind == "let":
                todo += [(u, inner) for u in inner.uses]
                continue
            if name in self.params:
                return f"'{name}', a parameter of program {self.pc.scope}", reader, None
            site = next((s for s in self.steps if isinstance(s, Site) and s.name == name), None)
            if site is not None and site.kind == "marginalize":
                return f"'{name}', a summed-out coordinate", reader, site
            if site is not None:
                return f"'{name}', a {site.kind}d value", reader, site
            return f"'{name}', which is not data", reader, None
        return None

    # ------------------------------------------------------------ options

    def _options(
        self,
        step: ast.SampleStep | ast.ObserveStep | ast.MarginalizeStep,
        kind: str,
        scope: tuple[_Scope, ...],
    ) -> _Options:
        out = _Options()
        seen: dict[str, ast.Option] = {}
        for o in step.options:
            key = o.key.text
            if key in seen:
                self.ctx.report(
                    rules.DUPLICATE_OPTION,
                    f"option {key} is given twice",
                    o.span,
                    related=(Related(seen[key].span, "first given here"),),
                )
                continue
            seen[key] = o
            if key not in STEP_OPTIONS:
                self.ctx.did_you_mean(
                    rules.UNKNOWN_OPTION,
                    f"unknown step option '{key}'",
                    o.key.span,
                    key,
                    STEP_OPTIONS,
                    otherwise=f": a {kind} step takes {', '.join(STEP_OPTIONS)}",
                )
                continue
            if o.value is None and flag_applies(key, kind):
                flag_option(self.ctx, o, step.options)  # dropped: quivers compiles it so
                continue
            # a flag of a key the step does not read gets the valued option's QVR306
            values = (
                ()
                if o.value is None
                else o.value.items
                if isinstance(o.value, ast.ValueList)
                else (o.value,)
            )
            if key in ("over", "iid_over"):
                plates = tuple(p for v in values if (p := self._option_plate(key, v)) is not None)
                if key == "over":
                    out.over = plates
                else:
                    out.iid_over = plates
            elif key == "via":
                out.via = self._via(o, values, kind, scope)
            elif key == "reduction":
                out.reduction = self._reduction(o, values, kind)
            elif key == CONSTRAINT_OPTION:
                out.constraint = constraint_word(self.ctx, o, values, kind)
                out.constraint_at = o.span
        return out

    def _option_plate(self, key: str, value: object) -> ObjectType | None:
        if not isinstance(value, ast.Literal) or value.kind != "name":
            span = getattr(value, "span", None)
            if span is not None:
                self.ctx.report(
                    rules.INVALID_OPTION_VALUE,
                    f"{key} names objects (axes), not {self.ctx.source(span)}",
                    span,
                )
            return None
        name = str(value.value)
        if name in ("dom", "cod"):
            return None  # the header's side: no plate of its own here
        if name in self.plate_params:
            self._read_param(name, value.span)
            return ObjectType(name, "finset", -1)
        obj = self.ctx.objects.get(name)
        if obj is None:
            self.ctx.did_you_mean(
                rules.INVALID_OPTION_VALUE,
                f"{key}={name}: '{name}' is not a declared object",
                value.span,
                name,
                list(self.ctx.objects),
            )
            return None
        self.ctx.ref(value.span, SymbolKey(name))
        return obj

    def _via(
        self, o: ast.Option, values: tuple[object, ...], kind: str, scope: tuple[_Scope, ...]
    ) -> str | None:
        grouped = next((s for s in reversed(scope) if s.plates), None)
        if kind != "observe" or grouped is None:
            self.ctx.report(
                rules.OPTION_NOT_APPLICABLE,
                "via= names how the rows of an observe map into the grouping plate of an "
                "enclosing `marginalize ... [over=G]`; this step has none",
                o.span,
            )
            return None
        value = values[0] if len(values) == 1 else None
        if not isinstance(value, ast.Literal) or value.kind != "name":
            self.ctx.report(rules.INVALID_OPTION_VALUE, "via= takes one name", o.span)
            return None
        name = ast.Name(str(value.value), value.span)
        self._read(name, indexes=grouped.plates[0].name)
        return name.text

    def _reduction(self, o: ast.Option, values: tuple[object, ...], kind: str) -> str | None:
        if kind != "marginalize":
            self.ctx.report(
                rules.OPTION_NOT_APPLICABLE,
                "reduction= says how a `marginalize` sums its coordinate out; "
                f"a {kind} step has no coordinate to sum out",
                o.span,
            )
            return None
        value = values[0] if len(values) == 1 else None
        word = str(value.value) if isinstance(value, ast.Literal) else None
        if word not in REDUCTIONS:
            span = value.span if isinstance(value, ast.Literal) else o.span
            self.ctx.did_you_mean(
                rules.INVALID_OPTION_VALUE,
                f"reduction={word or self.ctx.source(span)} is not a reduction",
                span,
                word or "",
                REDUCTIONS,
                otherwise=f": use one of {', '.join(REDUCTIONS)}",
            )
            return None
        return word

    # ------------------------------------------------------------ family sites

    def _family_site(
        self,
        step: ast.SampleStep | ast.ObserveStep | ast.MarginalizeStep,
        call: ast.Call,
        kind: str,
        family: Family,
        annotation: ast.TypeRef | None,
        opts: _Options,
    ) -> Site:
        """A family step's site; `call` is its source (a bare family as a call without
        arguments)."""
        if family.kernel_only:
            self.ctx.report(
                rules.WRONG_KIND,
                f"{family.name} is a morphism's family, not a step's: {family.kernel_only} "
                f"(declare `morphism k : A -> B ~ {family.name}` and `sample x <- k`)",
                call.callee.span,
            )
        if family.dirac:  # only a bare name reaches here: any argument is QVR311
            self.ctx.report(
                rules.WRONG_KIND,
                f"{family.name} is a morphism's family (its network's output is the value), "
                "not a step's: bind a value with `let`",
                call.callee.span,
            )
        if family.improper and kind != "sample":
            self.ctx.report(
                rules.WRONG_KIND,
                f"{family.name} is an improper prior, only a latent's (a `sample` step's): "
                f"the values of this `{kind}` step are data or summed out, which needs a family "
                "whose density integrates",
                call.callee.span,
            )
        plates, spaces = self._annotation(annotation)
        if family.event_rank and opts.over:  # `: K` beside `over=K` restates the event axis
            plates = tuple(p for p in plates if p not in opts.over)
        value_set: ObjectType | None = None
        if kind == "marginalize" and family.support.kind in _INDEX_KINDS and plates:
            value_set, plates = plates[0], plates[1:]  # `marginalize c : K <- Categorical(..)`
        measure = None
        if family.measure is not None:  # quivers' measure algebra: check/measure_steps.py
            measure = build_measure(self, call, kind, step.target.text)
            args = measure.args if measure is not None else ()
            bound = [(FAMILIES[f], a) for f, a in measure.arguments()] if measure else []
        else:
            args = self.bind_family(family, call)
            bound = [(family, a) for a in args]
        # the plates: annotation, iid_over, a marginalize's grouping, a number family's over
        event_axes: tuple[ObjectType, ...] = ()
        extra = opts.iid_over
        if kind == "marginalize" or family.event_rank == 0:
            extra = (*extra, *opts.over)
        else:
            event_axes = opts.over
            if event_axes and len(event_axes) != family.event_rank:
                self.ctx.report(
                    rules.INVALID_OPTION_VALUE,
                    f"over= names {len(event_axes)} axes but a draw of {family.name} has "
                    f"{family.event_rank}",
                    next(o.span for o in step.options if o.key.text == "over" and o.value),
                )
                event_axes = ()
        if (
            kind != "marginalize"
            and family.event_rank
            and not event_axes
            and plates
            and _annotation_is_event(family, args, plates[0])
        ):
            # `chol : Dim <- LKJCholesky(eta)`, `w : K <- Dirichlet(1.0)`: the
            # annotation's first object is the axis of one draw
            event_axes = (plates[0],) * family.event_rank
            plates = plates[1:]
        for p in extra:
            if p not in plates:
                plates = (*plates, p)
        explicit = bool(annotation is not None or opts.over or opts.iid_over)
        # number families broadcast over their arguments' plates when nothing is written
        data_rows = False
        allowed = {p.name for p in (*plates, *event_axes)}  # a vector's own axis too
        for owner, a in bound:
            if a.type is None:
                continue
            if a.type.data_plates:  # its axes are the data's: known when it is bound
                data_rows = True
                continue
            for p in _site_plates(owner, a):
                if p.name in allowed:
                    continue
                if explicit and kind != "marginalize" and not opts.via and p.size >= 0:
                    self._plate_mismatch(step, a, p, plates)
                    continue
                plates = (*plates, p)
                allowed.add(p.name)
        if measure is not None:
            element = Element(measure.support.kind)
        else:
            element = self._element(step, family, args, event_axes, spaces, value_set, plates)
            self.check_literals(family, args)
            self._check_support(family, spaces, annotation)
        t = Plated(plates, element, data_rows and not explicit)
        self.ctx.record_type(step.target.span, t)
        if measure is not None and measure.joined > len(plates) + int(t.data_plates):
            self.ctx.report(
                rules.FAMILY_ARGUMENTS,
                f"{family.name} joins {measure.joined} plates into one observation but "
                f"'{step.target.text}' has {len(plates) + int(t.data_plates)}: name them "
                f"(`{step.target.text} : A * B`) or join fewer",
                measure.span,
            )
        constraint = None
        if measure is not None and opts.constraint_at is not None:
            self.ctx.report(
                rules.OPTION_NOT_APPLICABLE,
                f"constraint= orders the numbers a family draws; {family.name} has the "
                "support its distributions give",
                opts.constraint_at,
            )
        elif opts.constraint is not None and opts.constraint_at is not None:
            word, at = opts.constraint, opts.constraint_at
            constraint = value_constraint(self.ctx, word, at, family, step.target.text, t)
        return Site(
            name=step.target.text,
            kind=kind,  # type: ignore[arg-type]  # one of the site kinds, as the step's keyword
            step=step,
            family=family.name,
            args=args,
            plates=tuple(p.name for p in plates),
            over=tuple(p.name for p in opts.over),
            via=opts.via,
            reduction=opts.reduction,
            type=t,
            annotated=annotation is not None,
            constraint=constraint,
            measure=measure,
        )

    def _annotation(
        self, ref: ast.TypeRef | None
    ) -> tuple[tuple[ObjectType, ...], tuple[ObjectType, ...]]:
        """The plates (finite sets) and the value spaces (continuous objects) a `: T` names."""
        if ref is None:
            return (), ()
        plates: list[ObjectType] = []
        spaces: list[ObjectType] = []
        for f in ref.factors:
            for obj in self._object_name(f):
                (plates if obj.discrete else spaces).append(obj)
        return tuple(plates), tuple(spaces)

    def _object_name(self, name: ast.Name) -> tuple[ObjectType, ...]:
        n = name.text
        if n in self.plate_params:
            self._read_param(n, name.span)
            return (ObjectType(n, "finset", -1),)
        if n in self.ctx.objects:
            self.ctx.ref(name.span, SymbolKey(n))
            return (self.ctx.objects[n],)
        if n in self.ctx.aliases:
            self.ctx.ref(name.span, SymbolKey(n))
            return self.ctx.aliases[n].factors
        if n in self.ctx.object_decls:
            self.ctx.ref(name.span, SymbolKey(n))
            return ()
        if n.isdigit():
            return ()
        self.ctx.undefined(name, "object", list(self.ctx.object_decls))
        return ()

    def _read_param(self, n: str, span: Span) -> None:
        self.ctx.ref(span, SymbolKey(n, self.pc.scope))
        self.pc.use(n)

    def bind_family(self, family: Family, call: ast.Call) -> tuple[Argument, ...]:
        """The arguments bound to the family's parameters (`Dirichlet(1.0, 2.0, 3.0)`
        spreads a vector parameter's entries), each typed."""
        bare = call.span == call.callee.span  # `_site` made the call of a bare name
        if family.schemas and bare:  # `<- Normal`
            self.ctx.report(
                rules.FAMILY_ARGUMENTS,
                f"{family.name} needs its arguments: {family.signature()} (only a family "
                "without parameters, such as Flat, is written bare)",
                call.span,
            )
            return ()
        if not family.schemas and not bare and not (call.args or call.kwargs):
            self.ctx.report(
                rules.FAMILY_ARGUMENTS,
                f"{family.name} takes no arguments: write it without parentheses, "
                f"`{family.name}` (no quivers grammar parses `{family.name}()`)",
                call.span,
            )
            return ()
        positional = spread_entries(self.ctx, family, call.args)
        keywords = {kw.key.text: kw.value for kw in call.kwargs}
        bound = bind(family, positional, keywords)
        if isinstance(bound, str):
            report_binding(self.ctx, family, bound, call.span)
            for a in (*positional, *keywords.values()):
                self.bind_argument(None, a)
            return ()
        params, values = bound
        by_name = {p.name: p for p in params}
        return tuple(self.bind_argument(by_name[name], node) for name, node in values.items())

    def bind_argument(self, param: Param | None, node: object) -> Argument:
        name = param.name if param is not None else ""
        span: Span = node.span  # type: ignore[attr-defined]  # every argument node has a span
        if isinstance(node, ast.Call) or (
            isinstance(node, ast.ListArg)
            and not all(isinstance(i, ast.Literal) for i in node.items)
        ):
            return self._computed_argument(name, node)
        if isinstance(node, ast.Literal) and node.kind == "name":
            node = ast.NameRef(ast.Name(str(node.value), span), span)
        if isinstance(node, ast.Literal):
            return Argument(name, span, literal=float(node.value), type=Plated(()))
        if isinstance(node, ast.ListArg):
            values = tuple(float(i.value) for i in node.items)  # type: ignore[union-attr]  # numbers only (model_reason)
            return Argument(
                name, span, literal=values, type=Plated((), Element("real_vector", (len(values),)))
            )
        if isinstance(node, ast.NameRef):
            t = self._read(node.name)
            if t is not None:
                self.ctx.record_type(span, t)
            return Argument(name, span, name=node.name.text, type=t)
        assert isinstance(node, ast.IndexArg)
        base = self._read(node.name)
        index = node.index
        assert isinstance(index, ast.TypeRef)
        t = self._gather(node.name, base, index.factors, span)
        if t is not None:
            self.ctx.record_type(span, t)
        plates = tuple(p.name for p in base.plates) if base is not None else ()
        return Argument(
            name,
            span,
            name=node.name.text,
            index=tuple(f.text for f in index.factors),
            index_plates=plates[: len(index.factors)],
            type=t,
        )

    # ------------------------------------------------------------ gathers

    def _gather(
        self,
        base_name: ast.Name,
        base: Plated | None,
        indices: tuple[ast.Name | ast.Arith, ...],
        span: Span,
    ) -> Plated | None:
        """`theta[cls]`: one index per leading plate of `theta`. An object name restates
        the plate; a discrete value picks an entry of it (its own plates replace the
        plate, except a marginalised coordinate, summed out); a data variable gathers
        along rows the data fixes. A number (`beta[0]`) picks one entry, counted from 0,
        and drops the axis; numbers past the plates pick entries of one draw's axes."""
        if base is None or (base.data_plates and not base.plates):
            for i in indices:
                if isinstance(i, ast.Name):
                    self._index_name(i, None)
                else:
                    self._literal_index(base_name, i, None)
            return base
        names = tuple(i for i in indices if isinstance(i, ast.Name))
        literals = tuple(i for i in indices if not isinstance(i, ast.Name))
        if not base.plates and base.element.event and len(names) == len(indices) == 1:
            return self._entry_by_value(base_name, base, names[0])
        if literals and base.data_plates:
            for i in names:
                self._index_name(i, None)
            for i in literals:
                self._literal_index(base_name, i, None)
            self.gaps.append(
                f"line {span.start_line + 1}: {self.ctx.source(span)} indexes {base_name.text}, "
                "whose rows the data sizes and lead its axes, by a number, which the model "
                "runtime cannot line up with its plates yet"
            )
            return None
        extra = indices[len(base.plates) :]  # numbers past the plates: one draw's axes
        event = base.element.event
        into_event = all(not isinstance(i, ast.Name) for i in extra)
        if len(indices) > len(base.plates) + (len(event) if into_event else 0):
            for i in names:
                self._index_name(i, None)
            for i in literals:
                self._literal_index(base_name, i, None)
            n = len(base.plates) + (len(event) if into_event else 0)
            noun = ("axis", "axes") if into_event else ("plate", "plates")
            self.ctx.report(
                rules.INDEX_PLATE,
                f"{base_name.text} : {base.label} has {n} {noun[n != 1]} to index, "
                f"not {len(indices)}",
                span,
            )
            return None
        plates: list[ObjectType] = []
        data = base.data_plates
        for i, plate in zip(indices, base.plates, strict=False):
            if not isinstance(i, ast.Name):  # `beta[0]`: one entry, the plate dropped
                self._literal_index(base_name, i, (plate.name, plate.size))
                continue
            got = self._index_name(i, plate)
            if got is None:
                continue
            if isinstance(got, ObjectType):
                if got.name != plate.name and got.size >= 0 and plate.size >= 0:
                    self._index_mismatch(base_name, base, i, plate, f"the plate {got.name}")
                plates.append(plate)
                continue
            idx_t, idx_name = got
            if idx_t is None or (idx_t.data_plates and not idx_t.plates):
                data = True
                continue
            if not idx_t.discrete:  # a real-valued index contracts along the plate
                self.gaps.append(
                    f"line {span.start_line + 1}: {base_name.text}[{i.text}] contracts along "
                    f"{plate.name} by a real-valued index, which the model runtime does not "
                    "run: quivers 0.25.2 refuses it too (an index is an Int or a Tensor of them)"
                )
                plates.extend(p for p in idx_t.plates if p not in plates and p != plate)
                data = data or idx_t.data_plates
                continue
            of = idx_t.element.of
            if of is not None and of != plate.name and plate.size >= 0:
                size = self.ctx.objects.get(of)
                if size is None or size.size != plate.size or of not in self.ctx.objects:
                    self._index_mismatch(base_name, base, i, plate, f"{of}")
            if idx_name in self.marginal:
                continue
            for p in idx_t.plates:
                if p not in plates:
                    plates.append(p)
            data = data or idx_t.data_plates
        rest = base.plates[len(indices) :]
        element = base.element
        if extra:
            element = self._entry(base_name, element, extra)
        return Plated((*plates, *(p for p in rest if p not in plates)), element, data)

    def _entry_by_value(self, base_name: ast.Name, base: Plated, index: ast.Name) -> Plated | None:
        """`xs[k]` of a list of n values (no plate: a computation's list, `[a, b, c]`) by a
        discrete value over a finite set of n elements (a marginalised `k : K`, K of size
        n): entry k, over k's plates (none for a marginalised coordinate)."""
        got = self._index_name(index, None)
        if not isinstance(got, tuple):
            return None
        idx_t, idx_name = got
        if idx_t is None:
            return None
        n = base.element.event[0]
        of = self.ctx.objects.get(idx_t.element.of) if idx_t.element.of else None
        if not idx_t.discrete or of is None or of.size != n:
            what = f"{of.name} of {of.size} values" if of is not None else idx_t.label
            self.ctx.report(
                rules.INDEX_PLATE,
                f"{base_name.text} : {base.label} is a list of {n} entries, so its index "
                f"ranges over a finite set of {n} values, not {what}",
                index.span,
            )
            return None
        plates = () if idx_name in self.marginal else idx_t.plates
        event = base.element.event[1:]
        kind = "real" if not event else ("real_vector" if len(event) == 1 else "real_matrix")
        return Plated(plates, Element(kind, event), idx_t.data_plates)

    def _entry(
        self, base_name: ast.Name, element: Element, indices: tuple[ast.Name | ast.Arith, ...]
    ) -> Element:
        """An entry of one draw picked by numbers along its leading axes (`w[0]` of a
        Dirichlet's simplex is a number in [0, 1])."""
        for i, n in zip(indices, element.event, strict=False):
            of = element.of if element.of is not None and len(element.event) == 1 else None
            self._literal_index(base_name, i, (of or f"one draw of {base_name.text}", n))
        event = element.event[len(indices) :]
        if element.discrete:
            return Element(element.kind, event, element.of if event else None)
        if event:
            return Element("real_vector" if len(event) == 1 else "real_matrix", event)
        return Element(_ENTRY_KINDS.get(element.kind, "real"))

    def _bound_index(self, index: ast.Arith) -> ast.Name | ast.Arith:
        """An index as `_gather` takes it: a name, or a number. A let bound to a number
        (`let i = 1`) indexes as that number does, as quivers' runtime gathers by the
        index's value (`beta[i]` is `beta[1]`): the number is put at the use, so the
        checks of a written number locate there, and the let is still read."""
        if not isinstance(index, ast.Var):
            return index
        if index.name.text in self.binders:  # a factor's binder: every entry in turn
            return index.name
        number = self.constants.get(index.name.text)
        if number is None:
            return index.name
        self._read(index.name)
        self._bound_read.append(index.name.text)
        at = index.span
        placed: ast.Number | ast.Unary
        if isinstance(number, ast.Unary):
            assert isinstance(number.operand, ast.Number)  # _written_number
            placed = ast.Unary(number.op, replace(number.operand, span=at), at)
        else:
            placed = replace(number, span=at)
        self._bound_at[id(placed)] = index.name
        return placed

    def _constant(self, name: str) -> float | None:
        """The number a let bound to one holds, for `lower` (`_bound_index`)."""
        number = self.constants.get(name)
        if number is None:
            return None
        if isinstance(number, ast.Unary):
            assert isinstance(number.operand, ast.Number)  # _written_number
            return -float(number.operand.value)
        return float(number.value)

    def _literal_index(
        self, base_name: ast.Name, node: ast.Name | ast.Arith, axis: tuple[str, int] | None
    ) -> None:
        """`beta[0]`: a whole number from 0 below the size of the axis it indexes (`axis`:
        its name and size, -1 when a caller or the data sizes it); else a located error.
        A let bound to a number (`beta[i]`, `_bound_index`) is said with its number."""
        assert not isinstance(node, ast.Name)
        negative = isinstance(node, ast.Unary)
        number = node.operand if isinstance(node, ast.Unary) else node
        assert isinstance(number, ast.Number)  # _literal: only numbers reach here
        shown = f"{base_name.text}[{self.ctx.source(node.span)}]"
        bound = self._bound_at.get(id(node))
        if bound is not None:  # `beta[i] (i = -1)`
            shown += f" ({bound.text} = {'-' if negative else ''}{number.raw})"
        name, size = axis if axis is not None else ("its axis", -1)
        entries = (
            f"{name} has {size} entr{'y' if size == 1 else 'ies'}, indexed 0..{size - 1}"
            if size > 0
            else f"{name} has its size at run time"
        )
        if negative:
            self.ctx.report(
                rules.INDEX_PLATE,
                f"{shown}: an index counts from 0 and cannot be negative "
                f"(qvr does not count from the end): {entries}",
                node.span,
            )
        elif not number.raw.isdigit():
            self.ctx.report(
                rules.INDEX_PLATE,
                f"{shown}: an index is a whole number written without a "
                f"point or an exponent, counted from 0: {entries}",
                node.span,
            )
        elif size >= 0 and int(number.raw) >= size:
            self.ctx.report(
                rules.INDEX_PLATE,
                f"{shown} is out of range: {entries} (qvr counts from 0)",
                node.span,
            )

    def _index_name(
        self, name: ast.Name, plate: ObjectType | None
    ) -> ObjectType | tuple[Plated | None, str] | None:
        n = name.text
        if n in self.binders or n in self.pc.locals or n in self.data:
            return self._read(name, indexes=plate.name if plate else None), n
        if n in self.plate_params:
            self._read_param(n, name.span)
            return ObjectType(n, "finset", -1)
        if n in self.ctx.objects:
            self.ctx.ref(name.span, SymbolKey(n))
            return self.ctx.objects[n]
        return self._read(name, indexes=plate.name if plate else None), n

    def _index_mismatch(
        self, base_name: ast.Name, base: Plated, index: ast.Name, plate: ObjectType, what: str
    ) -> None:
        self.ctx.report(
            rules.INDEX_PLATE,
            f"{base_name.text} : {base.label} is indexed by {index.text}, which ranges over "
            f"{what}, not {plate.name}",
            index.span,
            related=self._object_related(plate.name),
        )

    def _object_related(self, name: str) -> tuple[Related, ...]:
        decl = self.ctx.object_decls.get(name)
        return (Related(decl.name.span, f"{name} is declared here"),) if decl else ()

    # ------------------------------------------------------------ element types

    def _element(
        self,
        step: ast.SampleStep | ast.ObserveStep | ast.MarginalizeStep,
        family: Family,
        args: tuple[Argument, ...],
        event_axes: tuple[ObjectType, ...],
        spaces: tuple[ObjectType, ...],
        value_set: ObjectType | None,
        plates: tuple[ObjectType, ...],
    ) -> Element:
        support = family.support
        if support.kind in ("index", "ordinal"):
            of = value_set.name if value_set is not None else None
            for a in args:
                t = a.type
                if t is None or not t.element.event:
                    continue
                got = t.element.of
                n = t.element.event[-1]
                if value_set is not None and n >= 0 and value_set.size >= 0 and n != value_set.size:
                    self.ctx.report(
                        rules.ARGUMENT_PLATE,
                        f"{a.param}={self.ctx.source(a.span)} is {t.element.label}, but "
                        f"{step.target.text} ranges over {value_set.name} ({value_set.size})",
                        a.span,
                    )
                if of is None:
                    of = got
            return Element(support.kind, (), of)
        if family.event_rank == 0:
            self._entries_per_plate(step, family, args, plates)
            return Element(support.kind)
        sizes: list[int] = [p.size for p in event_axes]
        of = event_axes[0].name if event_axes else None
        if not sizes:
            shapes = {a.param: a.type.element.event for a in args if a.type is not None}
            try:
                sizes = list(family.event_shape(shapes))
            except ValueError:
                space = next((s for s in spaces if s.size > 1), None)
                if space is not None:
                    sizes = [space.size] * family.event_rank
                elif plates and family.event_rank == 1:
                    sizes = [-1]
                else:
                    sizes = [-1] * family.event_rank
        for a in args:
            if a.type is None or not a.type.element.event or not sizes:
                continue
            n = a.type.element.event[-1]
            if n >= 0 and sizes[-1] >= 0 and n != sizes[-1]:
                self.ctx.report(
                    rules.ARGUMENT_PLATE,
                    f"{a.param}={self.ctx.source(a.span)} has {n} entries, but a draw of "
                    f"{family.name} here has {sizes[-1]}"
                    + (f" (over={event_axes[-1].name})" if event_axes else ""),
                    a.span,
                )
        return Element(support.kind, tuple(sizes), of)

    def _entries_per_plate(
        self,
        step: ast.SampleStep | ast.ObserveStep | ast.MarginalizeStep,
        family: Family,
        args: tuple[Argument, ...],
        plates: tuple[ObjectType, ...],
    ) -> None:
        """A number family's argument written as a vector (`let mu_loc = [3.0, 10.0]`,
        `Normal([3.0, 10.0], 1.0)`) gives one entry per index of the site's last plate, the
        axis it lines up with: a vector of another length would fail only when the run
        broadcasts it (QVR313 here). A plate of one entry lays out no axis, and a vector
        of one entry broadcasts to any."""
        axes = [p for p in plates if p.size != 1]  # `axis_plates`: what lays out an axis
        if not axes or isinstance(step, ast.MarginalizeStep) or axes[-1].size < 0:
            return  # no axis, one a caller sizes, or a marginalize's groups (summed)
        last = axes[-1]
        for a in args:
            param = family.param(a.param)
            t = a.type
            if param is None or param.rank or t is None or t.plates or t.data_plates:
                continue
            if len(t.element.event) == 1 and t.element.event[0] not in (-1, 1, last.size):
                self.ctx.report(
                    rules.ARGUMENT_PLATE,
                    f"{a.param}={self.ctx.source(a.span)} has {t.element.event[0]} entries, "
                    f"one per index of {last.name}, which has {last.size}",
                    a.span,
                    related=self._object_related(last.name),
                )

    def check_literals(self, family: Family, args: tuple[Argument, ...]) -> None:
        """A number outside its parameter's constraint (`HalfCauchy(-1.0)`)."""
        bounds = {a.param: a.literal for a in args if isinstance(a.literal, float)}
        for a in args:
            param = family.param(a.param)
            if param is None or a.literal is None:
                continue
            constraint = param.constraint.entry
            values = a.literal if isinstance(a.literal, tuple) else (a.literal,)
            for v in values:
                if constraint.admits(v, bounds) is False:
                    written = self.ctx.source(a.span) if len(values) == 1 else number_text(v)
                    report_constraint(self.ctx, family, param, written, a.span)
                    break

    def _check_support(
        self, family: Family, spaces: tuple[ObjectType, ...], annotation: ast.TypeRef | None
    ) -> None:
        """A family whose values are not values of the continuous object written after `:`."""
        for space in spaces:
            if family.discrete and not space.discrete:
                self.ctx.report(
                    rules.FAMILY_SUPPORT,
                    f"{family.name} draws discrete values ({family.support.describe()}), but "
                    f"{space.name} is "
                    f"{space.describe()}, a continuous object: use a finite set, or a "
                    "continuous family",
                    annotation.span if annotation is not None else Span(0, 0, 0, 0, 0, 0),
                    related=self._object_related(space.name),
                )
                return

    def _plate_mismatch(
        self,
        step: ast.SampleStep | ast.ObserveStep | ast.MarginalizeStep,
        a: Argument,
        plate: ObjectType,
        plates: tuple[ObjectType, ...],
    ) -> None:
        where = " * ".join(p.name for p in plates) or "no plate"
        self.ctx.report(
            rules.ARGUMENT_PLATE,
            f"{a.param}={self.ctx.source(a.span)} is over {plate.name}, but "
            f"{step.target.text} is over {where}: index it (`{self.ctx.source(a.span)}[...]`) "
            "or put the step on that plate",
            a.span,
            related=self._object_related(plate.name),
        )

    # ------------------------------------------------------------ program calls

    def _call_site(
        self,
        step: ast.SampleStep | ast.ObserveStep | ast.MarginalizeStep,
        kind: str,
        call: ast.Call,
        annotation: ast.TypeRef | None,
    ) -> Site:
        """`sample v <- template(Subject, 1.0)`: the template's returned value, its plate
        parameters replaced by the objects passed."""
        callee = call.callee.text
        self.ctx.ref(call.callee.span, SymbolKey(callee))
        if not self.env.cyclic(call.callee):  # a template that calls itself has no end
            self.env.program_type(callee)
        model = self.env.programs.get(callee)
        if isinstance(model, Model):
            self._returned_summed(model, call.callee.span)
        self._annotation(annotation)
        written: list[str] = []
        values: list[Term] = []
        t: Plated | None = None
        actual: dict[str, ObjectType] = {}
        params = model.params if isinstance(model, Model) else ()
        if isinstance(model, Model) and len(call.args) != len(params):
            self.ctx.report(
                rules.ARGUMENT_COUNT,
                f"{callee} takes {len(params)} argument{'s' if len(params) != 1 else ''} "
                f"({', '.join(p.name for p in params)}), not {len(call.args)}",
                call.span,
            )
        for i, a in enumerate(call.args):
            written.append(self.ctx.source(a.span))
            if isinstance(a, ast.NameRef):
                values.append(Ref(a.name.text, a.span))
            elif isinstance(a, ast.Literal) and a.kind == "name":
                values.append(Ref(str(a.value), a.span))
            elif isinstance(a, ast.Literal) and a.kind in ("int", "float", "bool"):
                values.append(Num(float(a.value), a.span))
            param = params[i] if i < len(params) else None
            if isinstance(a, ast.NameRef):
                if param is not None and param.kind in PLATE_KINDS:
                    objs = self._object_name(a.name)
                    if objs:
                        actual[param.name] = objs[0]
                else:
                    self._read(a.name)
        if isinstance(model, Model) and model.returns:
            ret = model.returns[0]
            found = next(
                (s.type for s in model.steps if s.name == ret and s.type is not None), None
            )
            if found is not None:
                t = replace(
                    found,
                    plates=tuple(actual.get(p.name, p) if p.size < 0 else p for p in found.plates),
                )
                self.ctx.record_type(step.target.span, t)
        return Site(
            name=step.target.text,
            kind=kind,  # type: ignore[arg-type]  # one of the site kinds, as the step's keyword
            step=step,
            family=None,
            args=(),
            plates=tuple(p.name for p in t.plates) if t else (),
            type=t,
            callee=callee,
            call_args=tuple(written),
            call_values=tuple(values),
        )

    def _returned_summed(self, template: Model, at: Span) -> None:
        """QVR414 at a call of a template whose returned value depends on a discrete site
        it sums out (`Model.returned_summed`): a run of the caller refuses that site."""
        for name, refusal in template.returned_summed.items():
            assert refusal.other is not None
            drawn = Related(refusal.other.step.span, f"'{name}' is drawn here")
            self.ctx.report(rules.CANNOT_SUM_OUT, refusal.why, at, related=(drawn,))

    # ------------------------------------------------------------ values

    def _read(self, name: ast.Name, indexes: str | None = None) -> Plated | None:
        """The type of a value read by name: a local, a program parameter, or a data
        variable (a name no step binds, bound from the data at fit time)."""
        n = name.text
        pc = self.pc
        if n in self.binders:  # a factor's binder (`comprehensions.py` records its type)
            return self.binders[n]
        if n in self.lambdas:
            self.ctx.ref(name.span, SymbolKey(n, pc.scope))
            pc.use(n)
            self.ctx.report(
                rules.WRONG_KIND,
                f"'{n}' is a lambda bound by a let, not a value: quivers reads it only as "
                f"the function of {MAP.name} or {FOLD.name} (`{MAP.name}(xs, {n})`)",
                name.span,
                related=(Related(self.pc.locals[n].name.span, f"'{n}' is bound here"),),
            )
            return None
        if n in pc.locals:
            self.ctx.ref(name.span, SymbolKey(n, pc.scope))
            pc.use(n)
            t: object = pc.locals[n].type  # a model's locals hold Plated values
            if n in self.data and indexes and self.data[n].indexes is None:
                self.data[n] = replace(self.data[n], indexes=indexes)
            return t if isinstance(t, Plated) else None
        if n in self.ctx.top:
            self.ctx.ref(name.span, SymbolKey(n))
            decl = self.ctx.top[n]
            if isinstance(decl, ast.ObjectDecl):
                return None
            kind = type(decl).__name__.removesuffix("Decl").lower()
            self.ctx.report(
                rules.WRONG_KIND,
                f"'{n}' is a {kind}, not a value: bind its result with a sample step first",
                name.span,
            )
            return None
        if n in self.drawn:  # a site of a call is no name of the program: not its data either
            self._label_clash(n, name.span)
        element = Element("index", (), indexes) if indexes else REAL_NUMBER
        t = Plated((), element, data_plates=True)
        self._like_a_value(name)
        pc.define(name, SymbolKind.DATA, name.span, t, is_input=True)  # type: ignore[arg-type]  # as above
        pc.use(n)
        self.data[n] = DataVariable(n, name.span, False, t, indexes)
        return t

    def _computed_argument(self, param: str, call: ast.Call | ast.ListArg) -> Argument:
        """`Bernoulli(sigmoid(eta))`, `Mixture([pi, q], ...)`: the value is a `let` of its
        own (a vector for a list), placed just
        before the site and read by it, as a call step puts a draw's expression argument
        (call_steps.py). So the runtime, the exports and the diagram, which read lets
        already, need nothing new. Its name is the site's and the parameter's
        (`y_probs`), made unique among the program's names, and a valid name in every
        export target."""
        value = _computed_arith(call)
        assert value is not None  # model_reason admits only what converts
        site, scope = self._owner
        aux = f"{site}_{param or 'arg'}"
        taken = self._written_names()
        while aux in taken or aux in self.data or aux in self.ctx.top:
            aux += "_"
        taken.add(aux)
        t = self._let(ast.LetStep(ast.Name(aux, call.span), value, call.span), scope)
        if t is not None:
            self.ctx.record_type(call.span, t)
        return Argument(param, call.span, name=aux, type=t)

    def _written_names(self) -> set[str]:
        """Every name a step of the program binds, before or after the one being checked,
        and the names given to computed arguments so far (`_computed_argument`)."""
        if self._taken is None:
            self._taken = {p.text for p in self.decl.params or ()}
            for step in _all_steps(self.decl.steps):
                target = getattr(step, "target", None)
                if isinstance(target, ast.Name):
                    self._taken.add(target.text)
                for extra in getattr(step, "targets", ()):
                    self._taken.add(extra.text)
        return self._taken

    def _like_a_value(self, name: ast.Name) -> None:
        """QVR412 for a new data name one edit from a value bound before it (`aa` after
        `sample a`): most likely a typo, which only the run would notice otherwise. The
        suggested value counts as used, so the typo gives one diagnostic, not two."""
        pc = self.pc
        close = [
            k
            for k, loc in pc.locals.items()
            if loc.kind is not SymbolKind.DATA and one_edit_apart(name.text, k)
        ]
        if not close:
            return
        shown = self.ctx.did_you_mean(
            rules.DATA_LIKE_A_VALUE,
            f"'{name.text}' is read from the data file, as no step binds it (data names are "
            "allowed)",
            name.span,
            name.text,
            (),
            close=sorted(close)[:3],
        )
        pc.use(shown[0])

    def arith(self, node: ast.Arith) -> Plated | None:
        t = self._arith_node(node)
        if t is not None:
            self.ctx.record_type(node.span, t)
        return t

    def _arith_node(self, node: ast.Arith) -> Plated | None:
        if isinstance(node, ast.Number):
            return Plated(())
        if isinstance(node, ast.Var):
            return self._read(node.name)
        if isinstance(node, ast.Unary):
            return self.arith(node.operand)
        if isinstance(node, ast.Binary):
            left = self.arith(node.left)
            right = self.arith(node.right)
            return _broadcast(left, right)
        if isinstance(node, ast.Literal):
            return Plated(())
        if isinstance(node, ast.Apply) and node.func.text == MAP.name:
            return map_type(self, node)
        if isinstance(node, ast.Apply) and node.func.text == FOLD.name:
            return fold_type(self, node)
        if isinstance(node, ast.Apply) and node.func.text == PARSE:
            return parse_type(self, node, node is self._let_value)
        if isinstance(node, ast.MethodCall) and node.method.text == GOAL_WEIGHT:
            return goal_weight_type(self, node)
        if isinstance(node, ast.Apply):
            fn = FUNCTIONS[node.func.text]
            if fn.defines:
                return ode_type(self, fn, node)
            if fn.objects and fn.accepts(len(node.args)):
                return self._object_series(fn, node)
            types = [self.arith(a) for a in node.args]
            if not fn.accepts(len(node.args)):
                self.ctx.report(
                    rules.ARGUMENT_COUNT,
                    f"{fn.name} takes {fn.arity} value{'s' if fn.arity != 1 else ''}: "
                    f"{fn.name}({', '.join(fn.params)})",
                    node.span,
                )
                return None
            if fn.shape == "reduce" or (fn.reduces_alone and len(types) == 1):
                return Plated(()) if all(t is not None for t in types) else None
            if fn.shape in LINEAR_ALGEBRA:
                return self._linear_algebra(fn.shape, node, types)
            if fn.shape == "series" and not self._series(fn, node, types):
                return None
            out = types[0]
            for t in types[1:]:
                out = _broadcast(out, t)
            return out
        if isinstance(node, ast.MethodCall):
            receiver = self._read(node.receiver.name)
            if receiver is not None:
                self.ctx.record_type(node.receiver.span, receiver)
            for a in node.args:
                self.arith(a)
            fn = METHODS[node.method.text]
            if receiver is None or fn.shape != "reduce":
                return receiver
            if not node.args:
                return Plated(())
            return _drop_axis(receiver, node.args[0])
        if isinstance(node, ast.ListExpr):
            items = [self.arith(i) for i in node.items]
            out = items[0] if items else Plated(())
            for t in items[1:]:
                out = _broadcast(out, t)
            if out is None:
                return None
            return Plated(out.plates, Element("real", (*out.element.event, len(items))))
        if isinstance(node, ast.Index):
            base = self._read(node.base.name)
            indices = tuple(self._bound_index(i) for i in node.indices)
            return self._gather(node.base.name, base, indices, node.span)
        if isinstance(node, ast.Factor):
            return factor_type(self, node)
        return None

    def _linear_algebra(
        self, shape: str, node: ast.Apply, types: list[Plated | None]
    ) -> Plated | None:
        """`gp_exp_quad_cov(x, alpha, rho)` (gram): an N x N matrix of x's N points;
        `cholesky(K)`, `add_diag(K, d)` (matrix): K's type; `matvec(L, z)` (matrix_vector):
        z's type, once
        the matrix is square and as wide as z is long (where both sizes are known)."""
        if any(t is None for t in types):
            return None
        first = types[0]
        assert first is not None
        if shape == "gram":
            n = _length(first)
            return Plated((), Element("real", (n, n)))
        event = first.element.event
        if len(event) != 2 or (event[0] != event[1] and -1 not in event):
            self.ctx.report(
                rules.ARITHMETIC_DIMENSIONS,
                f"{node.func.text} takes a square matrix, but {self.ctx.source(node.args[0].span)} "
                f"is {first.label}",
                node.args[0].span,
            )
            return None
        if shape == "matrix":
            return first
        vector = types[1]
        assert vector is not None
        width, length = event[1], _length(vector)
        if -1 not in (width, length) and width != length:
            self.ctx.report(
                rules.ARITHMETIC_DIMENSIONS,
                f"{node.func.text} multiplies a {event[0]} x {width} matrix by "
                f"{self.ctx.source(node.args[1].span)}, {length} long: the widths differ",
                node.args[1].span,
            )
            return None
        return vector

    def _object_series(self, fn: Function, node: ast.Apply) -> Plated | None:
        """`lags(y, Lag)`: y's type with the plate Lag added as its last axis; `tail(y,
        Later)`: y's last plate replaced by Later, which is no longer. A data series (its
        axes the file's) gets the plate after its rows."""
        types: list[Plated | None] = []
        plate: ObjectType | None = None
        for param, arg in zip(fn.params, node.args, strict=True):
            if param in fn.objects:
                plate = self._function_plate(fn, param, arg)
                types.append(Plated(()) if plate is not None else None)
            else:
                types.append(self.arith(arg))
        if plate is None or not self._series(fn, node, types):
            return None
        series = types[0]
        assert series is not None
        plates = series.plates
        if fn.object_plate == "replaces" and plates:
            last = plates[-1]
            if last.size >= 0 and plate.size > last.size:
                self.ctx.report(
                    rules.ARITHMETIC_DIMENSIONS,
                    f"{fn.name} takes the last {plate.size} entries ({plate.name}) of "
                    f"{self.ctx.source(node.args[0].span)}, which has {last.size} ({last.name})",
                    node.span,
                )
                return None
            plates = plates[:-1]
        return Plated((*plates, plate), series.element, series.data_plates)

    def _function_plate(self, fn: Function, param: str, arg: ast.Arith) -> ObjectType | None:
        """The declared finite object an object argument names, or None (reported)."""
        name = arg.name.text if isinstance(arg, ast.Var) else None
        obj = self.ctx.objects.get(name) if name is not None else None
        if obj is None or not obj.discrete or obj.size < 0:
            self.ctx.report(
                rules.ARITHMETIC_DIMENSIONS,
                f"{fn.name}'s {param} names a declared finite object (`object {param} : FinSet "
                f"n`), not {self.ctx.source(arg.span)}",
                arg.span,
            )
            return None
        assert isinstance(arg, ast.Var)
        self.ctx.ref(arg.span, SymbolKey(obj.name))
        return obj

    def size_of(self, name: str) -> int | None:
        """The size of a declared finite object, which `lower` writes for an object
        argument of a function."""
        obj = self.ctx.objects.get(name)
        return obj.size if obj is not None and obj.discrete and obj.size >= 0 else None

    def _series(self, fn: Function, node: ast.Apply, types: list[Plated | None]) -> bool:
        """A series function reads along its series' last axis: the series has one, each
        parameter of `fn.numbers` is one number (a coefficient of every step), each of
        `fn.whole` a whole number of steps written as such (`lag(y, 1)`). A data name's
        shape is its file's, so it is not refused here."""
        ok = True
        for param, arg, t in zip(fn.params, node.args, types, strict=True):
            written = self.ctx.source(arg.span)
            if param in fn.objects:
                continue  # a plate (`_object_series`)
            if param in fn.whole:
                if not (isinstance(arg, ast.Number) and arg.value == int(arg.value) >= 1):
                    message = f"{fn.name}'s {param} is a whole number of steps, 1 or more"
                    self.ctx.report(
                        rules.ARITHMETIC_DIMENSIONS, f"{message}: not {written}", arg.span
                    )
                    ok = False
            elif t is None:
                ok = False
            elif param in fn.numbers and (t.plates or t.element.event):  # data: its file says
                self.ctx.report(
                    rules.ARITHMETIC_DIMENSIONS,
                    f"{fn.name}'s {param} is one number for every step, but {written} is {t.label}",
                    arg.span,
                )
                ok = False
            elif param not in fn.numbers and not (t.plates or t.data_plates or t.element.event):
                self.ctx.report(
                    rules.ARITHMETIC_DIMENSIONS,
                    f"{fn.name} reads a series along its last axis (a value over a plate of "
                    f"time steps), but {written} is one number",
                    arg.span,
                )
                ok = False
        return ok

    def plates_of(self, name: str) -> tuple[str, ...]:
        """The plates of a local the checker typed (none for data and parameters), or of a
        fold's accumulator (`terms.fold_accumulator`)."""
        if name in self.accumulators:
            return self.accumulators[name]
        local = self.pc.locals.get(name)
        t: object = local.type if local is not None else None  # a model's locals hold Plated
        return tuple(p.name for p in t.plates) if isinstance(t, Plated) else ()

    def is_plate(self, name: str) -> bool:
        """Whether an index names a plate (`sigma[School]`: every entry), not a value."""
        return name in self.ctx.objects or name in self.plate_params


def _length(t: Plated) -> int:
    """How many entries a vector has: its one plate's size or its one event axis (-1 when
    the data fix it, or when it is not a vector)."""
    if t.data_plates:
        return -1
    axes = [p.size for p in t.plates] + list(t.element.event)
    return axes[0] if len(axes) == 1 else -1


def _drop_axis(t: Plated, axis_node: ast.Arith) -> Plated:
    """`x.sum(k)`: the value without its k-th axis. A value over the data's rows holds
    them as its first axis (a data file's first axis is its rows: `X * beta` of an
    `N x K` matrix and a `beta : Coef` is `N x K`), then its plates, then the event."""
    k = int(float(getattr(axis_node, "value", 0)))
    if t.data_plates:
        if k == 0:
            return Plated(t.plates, t.element)
        k -= 1
    if k < len(t.plates):
        return Plated(t.plates[:k] + t.plates[k + 1 :], t.element, t.data_plates)
    e = k - len(t.plates)
    event = t.element.event[:e] + t.element.event[e + 1 :]
    return Plated(t.plates, Element(t.element.kind, event, t.element.of), t.data_plates)


@dataclass
class _Options:
    over: tuple[ObjectType, ...] = ()
    iid_over: tuple[ObjectType, ...] = ()
    via: str | None = None
    reduction: str | None = None
    constraint: str | None = None  # a set `constraint=` names (`ordered`), checked for the step
    constraint_at: Span | None = None  # the option, where a family that cannot take it says so


def _annotation_is_event(family: Family, args: tuple[Argument, ...], axis: ObjectType) -> bool:
    """Whether `v : K <- F(args)` (a family with an event, no `over=`) names the axis of one
    draw, as quivers reads it: yes, unless the arguments fix a draw of another size.
    `pi : K <- Dirichlet(alpha)` is one K-simplex point whether `alpha` is a number, a
    list of |K| entries or read from the data (its extent is the one K gives it);
    `pc : Item <- Dirichlet(1.0, 2.0, 3.0)` is a three-simplex point per item."""
    shapes: dict[str, tuple[int, ...]] = {}
    for a in args:
        p = family.param(a.param)
        if a.type is None or a.type.data_plates:
            # untyped, or sized by the data: a vector's extent is then the one the
            # annotation gives it; a matrix read from the data (`InverseWishart(nu, m)`)
            # is sized by it, and the annotation is its plate
            return family.event_rank == 1
        if p is not None and len(a.type.element.event) < p.rank:
            return True  # a number for a vector parameter: spread to the draw's size
        shapes[a.param] = a.type.element.event
    try:
        natural = family.event_shape(shapes)
    except ValueError:
        return True
    return any(n < 0 for n in natural) or natural == (axis.size,) * len(natural)


def _broadcast(a: Plated | None, b: Plated | None) -> Plated | None:
    """Arithmetic of two model values: their plates united, numbers broadcast."""
    if a is None or b is None:
        return None
    plates = (*a.plates, *(p for p in b.plates if p not in a.plates))
    event = a.element.event if len(a.element.event) >= len(b.element.event) else b.element.event
    return Plated(plates, Element("real", event), a.data_plates or b.data_plates)
