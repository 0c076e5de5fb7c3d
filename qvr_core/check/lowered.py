"""What the morphism runtime compiles, lowered from a checked module: no syntax nodes.

`lower_module(checked)` turns the checker's facts about the lets and the
morphism programs (`lets`, `programs`, `expr_types`, `reversed_scans`,
`reversed_branches`) into plain values, so `qvr_core.runtime` compiles from
these and never reads the syntax tree:

- a morphism expression is a `Named` morphism, let or program, a `Composed`
  or `Tensored` pair, a `Combinator` call with its morphism arguments, its
  integer arguments (`stack(blk, 3)`) and the checker's facts about it, a
  `Transposed` relation (`f.dagger`), a `Curried` one (`f.curry_right`), a
  `Transformed` one (`f.change_base(phi)`), a `Contracted` call of a declared
  `contraction` with its checked record, a `Parsed` chart parser (a `parser(...)`
  let with its grammar), or an `Opaque` part that is no
  morphism expression; each carries its source text (`label`) and, when the
  checker recorded one, its type;
- a program is its steps in order: `Site` (`sample`/`observe`), `LetValue`
  and `Destructure` (their value a checked term, `qvr_core.check.terms`),
  `Return`.

It is computed on demand (the runtime calls it once per compiler), never while
checking, so an editor's re-checks do not pay for it. Everything here is
iterative: a long chain of `>>` does not recurse per operator.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from qvr_core.builtins import COMBINATORS
from qvr_core.builtins.combinators import learned_init
from qvr_core.builtins.transformations import TRANSFORMATIONS
from qvr_core.check.change_base import Refusal, axis_index, checked_names, resolve, transformed
from qvr_core.check.chart_grammar import ChartGrammar
from qvr_core.check.marginals import summed_out
from qvr_core.check.module import CheckedModule, LetInfo, ProgramInfo, SiteInfo
from qvr_core.check.nesting import Uses, inlined_depths
from qvr_core.check.terms import Term, lower
from qvr_core.check.types import Arrow, Group, ValueType
from qvr_core.check.wiring import Contraction
from qvr_core.syntax import ast
from qvr_core.syntax.ast import CURRY

# ------------------------------------------------------------ expressions


@dataclass(frozen=True)
class Named:
    """A declared morphism (or a replicated copy, `head_2`), a let or a program, by name."""

    name: str
    label: str


@dataclass(frozen=True)
class Composed:
    """`left >> right`; `type` is None where the checker recorded no arrow."""

    type: Arrow | None
    label: str
    left: Expr
    right: Expr


@dataclass(frozen=True)
class Tensored:
    """`left @ right`."""

    type: Arrow | None
    label: str
    left: Expr
    right: Expr


@dataclass(frozen=True)
class Combinator:
    """A combinator call (`scan`, `fan`, `stack`, `repeat`, `identity`).

    `parts` are its arguments that are morphism expressions, `counts` its integer
    arguments, each in order of writing."""

    name: str
    type: Arrow | None
    label: str
    parts: tuple[Expr, ...]
    counts: tuple[int, ...] = ()
    reverse: bool = False  # a scan that reads right to left
    reversed_branches: frozenset[int] = frozenset()  # fan branches fed the reversed input
    group: str | None = None  # fan's one argument, when it names a replicate group
    ordinal: int | None = None  # a `stack`: which of the file's stacks (numbers copies' keys)
    learned_init: bool = False  # a scan starting from a learned state (`init=learned`)


@dataclass(frozen=True)
class Transposed:
    """`part.dagger`: the relation `part` read from its codomain to its domain (its
    tensor transposed, under the file's composition rule)."""

    type: Arrow | None
    label: str
    part: Expr


@dataclass(frozen=True)
class Curried:
    """`part.curry_right` / `part.curry_left`: the relation `part` with the last (right)
    or first (left) factor of its domain moved into its codomain (check/curry.py)."""

    type: Arrow | None
    label: str
    part: Expr
    direction: str


@dataclass(frozen=True)
class ChangeStep:
    """One step of a change of base: the registered transformation's name, the tensor
    axis it acts along (`softmax(B)`), or the prior's morphism (`bayes_invert(pi)`)."""

    name: str
    axis: int | None = None
    prior: Named | None = None


@dataclass(frozen=True)
class Transformed:
    """`part.change_base(phi)`: the relation `part` with phi's steps applied to its
    tensor, valued in the last step's target rule (check/change_base.py)."""

    type: Arrow | None
    label: str
    part: Expr
    steps: tuple[ChangeStep, ...]


@dataclass(frozen=True)
class Marginalized:
    """`part.marginalize(A, ...)`: `part` with the codomain factors at `drop` summed out
    (check/marginals.py)."""

    type: Arrow | None
    label: str
    part: Expr
    drop: tuple[int, ...]


@dataclass(frozen=True)
class Contracted:
    """A call of a declared `contraction` (`bilinear_score(f, g, h)`): the relation whose
    entries are `parts`' entries combined under `contraction.rule` along its wiring."""

    type: Arrow | None
    label: str
    contraction: Contraction
    parts: tuple[Expr, ...]


@dataclass(frozen=True)
class Parsed:
    """A `parser(...)` let (check/chart_parsers.py): the CKY parser of `grammar`."""

    type: Arrow
    label: str
    grammar: ChartGrammar


@dataclass(frozen=True)
class Opaque:
    """A part that is no morphism expression the runtime compiles (a method call)."""

    label: str


@dataclass(frozen=True)
class FamilyDraw:
    """A family step's draw (`Normal(r, 0.5)`, check/family_steps.py): from the site's
    named values packed side by side (`type.dom`, the types of the values in `parts`) to
    one draw per coordinate. `given`: the parameters written as numbers; `fed`: the
    others, each with the position of its value among the site's `args`."""

    family: str
    type: Arrow
    label: str
    parts: tuple[ValueType, ...]
    given: tuple[tuple[str, float], ...]
    fed: tuple[tuple[str, int], ...]


Expr = (
    Named
    | Composed
    | Tensored
    | Combinator
    | Transposed
    | Curried
    | Transformed
    | Marginalized
    | Contracted
    | Parsed
    | Opaque
    | FamilyDraw
)


# --------------------------------------------------------------- programs


@dataclass(frozen=True)
class Site:
    """A `sample` or `observe` step: its morphism applied to the program input
    (`args` None) or to the named values packed side by side."""

    name: str
    kind: str  # "sample" | "observe"
    source: Expr
    args: tuple[str, ...] | None
    value_type: ValueType | None
    parts: tuple[str, ...] = ()  # a tuple site's names, its value split into them


@dataclass(frozen=True)
class LetValue:
    """`let target = value`; `value` is None when it holds what the checker does not type."""

    target: str
    value: Term | None
    line: int  # 1-based


@dataclass(frozen=True)
class Destructure:
    """`let (a, b) = value`: the value split into the targets' types."""

    targets: tuple[str, ...]
    value: Term | None
    line: int


@dataclass(frozen=True)
class Return:
    names: tuple[str, ...]


Step = Site | LetValue | Destructure | Return


@dataclass(frozen=True)
class Program:
    """A morphism program as it runs: the checker's types, and its steps up to its return."""

    name: str
    type: Arrow | None  # None when the body has errors
    params: tuple[tuple[str, ValueType], ...]  # named inputs; empty without PARAMS
    values: Mapping[str, ValueType]  # every local value's type (params, sites, lets)
    returns: tuple[str, ...]
    steps: tuple[Step, ...]
    sites: tuple[Site, ...]  # the `Site`s of `steps`, in order
    data: tuple[str, ...] = ()  # data names: positions to pick, given with the observations


@dataclass(frozen=True)
class Lowered:
    """The lets and morphism programs of a module, and how deeply each nests."""

    lets: Mapping[str, Expr]
    programs: Mapping[str, Program]
    # each let's and program's depth with what it uses put in place (see check/nesting.py)
    depths: Mapping[str, int]


def lower_module(checked: CheckedModule) -> Lowered:
    """The lets and programs of `checked` without syntax (linear in the file)."""
    lowering = _Lowering(checked)
    lets = {name: lowering.let(info) for name, info in checked.lets.items()}
    programs = {name: lowering.program(info) for name, info in checked.programs.items()}
    top = {d.name.text: d for d in checked.ast.decls if isinstance(d, Uses)}
    return Lowered(lets, programs, inlined_depths(list(top.values()), top))


class _Lowering:
    def __init__(self, checked: CheckedModule) -> None:
        self.checked = checked
        self.stacks = {c: j for j, c in enumerate(_stack_calls(checked.ast))}

    def label(self, node: ast.Arg) -> str:
        return self.checked.source[node.span.start : node.span.end]

    def arrow(self, node: ast.Expr) -> Arrow | None:
        t = self.checked.expr_types.get(node)
        return t if isinstance(t, Arrow) else None

    def let(self, info: LetInfo) -> Expr:
        if info.grammar is not None and info.type is not None:
            return Parsed(info.type, info.name, info.grammar)
        if info.transformation is not None:  # no morphism: applied where it is named
            return Opaque(f"{info.name} (a change-of-base transformation)")
        return self.expr(info.decl.expr)

    def expr(self, root: ast.Arg) -> Expr:
        """The lowered expression, children before parents on an explicit stack."""
        done: dict[int, Expr] = {}
        stack: list[tuple[ast.Arg, bool]] = [(root, False)]
        while stack:
            node, ready = stack.pop()
            kids = _children(node)
            if not ready and kids:
                stack.append((node, True))
                stack.extend((k, False) for k in kids if id(k) not in done)
                continue
            done[id(node)] = self.one(node, [done[id(k)] for k in kids])
        return done[id(root)]

    def one(self, node: ast.Arg, parts: list[Expr]) -> Expr:
        label = self.label(node)
        match node:
            case ast.NameRef(name=name):
                return Named(name.text, label)
            case ast.Compose():
                return Composed(self.arrow(node), label, parts[0], parts[1])
            case ast.Tensor():
                return Tensored(self.arrow(node), label, parts[0], parts[1])
            case ast.Call() if node.callee.text in self.checked.contractions:
                found = self.checked.contractions[node.callee.text]
                return Contracted(self.arrow(node), label, found, tuple(parts))
            case ast.Call():
                return self.call(node, label, parts)
            case ast.Method() if node.is_dagger:
                return Transposed(self.arrow(node), label, parts[0])
            case ast.Method() if node.is_marginalize:
                return self.marginalized(node, label, parts[0])
            case ast.Method() if node.is_change_base:
                return self.changed(node, label, parts[0])
            case ast.Method() if node.is_curry:
                return Curried(self.arrow(node), label, parts[0], CURRY[node.method.text])
            case _:
                return Opaque(label)

    def changed(self, node: ast.Method, label: str, part: Expr) -> Expr:
        """`part.change_base(phi)` with phi's steps as the checker resolved them, each
        with its tensor axis or its prior lowered (check/change_base.py)."""
        inner = self.arrow(node.receiver)
        steps = resolve((node.args or ())[0], checked_names(self.checked))
        if inner is None or isinstance(steps, Refusal):  # the checker reported it
            return Opaque(label)
        lowered: list[ChangeStep] = []
        t = inner
        for step in steps:
            takes = TRANSFORMATIONS[step.name].takes
            axis = axis_index(t, step.argument) if takes == "axis" else None
            prior = Named(step.argument, step.argument) if takes == "prior" else None
            lowered.append(ChangeStep(step.name, axis, prior))
            t = transformed(t, (step,))
        return Transformed(self.arrow(node), label, part, tuple(lowered))

    def marginalized(self, node: ast.Method, label: str, part: Expr) -> Expr:
        inner = self.arrow(node.receiver)
        names = [a.name.text for a in node.args or () if isinstance(a, ast.NameRef)]
        drop = summed_out(inner.cod, names) if inner is not None else "untyped"
        if isinstance(drop, str):  # the checker reported it: the module has an error
            return Opaque(label)
        return Marginalized(self.arrow(node), label, part, drop)

    def call(self, node: ast.Call, label: str, parts: list[Expr]) -> Expr:
        counts = tuple(
            int(a.value) for a in node.args if isinstance(a, ast.Literal) and a.kind == "int"
        )
        combinator = COMBINATORS.get(node.callee.text)
        if not counts and combinator is not None and combinator.default_count is not None:
            counts = (combinator.default_count,)  # `repeat(b)`: once, until the program says
        exprs = [a for a in node.args if isinstance(a, ast.Expr)]
        group: str | None = None
        one = exprs[0] if len(exprs) == 1 else None
        if isinstance(one, ast.NameRef) and isinstance(self.checked.expr_types.get(one), Group):
            group = one.name.text
        return Combinator(
            node.callee.text,
            self.arrow(node),
            label,
            tuple(parts),
            counts,
            reverse=node in self.checked.reversed_scans,
            reversed_branches=frozenset(self.checked.reversed_branches.get(node, frozenset())),
            group=group,
            ordinal=self.stacks.get(node),
            learned_init=any(
                kw.key.text == "init" and learned_init(kw.word) is True for kw in node.kwargs
            ),
        )

    def program(self, info: ProgramInfo) -> Program:
        sites = {id(s.step): s for s in info.sites}
        steps: list[Step] = []
        for step in info.decl.steps:
            line = step.span.start_line + 1
            match step:
                case ast.SampleStep() | ast.ObserveStep():
                    site = sites[id(step)]
                    source = self.source(site, step, info.values)
                    steps.append(
                        Site(site.name, site.kind, source, site.args, site.value_type, site.parts)
                    )
                case ast.LetStep():
                    steps.append(LetValue(step.target.text, _term(step.value), line))
                case ast.DestructureStep():
                    targets = tuple(t.text for t in step.targets)
                    steps.append(Destructure(targets, _term(step.value), line))
                case ast.ReturnStep():
                    steps.append(Return(tuple(v.text for v in step.values)))
                    break
                case _:  # model steps make a Model (check/model.py), never a ProgramInfo
                    pass
        found = tuple(s for s in steps if isinstance(s, Site))
        return Program(
            info.name,
            info.type,
            info.params,
            info.values,
            info.returns,
            tuple(steps),
            found,
            info.data,
        )

    def source(
        self,
        site: SiteInfo,
        step: ast.SampleStep | ast.ObserveStep,
        values: Mapping[str, ValueType],
    ) -> Expr:
        """A site's morphism; a family step's draw from the values it reads."""
        if site.family is None or site.morphism_type is None or site.args is None:
            return self.expr(site.source)
        parts = tuple(values[a] for a in site.args)
        given = tuple((k, v) for k, v in site.family_args if isinstance(v, float))
        fed = tuple((k, site.args.index(v)) for k, v in site.family_args if isinstance(v, str))
        label = self.label(step.source)
        return FamilyDraw(site.family, site.morphism_type, label, parts, given, fed)


def _term(node: ast.Arith) -> Term | None:
    return lower(node, lambda _: False)  # a morphism program has no plates


def _children(node: ast.Arg) -> tuple[ast.Arg, ...]:
    """The sub-expressions a lowered node is made of (a call's: its morphism arguments)."""
    match node:
        case ast.Compose() | ast.Tensor():
            return (node.left, node.right)
        case ast.Call():
            return tuple(a for a in node.args if isinstance(a, ast.Expr))
        case ast.Method() if node.typed:
            return (node.receiver,)
        case _:
            return ()


def _stack_calls(module: ast.Module) -> list[ast.Call]:
    """Every call in the file of a combinator whose copies have their own parameters
    (`stack`), in source order: numbers the copies' keys."""
    found = [n for n in _walk(module) if isinstance(n, ast.Call) and _fresh_copies(n)]
    return sorted(found, key=lambda c: c.span.start)


def _fresh_copies(call: ast.Call) -> bool:
    combinator = COMBINATORS.get(call.callee.text)
    return combinator is not None and combinator.cost.fresh_copies


def _walk(root: object) -> Iterator[object]:
    """Every syntax node under `root` (its own stack: no depth overflows Python's)."""
    stack = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, tuple):
            stack.extend(reversed(node))
        elif dataclasses.is_dataclass(node) and not isinstance(node, type):
            yield node
            stack.extend(getattr(node, f.name) for f in reversed(dataclasses.fields(node)))
