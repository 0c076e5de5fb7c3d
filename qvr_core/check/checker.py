"""The checker: from a parsed module to one CheckedModule.

Passes: collect top-level names (duplicates), objects, morphisms, then
lets and programs on demand (so declarations may come in any order, and a
cycle is found where it closes), usage and exports, and finally the
symbol table built from everything recorded on the way.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Protocol, TypeVar, assert_never

from qvr_core import builtins
from qvr_core.check.algebras import check_compositions, is_composition
from qvr_core.check.change_base import check_transformation_let, is_transformation, names_of
from qvr_core.check.chart_grammar import is_parser_call
from qvr_core.check.chart_parsers import check_parser
from qvr_core.check.computations import check_computation, check_instance, is_computation
from qvr_core.check.context import COMBINATORS, Context, SymbolKey
from qvr_core.check.contractions import check_contraction, is_contraction
from qvr_core.check.declarations import check_morphism, check_objects
from qvr_core.check.deduction_calls import not_a_morphism
from qvr_core.check.deduction_system import DEDUCTION, Deduction
from qvr_core.check.deductions import check_deduction, is_deduction
from qvr_core.check.defines import Computation
from qvr_core.check.expressions import infer
from qvr_core.check.frames import Frame, Names
from qvr_core.check.grammar_rules import check_grammar, is_grammar
from qvr_core.check.model import Model
from qvr_core.check.module import (
    CheckedModule,
    LetInfo,
    ModuleAlgebra,
    MorphismInfo,
    ProgramInfo,
    Reference,
    Symbol,
    SymbolKind,
    SymbolTable,
    TransformationStep,
    TypedSpan,
)
from qvr_core.check.nesting import Uses, dependency_order, used_names
from qvr_core.check.passes import late_passes
from qvr_core.check.programs import ProgramChecker
from qvr_core.check.qiec_checks import QIEC_RECORDS, QiecRecord, Staged, check_declaration
from qvr_core.check.structural import check_structural, is_structural
from qvr_core.check.types import Arrow, Group, ValueType
from qvr_core.check.unchecked import check_other, declared_names, expr_reason, note, refer
from qvr_core.check.user_effects import check_effect, check_user_instance, is_effect, read_effect
from qvr_core.check.wiring import Contraction
from qvr_core.syntax import ast
from qvr_core.syntax.layout import without_comments
from qvr_core.text import rules
from qvr_core.text.diagnostics import Diagnostic, Fix, Related, TextEdit
from qvr_core.text.span import LineIndex, Span

#: A lookup that records no dependency, even in a `Names` (the whole-module passes use it).
_peek = dict.get


_R = TypeVar("_R")


class Reuse(Protocol):
    """What an earlier check leaves to this one (see incremental.py)."""

    @property
    def reusable(self) -> Mapping[int, Frame]:
        """The frames declarations keep, by id(decl): their checks are not run again."""

    def uses(self, decl: Uses) -> tuple[str, ...]:
        """The names a let or program uses (`nesting.dependency_order`)."""

    def collected(self) -> dict[str, ast.Decl] | None:
        """Every top-level name's declaration, when no name is declared twice and none
        is a combinator's (`_collect` would report nothing), or None to collect them."""


class NoReuse:
    reusable: Mapping[int, Frame] = MappingProxyType({})

    def uses(self, decl: Uses) -> tuple[str, ...]:
        return tuple(used_names(decl))

    def collected(self) -> dict[str, ast.Decl] | None:
        return None


