"""Programs: their inputs, steps, local values, sites and returned type.

A program's input is a sequence when some step feeds it to a morphism that
consumes a sequence (the header `Token -> Token` is then satisfied by a
body over `[Token]`); this is decided before the steps are typed, so every
step sees the same input type.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, assert_never

from qvr_core.check.context import BINARY_FUNCS, COMBINATORS, UNARY_FUNCS, SymbolKey
from qvr_core.check.declarations import resolve_type
from qvr_core.check.expressions import arrow, product
from qvr_core.check.family_steps import FamilyDraw, family_draw
from qvr_core.check.matching import (
    Sides,
    dimension_facts,
    dims_paren,
    match,
    related_objects,
    reordered,
)
from qvr_core.check.model_steps import ModelChecker, model_reason
from qvr_core.check.module import ProgramInfo, SiteInfo, SymbolKind
from qvr_core.check.passes import Local
from qvr_core.check.program_options import check_program_options
from qvr_core.check.types import (
    Arrow,
    Group,
    Product,
    Scalar,
    Seq,
    ValueType,
    carries,
    dims_text,
)
from qvr_core.check.unchecked import is_family, program_reason, structural
from qvr_core.syntax import ast
from qvr_core.text import rules
from qvr_core.text.diagnostics import Related
from qvr_core.text.span import Span

if TYPE_CHECKING:
    from qvr_core.check.passes import Env

OP_VERBS = {"+": "add", "-": "subtract", "*": "multiply", "/": "divide"}


class ProgramChecker:
    def __init__(self, env: Env, decl: ast.ProgramDecl) -> None:
        self.env = env
        self.ctx = env.ctx
        self.decl = decl
        self.scope = decl.name.text
        self.locals: dict[str, Local] = {}
        self.sources: dict[ast.Step, Arrow | None] = {}
        self.data: dict[str, None] = {}  # data names, in order of first use
        # free names only morphisms read: per-example data of their domain (program_reason)
        self.fed_data: set[str] = set()

    # ------------------------------------------------------------- entry

    def run(self) -> ProgramInfo | None:
        decl = self.decl
        if decl.options:
            check_program_options(self.ctx, decl)
        reason = program_reason(self)
        if reason is not None:
            why = model_reason(self)
            if why is None:
                return ModelChecker(self).run()  # type: ignore[return-value]  # env.programs holds it; build_module sorts Models out
            if program_reason(self, mixed=True) is not None:
                structural(self, reason if why == "its step source" else why)
                return None
        dom = resolve_type(self.ctx, decl.dom)
        cod = resolve_type(self.ctx, decl.cod)
        if dom is None or cod is None:
            self._steps_without_types()
            return None
        header = Arrow(dom, cod)
        self._type_sources()
        lifted = self._input_is_sequence()
        params = self._bind_inputs(dom, lifted)
        sites: list[SiteInfo] = []
        returns: tuple[str, ...] | None = None
        returned: ValueType | None = None
        for step in decl.steps:
            if returns is not None:
                self.ctx.report(
                    rules.MISPLACED_RETURN,
                    "this step comes after the program's return",
                    _first_line(step),
                )
            match step:
                case ast.SampleStep() | ast.ObserveStep():
                    site = self._site(step, dom, lifted)
                    if site is not None:
                        sites.append(site)
                case ast.LetStep():
                    value = self.arith(step.value)
                    self.define(step.target, SymbolKind.LOCAL, step.span, value)
                case ast.DestructureStep():
                    self._destructure(step)
                case ast.ReturnStep():
                    if returns is not None:
                        self.ctx.report(rules.MISPLACED_RETURN, "a program returns once", step.span)
                        continue
                    returns = tuple(n.text for n in step.values)
                    returned = self._return(step, cod)
                case ast.MarginalizeStep() | ast.CallStep() | ast.ScoreStep():
                    pass  # not reached: program_reason leaves these to the names-only check
                case _:
                    assert_never(step)
        if returns is None:
            end = self.decl.header_span
            self.ctx.report(
                rules.MISPLACED_RETURN,
                f"program {self.scope} has no return: end it with `return NAME`",
                decl.name.span,
                related=(Related(end, "program header"),),
            )
        self.unused_locals()
        in_type: ValueType = Seq(dom) if lifted else dom
        out_type = returned if returned is not None else None
        inferred = Arrow(in_type, out_type) if out_type is not None else None
        self.ctx.record_type(decl.name.span, inferred or header)
        return ProgramInfo(
            name=self.scope,
            decl=decl,
            header=header,
            type=inferred,
            params=params,
            sites=tuple(sites),
            values={n: loc.type for n, loc in self.locals.items() if loc.type is not None},
            returns=returns or (),
            data=tuple(self.data),
        )

    def _steps_without_types(self) -> None:
        """The header is broken: still resolve the body's names for navigation."""
        if self.decl.params:
            for p in self.decl.params:
                self.define(p, SymbolKind.PARAM, p.span, None, is_input=True)
        for step in self.decl.steps:
            if isinstance(step, ast.SampleStep | ast.ObserveStep):
                if not _is_family(self, step):
                    self._source_arrow(step.source)
                elif isinstance(step.source, ast.Call):
                    for a in step.source.args:
                        if isinstance(a, ast.NameRef):
                            self.lookup(a.name)
                for t in (step.target, *step.more_targets):
                    self.define(t, _site_kind(step), step.span, None)
            elif isinstance(step, ast.LetStep):
                self.define(step.target, SymbolKind.LOCAL, step.span, self.arith(step.value))
            elif isinstance(step, ast.DestructureStep):
                self.arith(step.value)
                for t in step.targets:
                    self.define(t, SymbolKind.LOCAL, step.span, None)

    # ------------------------------------------------------------ inputs

    def _type_sources(self) -> None:
        for step in self.decl.steps:
            if isinstance(step, ast.SampleStep | ast.ObserveStep) and not _is_family(self, step):
                self.sources[step] = self._source_arrow(step.source)

    def _source_arrow(self, source: ast.Expr) -> Arrow | None:
        if _is_application(source):
            assert isinstance(source, ast.Call)
            t = self.env.name_type(source.callee)
            if isinstance(t, Group):
                self.ctx.report(
                    rules.GROUP_AS_MORPHISM,
                    f"{source.callee.text} is a replicate={t.count} group: apply one copy "
                    f"({source.callee.text}_0) or fan({source.callee.text})",
                    source.callee.span,
                )
                return None
            if t is not None:
                self.ctx.record_type(source.callee.span, t)
            for kw in source.kwargs:
                self.ctx.report(
                    rules.UNKNOWN_OPTION,
                    f"{source.callee.text} takes no keyword arguments",
                    kw.span,
                )
            return t
        return arrow(self.env, source, "a program step")

    def _input_is_sequence(self) -> bool:
        params = {p.text for p in self.decl.params or ()}
        for step, t in self.sources.items():
            if t is None or not isinstance(t.dom, Seq):
                continue
            source = step.source  # type: ignore[union-attr]  # sources: sample/observe steps
            if not _is_application(source):
                return True
            assert isinstance(source, ast.Call)
            if any(isinstance(a, ast.NameRef) and a.name.text in params for a in source.args):
                return True
        return False

    def _bind_inputs(self, dom: Product, lifted: bool) -> tuple[tuple[str, ValueType], ...]:
        decl = self.decl
        if decl.params is None:
            return ()
        # program_reason sent every other domain to the names-only check
        assert isinstance(decl.dom, ast.TypeRef)
        written = decl.dom.factors
        if len(decl.params) != len(written):
            first, last = decl.params[0].span if decl.params else decl.name.span, None
            if decl.params:
                last = decl.params[-1].span
            span = self.ctx.lines.span(first.start, (last or first).end)
            self.ctx.report(
                rules.UNPACKING_COUNT,
                f"program {self.scope} names {len(decl.params)} parameter"
                f"{'s' if len(decl.params) != 1 else ''} but its domain {dom.label} has "
                f"{len(written)} factor{'s' if len(written) != 1 else ''}",
                span,
            )
        out: list[tuple[str, ValueType]] = []
        for i, p in enumerate(decl.params):
            t: ValueType | None = None
            if i < len(written):
                t = self._factor_type(written[i].text)
                if t is not None and lifted:
                    t = Seq(t)
            self.define(p, SymbolKind.PARAM, p.span, t, is_input=True)
            if t is not None:
                out.append((p.text, t))
        return tuple(out)

    def _factor_type(self, name: str) -> Product | None:
        if name in self.ctx.objects:
            return Product((self.ctx.objects[name],), (name,))
        if name in self.ctx.aliases:
            a = self.ctx.aliases[name]
            return Product(a.factors, (name,))
        return None

    # ------------------------------------------------------------- sites

    def _site(
        self, step: ast.SampleStep | ast.ObserveStep, dom: Product, lifted: bool
    ) -> SiteInfo | None:
        t = self.sources.get(step)
        source = step.source
        args: tuple[str, ...] | None = None
        value: ValueType | None = None
        drawn: FamilyDraw | None = None
        family: str | None = None
        if _is_family(self, step):
            assert isinstance(source, ast.Call)
            family = source.callee.text
            drawn = family_draw(self, source)
            args, t = drawn.args, drawn.arrow
            value = t.cod if t is not None else None
            morph: ast.Expr = ast.NameRef(source.callee, source.callee.span)
            consumer = source.callee.text
        elif _is_application(source):
            assert isinstance(source, ast.Call)
            args, arg_type, producer = self._arguments(source, t)
            consumer = source.callee.text
            morph = ast.NameRef(source.callee, source.callee.span)
        else:
            arg_type = self._program_input(dom, lifted)
            producer = "the program input"
            consumer = self.ctx.source(source.span)
            morph = source
        if drawn is None and t is not None and arg_type is not None:
            value = self._feed(t, arg_type, producer, consumer, source.span)
        if isinstance(step, ast.ObserveStep) and step.declared is not None:
            declared = resolve_type(self.ctx, step.declared)
            if (
                declared is not None
                and value is not None
                and not _plate_annotation(declared, value)
            ):
                value = self._declared(
                    value, declared, step.declared.span, step.target.text, consumer
                )
        targets = (step.target, *step.more_targets)
        parts = self._bind_site(step, targets, value)
        return SiteInfo(
            name=site_name(step),
            kind="observe" if isinstance(step, ast.ObserveStep) else "sample",
            step=step,
            source=morph,
            args=args,
            morphism_type=t,
            value_type=value,
            parts=tuple(n.text for n in targets) if parts else (),
            family=family,
            family_args=drawn.params if drawn is not None else (),
        )

    def _bind_site(
        self,
        step: ast.SampleStep | ast.ObserveStep,
        targets: tuple[ast.Name, ...],
        value: ValueType | None,
    ) -> bool:
        """Bind a site's names; a tuple site (`sample (a, b) <- f(x)`, quivers' spelling)
        splits its one value into the names, as the product's factors are written."""
        kind = _site_kind(step)
        if len(targets) == 1:
            self.define(step.target, kind, step.span, value)
            return False
        parts: list[ValueType | None] = [None] * len(targets)
        if value is not None:
            split = self._split(value, len(targets))
            if split is None:
                names = ", ".join(t.text for t in targets)
                self.ctx.report(
                    rules.UNPACKING_COUNT,
                    f"cannot split the value of {self.ctx.source(step.source.span)} : "
                    f"{value.label} ({_dims_or_number(value)}) into {len(targets)} values "
                    f"({names})",
                    step.source.span,
                )
            else:
                parts = list(split)
        for target, part in zip(targets, parts, strict=True):
            self.define(target, kind, step.span, part)
        return True

    def _data_argument(self, name: ast.Name, call: ast.Call, callee: Arrow | None, i: int) -> None:
        """A free name a morphism reads is data bound per example when the program runs
        (quivers' host data: `observe y : Resp <- net(x)` reads one `x` per row): its type
        is the morphism's domain, or the factor of it its position takes."""
        t: ValueType | None = None
        if callee is not None:
            n = len(call.args)
            parts = [callee.dom] if n == 1 else self._split(callee.dom, n)
            if parts is not None and i < len(parts):
                t = parts[i]
        self.data.setdefault(name.text)
        self.define(name, SymbolKind.DATA, name.span, t, is_input=True)

    def _program_input(self, dom: Product, lifted: bool) -> ValueType | None:
        if self.decl.params is not None:
            for p in self.decl.params:
                self.use(p.text)  # the whole input is consumed
        return Seq(dom) if lifted else dom

    def _arguments(
        self, call: ast.Call, callee: Arrow | None
    ) -> tuple[tuple[str, ...], ValueType | None, str]:
        names: list[str] = []
        types: list[ValueType] = []
        ok = True
        for i, a in enumerate(call.args):
            if not isinstance(a, ast.NameRef):
                span = a.span
                self.ctx.report(
                    rules.ARGUMENT_NOT_A_NAME,
                    f"arguments of {call.callee.text} must be named values, not "
                    f"{self.ctx.source(span)}: bind it first with let",
                    span,
                )
                ok = False
                continue
            names.append(a.name.text)
            if a.name.text in self.fed_data and a.name.text not in self.locals:
                self._data_argument(a.name, call, callee, i)
            t = self.lookup(a.name)
            if t is None:
                ok = False
            else:
                types.append(t)
                self.ctx.record_type(a.span, t)
        producer = names[0] if len(names) == 1 else f"({', '.join(names)})"
        if not ok or not types:
            if not call.args:
                self.ctx.report(
                    rules.ARGUMENT_COUNT,
                    f"{call.callee.text}() has no arguments: write {call.callee.text}(x), or "
                    f"`<- {call.callee.text}` to apply it to the program input",
                    call.span,
                )
            return tuple(names), None, producer
        if len(types) == 1:
            return tuple(names), types[0], producer
        if all(isinstance(t, Seq) for t in types):  # zipped position by position, as fan does
            elems = [t.elem for t in types]  # type: ignore[union-attr]  # Seqs, checked
            return tuple(names), Seq(product(*elems)), producer
        if any(isinstance(t, Seq | Scalar) for t in types):
            self.ctx.report(
                rules.SEQUENCE_MISMATCH,
                f"{call.callee.text} pairs its arguments into one value; a sequence pairs "
                "only with sequences, and numbers cannot be paired",
                call.span,
            )
            return tuple(names), None, producer
        return tuple(names), product(*types), producer  # type: ignore[arg-type]  # Products, checked above

    def _feed(
        self, t: Arrow, arg: ValueType, producer: str, consumer: str, span: Span
    ) -> ValueType | None:
        sides = Sides(producer, consumer, verb="cannot apply")
        if isinstance(arg, Scalar):
            self.ctx.report(
                rules.SEQUENCE_MISMATCH,
                f"{consumer} needs a value of type {t.dom.label}, not a number",
                span,
            )
            return None
        if isinstance(t.dom, Seq):
            if not isinstance(arg, Seq):
                self.ctx.report(
                    rules.SEQUENCE_MISMATCH,
                    f"cannot apply: {consumer} expects a sequence {t.dom.label} but "
                    f"{producer} is one value {arg.label} ({dims_text(arg)})",
                    span,
                )
                return None
            return t.cod if match(self.ctx, arg.elem, t.dom.elem, span, sides) else None
        if not isinstance(t.dom, Product):
            return None
        if isinstance(arg, Seq):
            if not match(self.ctx, arg.elem, t.dom, span, sides):
                return None
            if isinstance(t.cod, Seq):
                self.ctx.report(
                    rules.SEQUENCE_MISMATCH, f"{consumer} would make a sequence of sequences", span
                )
                return None
            return Seq(t.cod)  # type: ignore[arg-type]  # not a Seq, checked above
        return t.cod if match(self.ctx, arg, t.dom, span, sides) else None

    def _declared(
        self, value: ValueType, declared: Product, span: Span, name: str, consumer: str
    ) -> ValueType | None:
        elem = value.elem if isinstance(value, Seq) else value
        if not isinstance(elem, Product):
            return None
        if not self._same(
            elem, declared, span, f"observe {name} declares {declared.label}", consumer
        ):
            return None
        return Seq(declared) if isinstance(value, Seq) else declared

    def _same(self, got: Product, want: Product, span: Span, what: str, producer: str) -> bool:
        """QVR401 flavour of matching, for declared observe and return types."""
        if got.names == want.names or carries(got, want):
            return True
        if reordered(got, want):
            self.ctx.report(
                rules.FACTORS_OUT_OF_ORDER,
                f"{what} ({dims_paren(want)}) but {producer} gives {got.label} "
                f"({dims_paren(got)}): the same factors in another order, which would mix up "
                "their columns",
                span,
                related=related_objects(self.ctx, got, want),
            )
            return False
        if got.continuous and want.continuous and got.dim == want.dim:
            self.ctx.hint_or_error(
                rules.MATCHED_BY_DIMENSION,
                f"matched by dimension, not by name: {what} ({dims_paren(want)}) and "
                f"{producer} gives {got.label} ({dims_paren(got)})",
                span,
                data=dimension_facts(got, want),
            )
            return not self.ctx.strict
        self.ctx.report(
            rules.DECLARED_TYPE_MISMATCH,
            f"{what} ({dims_text(want)}) but {producer} gives {got.label} ({dims_text(got)})",
            span,
        )
        return False

    # ------------------------------------------------------------ values

    def lookup(self, name: ast.Name) -> ValueType | None:
        loc = self.locals.get(name.text)
        if loc is None:
            top = self.ctx.top.get(name.text)
            if top is not None:
                kind = type(top).__name__.removesuffix("Decl").lower()
                self.ctx.ref(name.span, SymbolKey(name.text))
                self.ctx.report(
                    rules.WRONG_KIND,
                    f"'{name.text}' is a {kind}, not a value: bind its result with "
                    f"`sample x <- {name.text}(...)` first",
                    name.span,
                )
                return None
            self.ctx.did_you_mean(
                rules.UNBOUND_VARIABLE,
                f"unbound variable '{name.text}' in program {self.scope}",
                name.span,
                name.text,
                list(self.locals),
            )
            return None
        self.ctx.ref(name.span, SymbolKey(name.text, self.scope))
        self.use(name.text)
        if loc.type is not None:
            self.ctx.record_type(name.span, loc.type)
        return loc.type

    def use(self, name: str) -> None:
        self.ctx.used.add(SymbolKey(name, self.scope))

    def define(
        self,
        name: ast.Name,
        kind: SymbolKind,
        step_span: Span,
        type_: ValueType | None,
        is_input: bool = False,
    ) -> None:
        prev = self.locals.get(name.text)
        if prev is not None:
            self.ctx.report(
                rules.REBOUND_VARIABLE,
                f"'{name.text}' is already bound in program {self.scope}: values are bound "
                "once; choose a new name",
                name.span,
                related=(Related(prev.name.span, f"'{name.text}' is first bound here"),),
            )
            self.ctx.ref(name.span, SymbolKey(name.text, self.scope))
            return
        self.locals[name.text] = Local(kind, name, step_span, type_, is_input)
        self.env.locals[SymbolKey(name.text, self.scope)] = (kind, name.span, step_span, type_)
        self.ctx.ref(name.span, SymbolKey(name.text, self.scope), definition=True)
        if type_ is not None:
            self.ctx.record_type(name.span, type_)

    def _destructure(self, step: ast.DestructureStep) -> None:
        names = ", ".join(t.text for t in step.targets)
        self.ctx.hint_or_error(
            rules.QVR_EXTENSION,
            f"`let ({names}) = ...` is a qvr extension: quivers' grammars do not accept "
            "destructuring (an error under --strict)",
            _keyword_to_paren(step),
        )
        t = self.arith(step.value)
        n = len(step.targets)
        parts: list[ValueType | None] = [None] * n
        if t is not None:
            split = self._split(t, n)
            if split is None:
                self.ctx.report(
                    rules.UNPACKING_COUNT,
                    f"cannot split {self.ctx.source(step.value.span)} : {t.label} "
                    f"({_dims_or_number(t)}) into {n} values",
                    step.value.span,
                )
            else:
                parts = list(split)
        for target, part in zip(step.targets, parts, strict=True):
            self.define(target, SymbolKind.LOCAL, step.span, part)

    def _split(self, t: ValueType, n: int) -> list[ValueType] | None:
        if isinstance(t, Seq):
            inner = self._split(t.elem, n)
            return None if inner is None else [Seq(p) for p in inner]  # type: ignore[arg-type]  # t.elem splits into Products
        if not isinstance(t, Product):
            return None
        if len(t.written) == n:
            out: list[ValueType] = []
            i = 0
            for name in t.written:
                alias = self.ctx.aliases.get(name)
                width = len(alias.factors) if alias is not None else 1
                out.append(Product(t.factors[i : i + width], (name,)))
                i += width
            if i == len(t.factors):
                return out
        if len(t.factors) == n:
            return [Product((f,), (f.name,)) for f in t.factors]
        if len(t.written) == 1 and t.written[0] in self.ctx.aliases:
            alias = self.ctx.aliases[t.written[0]]
            return self._split(alias, n)
        return None

    def _return(self, step: ast.ReturnStep, cod: Product) -> ValueType | None:
        looked = [self.lookup(n) for n in step.values]  # every name, so each counts as used
        if not looked or any(t is None for t in looked):
            return None
        types: list[ValueType] = looked  # type: ignore[assignment]  # no None, checked above
        written = self.ctx.source(step.span).removeprefix("return").strip()
        what = f"return {written}"
        if all(isinstance(t, Seq) for t in types):  # one sequence, or several zipped
            elem = product(*(t.elem for t in types))  # type: ignore[union-attr]  # Seqs, checked
            ok = self._same(
                elem, cod, step.span, f"the header of {self.scope} says {cod.label}", what
            )
            return Seq(cod) if ok else None
        if any(not isinstance(t, Product) for t in types):
            self.ctx.report(
                rules.SEQUENCE_MISMATCH,
                f"{what}, which mixes sequences or numbers; return single values",
                step.span,
            )
            return None
        got = product(*types)  # type: ignore[arg-type]  # Products, checked above
        ok = self._same(got, cod, step.span, f"the header of {self.scope} says {cod.label}", what)
        return cod if ok else None

    # -------------------------------------------------------- arithmetic

    def arith(self, node: ast.Arith) -> ValueType | None:
        t = self._arith(node)
        if t is not None:
            self.ctx.record_type(node.span, t)
        return t

    def _arith(self, node: ast.Arith) -> ValueType | None:
        match node:
            case ast.Number():
                return Scalar()
            case ast.Var():
                return self.lookup(node.name)
            case ast.Unary():
                return self.arith(node.operand)
            case ast.Binary():
                # a loop along the left spine: `a + b + c ...` does not recurse per operator
                spine = [node]
                while isinstance(spine[-1].left, ast.Binary):
                    spine.append(spine[-1].left)
                left = self.arith(spine[-1].left)
                for b in reversed(spine):
                    right = self.arith(b.right)
                    verb = OP_VERBS.get(b.op, b.op)
                    left = self._combine(verb, b.left, left, b.right, right, b)
                    if b is not node and left is not None:
                        self.ctx.record_type(b.span, left)
                return left
            case ast.Apply():
                return self._apply(node)
            case ast.Index():
                return self._position(node)
            case ast.Literal() | ast.MethodCall() | ast.ListExpr() | ast.Lambda() | ast.Factor():
                return None  # quivers' values: program_reason leaves them to the names-only check
            case _:
                assert_never(node)

    def _position(self, node: ast.Index) -> ValueType | None:
        """`h[0]`: the value at one position of a sequence; `h[picks]`: the values at the
        positions a data name holds (one row of positions per example), a sequence."""
        base = self.lookup(node.base.name)
        index = node.indices[0]
        if base is None:
            return None
        if not isinstance(base, Seq):
            self.ctx.report(
                rules.SEQUENCE_MISMATCH,
                f"{node.base.name.text} is one value {base.label}, not a sequence: only a "
                "sequence is indexed by position",
                node.base.span,
            )
            return None
        if isinstance(index, ast.Number):
            return base.elem
        assert isinstance(index, ast.Var)  # program_reason leaves other indices names-only
        name = index.name
        if name.text in self.locals or name.text in self.ctx.top:
            self.ctx.report(
                rules.WRONG_KIND,
                f"positions are picked by a whole number or by a data name, not by "
                f"'{name.text}', which the program binds: rename one of them",
                name.span,
            )
            return None
        self.data.setdefault(name.text)
        key = SymbolKey(name.text, self.scope)
        if key not in self.env.locals:
            self.env.locals[key] = (SymbolKind.DATA, name.span, node.span, None)
            self.ctx.ref(name.span, key, definition=True)
        else:
            self.ctx.ref(name.span, key)
        self.ctx.record_type(name.span, base, "data: positions to pick, one row per example")
        return base

    def _apply(self, node: ast.Apply) -> ValueType | None:
        name = node.func.text
        if name in UNARY_FUNCS:
            if len(node.args) != 1:
                self.ctx.report(
                    rules.ARGUMENT_COUNT, f"{name} takes one value: {name}(x)", node.span
                )
                return None
            t = self.arith(node.args[0])
            return self._continuous(node.args[0], t)
        if name in BINARY_FUNCS:
            if len(node.args) != 2:
                self.ctx.report(
                    rules.ARGUMENT_COUNT, f"{name} takes two values: {name}(a, b)", node.span
                )
                return None
            a, b = (self.arith(x) for x in node.args)
            return self._combine(f"take the {name} of", node.args[0], a, node.args[1], b, node)
        if name in self.ctx.top or name in COMBINATORS:
            if name in self.ctx.top:  # a use, though a wrong one: not also "unused"
                self.ctx.ref(node.func.span, SymbolKey(name))
            self.ctx.report(
                rules.MORPHISM_CALL_IN_LET,
                f"{name}(...) in a let: apply morphisms in a sample step "
                f"(`sample y <- {name}(...)`); let computes with arithmetic and the "
                f"elementwise builtins ({', '.join(UNARY_FUNCS[:4])}, ...)",
                node.span,
            )
            for arg in node.args:
                self.arith(arg)
            return None
        self.ctx.undefined(node.func, "function", UNARY_FUNCS + BINARY_FUNCS)
        for arg in node.args:
            self.arith(arg)
        return None

    def _continuous(self, node: ast.Arith, t: ValueType | None) -> ValueType | None:
        elem = t.elem if isinstance(t, Seq) else t
        if isinstance(elem, Product) and not elem.continuous:
            self.ctx.report(
                rules.DISCRETE_CONTINUOUS,
                f"arithmetic needs continuous values, but {self.ctx.source(node.span)} is "
                f"{elem.label} ({dims_text(elem)})",
                node.span,
            )
            return None
        return t

    def _combine(
        self,
        verb: str,
        lnode: ast.Arith,
        left: ValueType | None,
        rnode: ast.Arith,
        right: ValueType | None,
        node: ast.Arith,
    ) -> ValueType | None:
        left = self._continuous(lnode, left)
        right = self._continuous(rnode, right)
        if left is None or right is None:
            return None
        if isinstance(left, Scalar):
            return right
        if isinstance(right, Scalar):
            return left
        if isinstance(left, Seq) != isinstance(right, Seq):
            self.ctx.report(
                rules.SEQUENCE_MISMATCH,
                f"cannot {verb} {self._desc(lnode, left)} and {self._desc(rnode, right)}: one "
                "is a sequence and the other a single value",
                node.span,
            )
            return None
        le = left.elem if isinstance(left, Seq) else left
        re_ = right.elem if isinstance(right, Seq) else right
        if le.dim != re_.dim:
            self.ctx.report(
                rules.ARITHMETIC_DIMENSIONS,
                f"cannot {verb} {self._desc(lnode, left)} and {self._desc(rnode, right)}: "
                "arithmetic needs equal dimensions or a number",
                node.span,
                related=related_objects(self.ctx, le, re_),
            )
            return None
        return left

    def _desc(self, node: ast.Arith, t: ValueType) -> str:
        return f"{self.ctx.source(node.span)} ({t.label}, {dims_text(t)})"

    def unused_locals(self) -> None:
        for name, loc in self.locals.items():
            if name.startswith("_"):
                continue  # the usual way to say a value is deliberately unused
            if loc.kind is SymbolKind.LOCAL and SymbolKey(name, self.scope) not in self.ctx.used:
                self.ctx.report(
                    rules.UNUSED_DECLARATION,
                    f"'{name}' is bound but never used in program {self.scope}",
                    loc.name.span,
                )