class Env:
    """Top-level tables plus on-demand typing of lets and programs, each in its own frame."""

    def __init__(self, ctx: Context, reuse: Reuse | None = None) -> None:
        self.ctx = ctx
        self.reuse = reuse or NoReuse()
        self._reusable = self.reuse.reusable
        # names looked up are recorded only when frames may be reused later
        self.morphisms: dict[str, MorphismInfo] = Names(ctx.current) if reuse is not None else {}
        self.lets: dict[str, LetInfo | object] = {}
        self.programs: dict[str, ProgramInfo | object | None] = {}
        self.computations: dict[str, Computation | Staged | None] = {}  # typed `define`s, by name
        self.contractions: dict[str, Contraction | None] = {}  # checked `contraction`s
        self.deductions: dict[str, Deduction | None] = {}  # checked `deduction`s
        self.chain: list[str] = []
        self.stack: list[Frame] = []
        self.frames: dict[int, tuple[ast.Decl, Frame]] = {}  # by id(decl), in checking order
        self.declared_algebra: ModuleAlgebra | None = None  # set before lets are typed

    def in_order(self, decls: tuple[ast.Decl, ...]) -> list[tuple[ast.Decl, Frame]]:
        """The frames of `decls` in their order (checking order depends on reuse)."""
        return list(filter(None, map(self.frames.get, map(id, decls))))  # (in C: thousands)

    @property
    def locals(self) -> dict[SymbolKey, tuple[SymbolKind, Span, Span, ValueType | None]]:
        return self.ctx.frame.locals

    def in_frame(self, decl: ast.Decl, compute: Callable[..., _R], *args: object) -> _R:
        """`compute(*args)` recorded in a new frame for `decl`, or a reused frame's result."""
        frame = self._reusable.get(id(decl))
        if frame is None:
            frame = Frame()
            previous = self.ctx.enter(frame)
            self.stack.append(frame)
            try:
                frame.result = compute(*args)
            finally:
                self.stack.pop()
                self.ctx.enter(previous)
        self.frames[id(decl)] = (decl, frame)
        result: _R = frame.result  # a reused frame holds what `compute` gave for this decl
        return result

    # ------------------------------------------------------------ names

    def name_type(self, name: ast.Name) -> Arrow | Group | None:
        """The type of a top-level morphism, let or program used by name."""
        n = name.text
        ctx = self.ctx
        if n in self.morphisms:
            ctx.ref(name.span, SymbolKey(n))
            info = self.morphisms[n]
            t: Arrow | Group = Group(info.type, info.replicate) if info.replicate else info.type
            ctx.record_type(name.span, t)
            return t
        member = self._member(n)
        if member is not None:
            ctx.ref(name.span, SymbolKey(n))
            ctx.used.add(SymbolKey(member.name))
            ctx.record_type(name.span, member.type)
            return member.type
        decl = ctx.top.get(n)
        if isinstance(decl, ast.LetDecl):
            ctx.ref(name.span, SymbolKey(n))
            found = self._cycle_guarded(name, self.let_type)
            let = self.lets.get(n)
            if isinstance(let, LetInfo) and let.transformation is not None:
                ctx.report(
                    rules.WRONG_KIND,
                    f"'{n}' is a change-of-base transformation, not a morphism: apply it "
                    f"with `f.change_base({n})`",
                    name.span,
                )
                return None
            if isinstance(let, LetInfo) and let.grammar is not None:
                ctx.report(
                    rules.WRONG_KIND,
                    f"'{n}' is a chart parser (it scores sentences), not a morphism to "
                    "compose: call it from Python, or export it",
                    name.span,
                )
                return None
            return found
        if isinstance(decl, ast.ProgramDecl):
            ctx.ref(name.span, SymbolKey(n))
            return self._cycle_guarded(name, self.program_type)
        if isinstance(decl, ast.ObjectDecl):
            ctx.ref(name.span, SymbolKey(n))
            ctx.report(
                rules.WRONG_KIND,
                f"'{n}' is an object, not a morphism: to pass a value through use identity({n})",
                name.span,
            )
            return None
        if isinstance(decl, ast.OtherDecl) and decl.clause.kind == DEDUCTION:
            ctx.ref(name.span, SymbolKey(n))
            not_a_morphism(ctx, name)
            return None
        if isinstance(decl, ast.MorphismDecl | ast.OtherDecl):
            ctx.ref(name.span, SymbolKey(n))
            return None  # declared but broken or not checked: said at the declaration
        candidates = [
            *self.morphisms,
            *(m for info in self.morphisms.values() for m in info.members),
            *(k for k, d in ctx.top.items() if isinstance(d, ast.LetDecl | ast.ProgramDecl)),
        ]
        extra = "it is not a morphism, let or program declared in this file"
        ctx.undefined(name, "name", candidates, extra)
        return None

    def _member(self, n: str) -> MorphismInfo | None:
        base, _, idx = n.rpartition("_")
        info = self.morphisms.get(base)
        if info and info.replicate and idx.isdigit() and int(idx) < info.replicate:
            return info
        return None

    def cyclic(self, name: ast.Name) -> bool:
        """Whether `name` is being typed right now (a use inside its own definition, directly
        or through others): reported at `name`, and the frames on the way marked volatile."""
        n = name.text
        if n not in self.chain:
            return False
        for frame in self.stack:  # what they record depends on where the check started
            frame.volatile = True
        loop = " -> ".join((*self.chain[self.chain.index(n) :], n))
        self.ctx.report(
            rules.CYCLIC_DEFINITION, f"'{n}' is defined in terms of itself: {loop}", name.span
        )
        return True

    def _cycle_guarded(self, name: ast.Name, typer: Callable[[str], Arrow | None]) -> Arrow | None:
        n = name.text
        if self.cyclic(name):
            return None
        t = typer(n)
        if t is not None:
            self.ctx.record_type(name.span, t)
        return t

    def _checked(
        self,
        table: dict[str, _R],
        n: str,
        decl: ast.Decl,
        compute: Callable[..., _R],
        *args: object,
    ) -> _R:
        """`table[n]`, computed on first use as `compute(*args)` in `decl`'s frame, with
        `n` on the chain of what is being typed meanwhile (`cyclic`)."""
        if n not in table:
            self.chain.append(n)
            try:
                table[n] = self.in_frame(decl, compute, *args)
            finally:
                self.chain.pop()
        return table[n]

    def arrow_of(self, n: str) -> Arrow | None:
        info = self.morphisms.get(n)
        if info is not None:
            return None if info.replicate else info.type
        if isinstance(self.ctx.top.get(n), ast.LetDecl) and n not in self.chain:
            return self.let_type(n)
        return None

    def transformation(self, n: str) -> tuple[TransformationStep, ...] | None:
        decl = self.ctx.top.get(n)
        if not isinstance(decl, ast.LetDecl) or (n in self.chain and n not in self.lets):
            return None
        info = self._checked(self.lets, n, decl, self._type_let, n, decl)
        return info.transformation if isinstance(info, LetInfo) else None

    def let_type(self, n: str) -> Arrow | None:
        decl = self.ctx.top[n]
        assert isinstance(decl, ast.LetDecl)
        info = self._checked(self.lets, n, decl, self._type_let, n, decl)
        return info.type if isinstance(info, LetInfo) else None

    def _type_let(self, n: str, decl: ast.LetDecl) -> LetInfo:
        if not decl.where and is_parser_call(self.ctx.top, decl.expr):
            return check_parser(self.ctx, n, decl)
        if not decl.where and is_transformation(decl.expr, names_of(self)):
            steps = check_transformation_let(self, decl.expr)
            return LetInfo(n, decl, None, transformation=steps or ())
        if decl.where or expr_reason(decl.expr):
            refer(self.ctx, (decl.expr, decl.where))
            note(self.ctx, decl.name.span, f"{decl.keyword} {n}")
            return LetInfo(n, decl, None)
        t = infer(self, decl.expr)
        if isinstance(t, Group):
            self.ctx.report(
                rules.GROUP_AS_MORPHISM,
                f"let {n} names a replicate group: use fan({self.ctx.source(decl.expr.span)})",
                decl.expr.span,
            )
            t = None
        if t is not None:
            self.ctx.record_type(decl.name.span, t)
        return LetInfo(n, decl, t)

    def program_type(self, n: str) -> Arrow | None:
        decl = self.ctx.top[n]
        assert isinstance(decl, ast.ProgramDecl)
        info = self._checked(self.programs, n, decl, _check_program, self, decl)
        if not isinstance(info, ProgramInfo):
            return None
        return info.type or info.header

    def algebra(self) -> ModuleAlgebra | None:
        """The file's composition rule, checked before the lets and programs. A frame that
        reads it is never reused: the rule is no name the frame looks up."""
        for frame in self.stack:
            frame.volatile = True
        return self.declared_algebra

    def computation(self, n: str) -> Computation | None:
        """The typed `define` named `n` (checked on first use, in its own frame), or None
        when there is none, it calls itself, it has the names-only check, or it is one
        the checker runs at each call (`staged`)."""
        found = self._define(n)
        return found if isinstance(found, Computation) else None

    def staged(self, n: str) -> Staged | None:
        """The checked QIEC `define` named `n` that each call runs (`qiec_eval.py`)."""
        found = self._define(n)
        return found if isinstance(found, Staged) else None

    def _define(self, n: str) -> Computation | Staged | None:
        decl = self.ctx.top.get(n)  # a dependency of the frame asking, cached or not
        if not (isinstance(decl, ast.OtherDecl) and is_computation(decl)):
            return None
        if n not in self.computations and n in self.chain:  # it calls itself: not typed
            for frame in self.stack:
                frame.volatile = True
            return None
        return self._checked(self.computations, n, decl, check_computation, self, decl)

    def contraction(self, n: str) -> Contraction | None:
        """The checked `contraction` named `n` (checked on first use, in its own frame, so
        a let may call one declared below it), or None when there is none or it is wrong."""
        decl = self.ctx.top.get(n)  # a dependency of the frame asking, cached or not
        if not is_contraction(decl):
            return None
        return self._checked(self.contractions, n, decl, check_contraction, self.ctx, decl)

    def deduction(self, n: str) -> Deduction | None:
        """The checked `deduction` named `n` (checked on first use, in its own frame), or
        None when there is none or it keeps the names-only check."""
        decl = self.ctx.top.get(n)  # a dependency of the frame asking, cached or not
        if not (isinstance(decl, ast.OtherDecl) and is_deduction(decl)):
            return None
        return self._checked(self.deductions, n, decl, check_deduction, self.ctx, decl)

    def sequence_scans(self, expr: ast.Expr) -> list[ast.Call]:
        """The scans in an expression (following lets) that consume its input sequence."""
        found: list[ast.Call] = []
        self._scans(expr, found, set())
        return found

    def _scans(self, e: ast.Expr, found: list[ast.Call], seen: set[str]) -> bool:
        """Collect scans into `found`; True when this expression consumes the sequence.

        (A method, not a closure calling itself: that would be a reference
        cycle, and the language server leaves cycles to a rare collection.)
        """
        if isinstance(e, ast.Call):
            combinator = builtins.COMBINATORS.get(e.callee.text)
            if combinator is not None and combinator.folds_a_sequence:
                found.append(e)
                return True
            hits = [self._scans(a, found, seen) for a in e.args if isinstance(a, ast.Expr)]
            return any(hits)
        if isinstance(e, ast.Compose):
            # the sequence reaches a later part only if the earlier ones passed it on
            # (a loop along the left spine: a flat chain does not recurse per '>>')
            parts = []
            while isinstance(e, ast.Compose):
                parts.append(e.right)
                e = e.left
            parts.append(e)
            return any(self._scans(p, found, seen) for p in reversed(parts))
        if isinstance(e, ast.Tensor):
            parts = []
            while isinstance(e, ast.Tensor):
                parts.append(e.right)
                e = e.left
            parts.append(e)
            return any([self._scans(p, found, seen) for p in reversed(parts)])
        if isinstance(e, ast.NameRef):
            decl = self.ctx.top.get(e.name.text)
            if isinstance(decl, ast.LetDecl) and e.name.text not in seen:
                seen.add(e.name.text)
                return self._scans(decl.expr, found, seen)
        return False


def _check_other(ctx: Context, decl: ast.OtherDecl) -> Deduction | QiecRecord | None:
    """A deduction, a categorial declaration (`category`, `rule`, `schema`, `bundle`)
    and an instance of a prelude interface are checked whole; other kinds are names
    only. A checked deduction's record is the frame's result."""
    if is_deduction(decl):
        return check_deduction(ctx, decl)
    if is_grammar(decl):
        check_grammar(ctx, decl)
        return None
    if is_contraction(decl):  # a second of its name (the first: `Env.contraction`)
        check_contraction(ctx, decl)
        return None
    if is_structural(decl):  # signature, encoder, decoder, loss
        check_structural(ctx, decl)
        return None
    if is_effect(decl):  # a module's own QIEC interface
        found = read_effect(ctx, decl)
        if not isinstance(found, str):
            check_effect(ctx, decl, found)
            return None
        record = check_declaration(ctx, decl)  # static parameters, indexed results
        if record is False:
            refer(ctx, decl.clause, frozenset(id(n) for n in decl.names))
            note(ctx, decl.name.span, f"effect {decl.name.text} ({found})")
        return record if not isinstance(record, bool) else None
    if check_instance(ctx, decl) or check_user_instance(ctx, decl):
        return None
    record = check_declaration(ctx, decl)  # index, family, handler, an applied instance
    if record is False:
        check_other(ctx, decl)
    return record if not isinstance(record, bool) else None
    return None