def _plate_annotation(declared: Product, value: ValueType) -> bool:
    """`observe y : Resp <- head(h)` with Resp a finite set other than what `head` gives:
    quivers reads `: Resp` as the plate of the observations (one row per element of
    Resp), not as the observed value's type."""
    elem = value.elem if isinstance(value, Seq) else value
    return (
        len(declared.factors) == 1
        and declared.discrete
        and isinstance(elem, Product)
        and elem.names != declared.names
    )


def _is_family(pc: ProgramChecker, step: ast.SampleStep | ast.ObserveStep) -> bool:
    """A family step (`Normal(h, 0.5)`): program_reason admitted it (`seed_family`)."""
    source = step.source
    return isinstance(source, ast.Call) and is_family(pc.ctx, source.callee)


def _is_application(source: ast.Expr) -> bool:
    return isinstance(source, ast.Call) and source.callee.text not in COMBINATORS


def site_name(step: ast.SampleStep | ast.ObserveStep) -> str:
    """A site's name: its target, or `(a, b)` for a tuple site."""
    if not step.more_targets:
        return step.target.text
    return "(" + ", ".join(t.text for t in (step.target, *step.more_targets)) + ")"


def _dims_or_number(t: ValueType) -> str:
    return "a number" if isinstance(t, Scalar) else dims_text(t)


def _site_kind(step: ast.SampleStep | ast.ObserveStep) -> SymbolKind:
    return SymbolKind.OBSERVE if isinstance(step, ast.ObserveStep) else SymbolKind.SAMPLE


def _keyword_to_paren(step: ast.DestructureStep) -> Span:
    """From `let` to the closing parenthesis of the names."""
    last = step.targets[-1].span
    s = step.span
    return Span(s.start, last.end + 1, s.start_line, s.start_col, last.end_line, last.end_col + 1)


def _first_line(step: ast.Step) -> Span:
    return step.span