def _check_program(env: Env, decl: ast.ProgramDecl) -> ProgramInfo | None:
    return ProgramChecker(env, decl).run()


def check_parsed(
    text: str,
    module: ast.Module,
    syntax: tuple[Diagnostic, ...] = (),
    strict: bool = False,
    memory_budget: int | None = None,
) -> CheckedModule:
    """Check a parsed module from scratch (`syntax`: the parser's diagnostics)."""
    lines = LineIndex(text)
    ctx = Context(text=text, module=module, strict=strict, lines=lines)
    ctx.memory_budget = memory_budget
    env = Env(ctx)
    run = run_passes(ctx, env, module.decls, syntax)
    facts = Facts.merge([run.globals, *(frame for _, frame in env.in_order(module.decls))])
    top = dict(ctx.top.items())
    return build_module(
        text,
        module,
        run,
        ctx,
        env.morphisms,
        env.lets,
        env.programs,
        top,
        facts,
        *checked_records(env, module.decls),
    )


@dataclass
class Run:
    """What one run of the passes produced besides the frames in `Env.frames`."""

    globals: Frame  # the frame of the passes over the whole module
    exports: tuple[str, ...]
    diagnostics: tuple[Diagnostic, ...]  # all of them, sorted
    algebra: ModuleAlgebra | None = None  # the file's `composition` rule, checked


def run_passes(
    ctx: Context, env: Env, decls: tuple[ast.Decl, ...], syntax: tuple[Diagnostic, ...] = ()
) -> Run:
    """Every pass, in order: names, objects, morphisms, lets and programs, exports, usage.

    Declarations may have been moved since their frames were recorded (`ctx.moved`);
    the passes over the whole module place what they report with `ctx.real`.
    """
    globals_ = ctx.frame
    top = ctx.top
    collected = env.reuse.collected()
    if collected is None:
        _collect(ctx, decls)
    else:
        dict.update(top, collected)
    check_objects(
        ctx, [d for d in decls if isinstance(d, ast.ObjectDecl) and _peek(top, d.name.text) is d]
    )
    early = len(globals_.diagnostics)
    declared: list[Uses] = []  # the lets and programs, each the first of its name
    typed: list[Uses] = []  # those of them that keep no frame
    reusable, frames = env.reuse.reusable, env.frames
    for d in decls:
        match d:
            case ast.MorphismDecl():
                if _peek(top, d.name.text) is d:
                    if (kept := reusable.get(id(d))) is not None:  # `in_frame`, inlined
                        frames[id(d)] = (d, kept)
                        info = kept.result
                    else:
                        info = env.in_frame(d, check_morphism, ctx, d)
                    if info is not None:
                        env.morphisms[d.name.text] = info
                        for more in d.more_names:  # `morphism f, g : ...`: one signature each
                            if _peek(top, more.text) is d:
                                env.morphisms[more.text] = dataclasses.replace(info, name=more.text)
            case ast.LetDecl() | ast.ProgramDecl():
                if _peek(top, d.name.text) is d:
                    declared.append(d)
                    if (kept := reusable.get(id(d))) is None:
                        typed.append(d)
                        continue
                    table = env.lets if type(d) is ast.LetDecl else env.programs
                    if d.name.text not in table:  # (`_checked` and `in_frame`, inlined)
                        frames[id(d)] = (d, kept)
                        table[d.name.text] = kept.result
            case ast.OtherDecl():
                if is_computation(d) and _peek(top, d.name.text) is d:
                    env.computation(d.name.text)
                elif is_composition(d):
                    pass  # checked with the others of the file, below
                elif is_contraction(d) and _peek(top, d.name.text) is d:
                    env.contraction(d.name.text)
                elif is_deduction(d) and _peek(top, d.name.text) is d:
                    env.deduction(d.name.text)
                else:
                    env.in_frame(d, _check_other, ctx, d)
            case ast.ObjectDecl() | ast.ExportDecl():
                pass  # objects are checked above, exports after the programs
            case _:
                assert_never(d)
    algebra = check_compositions(ctx, decls, env.morphisms)
    env.declared_algebra = algebra
    _type_lets_and_programs(env, declared, typed)
    ordered = env.in_order(decls)
    # most frames report nothing: only these are read for diagnostics
    reporting = [(decl, f) for decl, f in ordered if f.diagnostics]
    exports = _exports(ctx, env, decls)
    syntax_error = rules.SYNTAX_ERROR.code
    if not any(
        d.code == syntax_error
        for diagnostics in (syntax, globals_.diagnostics, *(f.diagnostics for _, f in reporting))
        for d in diagnostics
    ):
        used = {k.name for k in globals_.used if k.scope is None}
        used.update(*[f.used_top for _, f in ordered])
        _unused(ctx, exports, used)
    found = [
        *syntax,
        *globals_.diagnostics[:early],
        *(d for decl, f in reporting for d in ctx.placed(decl, f.diagnostics)),
        *globals_.diagnostics[early:],
    ]
    if not any(d.is_error for d in found):
        for late in late_passes():  # sizing (QVR601), which imports the checker
            found += late(ctx, env, exports, ctx.memory_budget)
    found.sort(key=lambda d: (d.span.start, d.code))
    return Run(globals_, exports, tuple(found), algebra)


def checked_records(
    env: Env, decls: tuple[ast.Decl, ...]
) -> tuple[dict[str, Deduction], dict[str, Contraction], dict[str, QiecRecord]]:
    """The deductions, the contractions and the QIEC declarations checked, by name, in
    one pass over the frames: each is its declaration's frame result (`_check_other`,
    `Env.contraction`, `Env.staged`)."""
    deductions: dict[str, Deduction] = {}
    contractions: dict[str, Contraction] = {}
    qiec: dict[str, QiecRecord] = {}
    for _, frame in env.in_order(decls):
        found = frame.result
        if isinstance(found, Deduction):
            deductions[found.name] = found
        elif isinstance(found, Contraction):
            contractions[found.name] = found
        elif isinstance(found, QIEC_RECORDS):
            qiec[found.name] = found
    return deductions, contractions, qiec


def _type_lets_and_programs(env: Env, declared: list[Uses], typed: list[Uses]) -> None:
    """Type the lets and programs of `typed` (of `declared`, those that keep no frame: the
    others' results are in the tables already), what a declaration uses first, so that
    typing never follows a chain of uses (nesting.py).

    The order matters only among those typed (typing one finds the kept ones'
    results in the tables, whatever the order): when at most one is typed, the
    walk that orders them is skipped.
    """
    if len(typed) > 1:
        reusable = env.reuse.reusable
        order = dependency_order(declared, env.ctx.top, env.reuse.uses)
        typed = [d for d in order if id(d) not in reusable]
    for d in typed:
        if type(d) is ast.LetDecl:
            env.let_type(d.name.text)
        else:
            env.program_type(d.name.text)


@dataclass
class Facts:
    """The records of several frames together: what the module's tables are built from."""

    references: list[tuple[Span, SymbolKey, bool]]
    typed: dict[Span, tuple[object, str, str]]
    expr_types: dict[ast.Expr, Arrow | Group]
    reversed_scans: set[ast.Call]
    reversed_branches: dict[ast.Call, frozenset[int]]
    locals: dict[SymbolKey, tuple[SymbolKind, Span, Span, ValueType | None]]

    @classmethod
    def merge(cls, frames: list[Frame]) -> Facts:
        facts = cls([], {}, {}, set(), {}, {})
        for f in frames:
            facts.references += f.references
            facts.typed.update(f.typed)
            facts.expr_types.update(f.expr_types)
            facts.reversed_scans |= f.reversed_scans
            facts.reversed_branches.update(f.reversed_branches)
            facts.locals.update(f.locals)
        return facts


def build_module(
    text: str,
    module: ast.Module,
    run: Run,
    ctx: Context,
    morphisms: Mapping[str, MorphismInfo],
    lets: Mapping[str, object],
    programs: Mapping[str, object],
    top: dict[str, ast.Decl],
    facts: Facts,
    deductions: Mapping[str, Deduction],
    contractions: Mapping[str, Contraction],
    qiec: Mapping[str, QiecRecord],
) -> CheckedModule:
    """The checked module, from tables whose positions are all those of `text`."""
    morphisms = dict(morphisms.items())
    return CheckedModule(
        source=text,
        ast=module,
        objects=dict(ctx.objects),
        aliases=dict(ctx.aliases),
        morphisms=morphisms,
        # in the order of the declarations (lets and programs are typed on demand)
        lets={k: v for k in top if isinstance(v := lets.get(k), LetInfo)},
        programs={k: v for k in top if isinstance(v := programs.get(k), ProgramInfo)},
        models={k: v for k in top if isinstance(v := programs.get(k), Model)},
        deductions=deductions,
        contractions=contractions,
        qiec=qiec,
        exports=run.exports,
        expr_types=facts.expr_types,
        reversed_scans=frozenset(facts.reversed_scans),
        reversed_branches=facts.reversed_branches,
        symbols=_symbols(text, top, ctx, morphisms, lets, programs, facts),
        typed_spans=tuple(
            TypedSpan(span, t, label, note)  # type: ignore[arg-type]  # recorded from typed values
            for span, (t, label, note) in sorted(facts.typed.items(), key=lambda kv: kv[0].start)
        ),
        diagnostics=run.diagnostics,
        strict=ctx.strict,
        lines=ctx.lines,
        algebra=run.algebra,
    )


# ------------------------------------------------------------------ passes


def _collect(ctx: Context, decls: tuple[ast.Decl, ...]) -> None:
    """Every top-level name, once; later duplicates are reported and skipped."""
    for d in decls:
        declared = declared_names(d)
        if not declared:
            continue
        names = [(n.text, n) for n in declared]
        if isinstance(d, ast.MorphismDecl):
            names += [(m, d.name) for m in replicate_members(d)]
        for n, at in names:
            first = _peek(ctx.top, n)
            if first is not None:
                first_name = next((m for m in declared_names(first) if m.text == n), None)
                where = ctx.real(first, (first_name or first.name).span)
                ctx.report(
                    rules.DUPLICATE_DECLARATION,
                    f"'{n}' is already declared on line {where.start_line + 1}",
                    ctx.real(d, at.span),
                    related=(Related(where, f"first declaration of '{n}'"),),
                )
                if at is d.name:
                    break
                continue
            ctx.top[n] = d
        if d.name.text in COMBINATORS:
            ctx.report(
                rules.DUPLICATE_DECLARATION,
                f"'{d.name.text}' is a combinator; choose another name",
                ctx.real(d, d.name.span),
            )


def replicate_members(d: ast.MorphismDecl) -> list[str]:
    for o in d.options:
        v = o.value
        if o.key.text != "replicate" or not isinstance(v, ast.Literal) or v.kind != "int":
            continue
        if 0 < int(v.value) <= 4096:
            return [f"{d.name.text}_{i}" for i in range(int(v.value))]
    return []


def _exports(ctx: Context, env: Env, all_decls: tuple[ast.Decl, ...]) -> tuple[str, ...]:
    exports: list[str] = []
    seen: set[str] = set()
    decls = [d for d in all_decls if isinstance(d, ast.ExportDecl)]
    for d in decls:
        n = d.name.text
        target = _peek(ctx.top, n)
        name_span = ctx.real(d, d.name.span)
        if d.expr is not None:
            refer(ctx, d.expr)
            note(ctx, name_span, "the export of an expression")
            continue
        if isinstance(target, ast.OtherDecl):
            ctx.ref(name_span, SymbolKey(n))
            exports.append(n)
            continue
        if isinstance(target, ast.ProgramDecl | ast.LetDecl):
            ctx.ref(name_span, SymbolKey(n))
            if n in seen:
                ctx.report(
                    rules.DUPLICATE_EXPORT, f"'{n}' is already exported", ctx.real(d, d.span)
                )
            else:
                exports.append(n)
                seen.add(n)
        elif target is not None:
            ctx.ref(name_span, SymbolKey(n))
            kind = type(target).__name__.removesuffix("Decl").lower()
            ctx.report(
                rules.EXPORT_NOT_RUNNABLE,
                f"export {n}: only programs and lets can be exported, and {n} is a {kind}",
                name_span,
            )
        else:
            candidates = [
                k for k, v in ctx.top.items() if isinstance(v, ast.ProgramDecl | ast.LetDecl)
            ]
            ctx.did_you_mean(
                rules.UNDEFINED_EXPORT,
                f"export of an undefined name '{n}'",
                name_span,
                n,
                candidates,
            )
    if not decls:
        programs = [d for d in all_decls if isinstance(d, ast.ProgramDecl)]
        if programs:
            last = programs[-1]
            end = len(ctx.text)
            sep = "" if ctx.text.endswith("\n") or not ctx.text else "\n"
            ctx.report(
                rules.NO_EXPORT,
                f"no export: add `export {last.name.text}` so that load() knows which program "
                "to return",
                ctx.real(last, last.name.span),
                fixes=(
                    Fix(
                        f"Add `export {last.name.text}`",
                        (TextEdit(ctx.lines.span(end, end), f"{sep}\nexport {last.name.text}\n"),),
                        True,
                    ),
                ),
            )
    return tuple(exports)


def _unused(ctx: Context, exports: tuple[str, ...], used: set[str]) -> None:
    """QVR103 for declarations nothing uses (not called when something did not parse:
    a declaration that did not parse may be the user, so do not guess).

    Set differences find the few names neither used nor exported; only their
    declarations are looked at (in the order of `top`, which is theirs).
    """
    exported = set(exports)
    names = dict.keys(ctx.top)  # (read as a plain dict: the globals' frame notes nothing)
    idle = names - used - exported
    if not idle:
        return
    for n in [n for n in names if n in idle]:
        d = dict.__getitem__(ctx.top, n)
        if isinstance(d, ast.ExportDecl | ast.OtherDecl) or d.name.text != n:
            continue  # a second name or a copy: its declaration is seen under its first name
        if any(m.text in exported or m.text in used for m in declared_names(d)):
            continue  # (`morphism f, g : ...` is used when either is)
        if isinstance(d, ast.ProgramDecl) and not exported:
            continue  # entry points; QVR501 already asks for an export
        kind = type(d).__name__.removesuffix("Decl").lower()
        ctx.report(
            rules.UNUSED_DECLARATION,
            f"{kind} {n} is declared but never used",
            ctx.real(d, d.name.span),
        )


def _symbols(
    text: str,
    top: dict[str, ast.Decl],
    ctx: Context,
    morphisms: Mapping[str, MorphismInfo],
    lets: Mapping[str, object],
    programs: Mapping[str, object],
    facts: Facts,
) -> SymbolTable:
    symbols: dict[SymbolKey, Symbol] = {}
    for n, d in top.items():
        key = SymbolKey(n)
        symbols[key] = _top_symbol(text, ctx, morphisms, lets, programs, n, d)
    for key, (kind, span, decl_span, t) in facts.locals.items():
        label = t.label if t is not None else "?"
        symbols[key] = Symbol(
            name=key.name,
            kind=kind,
            span=span,
            decl_span=decl_span,
            scope=key.scope,
            type=t,
            detail=f"{kind.value} {key.name} : {label}",
        )
    refs: list[Reference] = []
    seen: set[tuple[int, int]] = set()
    for span, key, definition in facts.references:
        sym = symbols.get(key)
        if sym is None or (span.start, span.end) in seen:
            continue
        seen.add((span.start, span.end))
        refs.append(Reference(span, sym, definition))
    for key, sym in symbols.items():
        if (sym.span.start, sym.span.end) not in seen and sym.span.start >= 0:
            group = top[key.name].name
            if key.scope is None and key.name != group.text and sym.span == group.span:
                continue  # replicate members share their group's name span
            seen.add((sym.span.start, sym.span.end))
            refs.append(Reference(sym.span, sym, True))
    return SymbolTable(tuple(symbols.values()), tuple(refs))


def _top_symbol(
    text: str,
    ctx: Context,
    morphisms: Mapping[str, MorphismInfo],
    lets: Mapping[str, object],
    programs: Mapping[str, object],
    n: str,
    d: ast.Decl,
) -> Symbol:
    doc = getattr(d, "doc", None)
    span = next((m.span for m in declared_names(d) if m.text == n), d.name.span)
    if isinstance(d, ast.ObjectDecl):
        t = ctx.objects.get(n) or ctx.aliases.get(n)
        return Symbol(n, SymbolKind.OBJECT, span, d.span, None, t, doc, _first_line(text, d.span))
    if isinstance(d, ast.MorphismDecl):
        info = morphisms.get(d.name.text)
        t2: object = None
        if info is not None:
            # the bare name of a replicated morphism is its group; a copy is one morphism
            is_group = n == d.name.text and info.replicate
            t2 = Group(info.type, info.replicate) if is_group else info.type  # type: ignore[arg-type]  # replicate: an int
        detail = _first_line(text, d.span)
        if n != d.name.text:
            detail = f"{n}: copy of {detail}"
        return Symbol(n, SymbolKind.MORPHISM, span, d.span, None, t2, doc, detail)  # type: ignore[arg-type]  # t2: a type
    if isinstance(d, ast.LetDecl):
        info_l = lets.get(n)
        t3 = info_l.type if isinstance(info_l, LetInfo) else None
        detail = f"let {n} : {t3.label}" if t3 is not None else f"let {n}"
        return Symbol(n, SymbolKind.LET, span, d.span, None, t3, doc, detail)
    if isinstance(d, ast.OtherDecl):
        span = next((m.span for m in d.names if m.text == n), span)
        return Symbol(
            n, SymbolKind.DECLARATION, span, d.span, None, None, doc, _first_line(text, d.span)
        )
    assert isinstance(d, ast.ProgramDecl)
    info_p = programs.get(n)
    t4 = None
    if isinstance(info_p, ProgramInfo):
        t4 = info_p.type or info_p.header
    detail = f"program {n} : {t4.label}" if t4 is not None else f"program {n}"
    if isinstance(info_p, Model):  # a Bayesian model: its header as written
        detail = _first_line(text, d.header_span).removesuffix(":").strip()
    return Symbol(n, SymbolKind.PROGRAM, span, d.span, None, t4, doc, detail)


def _first_line(text: str, span: Span) -> str:
    """The first line under `span`, without its comment (the declaration goes on below)."""
    return without_comments(text[span.start : span.end].split("\n", 1)[0]).strip()
