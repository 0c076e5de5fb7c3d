"""What a model program is made of, read once from the syntax tree and the checked tables.

A *model program* draws its sites from families called with arguments
(`qvr_core/runnable.py` decides): its sites (a called template's under `v$`),
which of them are observed, the plate sizes of the objects, and its *data
names*: every name a step uses that no step, parameter or declaration binds,
which the data supplies at fit time (quivers' host-data channel).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass, field

from qvr_core.builtins import FAMILIES, FUNCTIONS
from qvr_core.runtime.errors import QvrError
from qvr_core.runtime.model.plates import object_sizes
from qvr_core.runtime.model.values import BINARY, METHODS, UNARY
from qvr_core.syntax import ast

_RUNNABLE = (
    ast.SampleStep,
    ast.ObserveStep,
    ast.LetStep,
    ast.ScoreStep,
    ast.MarginalizeStep,
    ast.ReturnStep,
)


@dataclass(frozen=True)
class Site:
    name: str
    kind: str  # "sample" | "observe"
    step: ast.SampleStep | ast.ObserveStep
    scope: str | None  # the marginalize target it is inside, if any


@dataclass(frozen=True)
class ModelPlan:
    name: str
    decl: ast.ProgramDecl
    sizes: dict[str, int]  # plate objects and their number of entries
    sites: tuple[Site, ...]  # a template's sites as `v$z` (`sample v <- template(..)`)
    data_names: tuple[str, ...]  # in order of first use
    data_uses: dict[str, ast.Name]  # where each data name is first used
    templates: dict[str, ast.ProgramDecl] = field(default_factory=dict)  # called by name

    @property
    def site_names(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.sites)


#: How deep templates may call templates (a cycle is refused at this depth).
MAX_TEMPLATE_DEPTH = 16
#: Parameter kinds that make a program a template over an object or a morphism.
OBJECT_KINDS = ("FinSet", "Space", "Object", "Nat")


def plan(checked: object, decl: ast.ProgramDecl) -> ModelPlan:
    """Read a model program's sites and data names, refusing what qvr cannot run yet."""
    module: ast.Module = checked.ast  # type: ignore[attr-defined]  # checked: a CheckedModule, typed object here
    programs = {d.name.text: d for d in module.decls if isinstance(d, ast.ProgramDecl)}
    walker = _Walker(
        object_sizes(checked), {n.text for d in module.decls for n in _declared(d)}, programs
    )
    for p, kind in zip(decl.params or (), decl.param_kinds or (None,) * 99, strict=False):
        if _kind_name(kind) in OBJECT_KINDS or _is_mor(kind):
            raise QvrError(
                f"program {decl.name.text} is a template over '{p.text}' "
                f"({_kind_name(kind) or 'Mor'}): run a program that calls it"
            )
        walker.uses.setdefault(p.text, p)  # a Real parameter is a number the data gives
    walker.walk(decl.steps, None, set(), "", walker.sizes, 0)
    data = dict(walker.uses)
    return ModelPlan(
        decl.name.text,
        decl,
        walker.sizes,
        tuple(walker.sites),
        tuple(data),
        data,
        walker.templates,
    )


def template_params(decl: ast.ProgramDecl) -> list[tuple[ast.Name, str | None]]:
    """A template's parameters with their kind names (`FinSet`, `Real`, None untyped)."""
    kinds = decl.param_kinds or (None,) * len(decl.params or ())
    return [
        (p, _kind_name(k) or ("Mor" if _is_mor(k) else None))
        for p, k in zip(decl.params or (), kinds, strict=False)
    ]


class _Walker:
    """Collects sites and data names over the steps, templates inlined under `v$`."""

    def __init__(
        self, sizes: dict[str, int], top: set[str], programs: dict[str, ast.ProgramDecl]
    ) -> None:
        self.sizes, self.top, self.programs = sizes, top, programs
        self.sites: list[Site] = []
        self.uses: dict[str, ast.Name] = {}
        self.templates: dict[str, ast.ProgramDecl] = {}

    def walk(
        self,
        steps: tuple[ast.Step, ...],
        scope: str | None,
        bound: set[str],
        prefix: str,
        sizes: dict[str, int],
        depth: int,
    ) -> None:
        for step in steps:
            line = step.span.start_line + 1
            if not isinstance(step, _RUNNABLE):
                kind = type(step).__name__.removesuffix("Step").lower()
                raise QvrError(f"line {line}: qvr cannot run {kind} steps in model programs yet")
            if isinstance(step, ast.SampleStep | ast.ObserveStep) and step.more_targets:
                raise QvrError(f"line {line}: tuple sites cannot run yet")
            if isinstance(step, ast.SampleStep) and scope is not None:
                raise QvrError(
                    f"line {line}: a sample inside `marginalize {scope}` cannot run yet: only "
                    "observe, let and score steps are summed over"
                )
            if isinstance(step, ast.SampleStep) and self._template(step) is not None:
                self.call(step, bound, prefix, sizes, depth)
                continue
            if isinstance(step, ast.SampleStep | ast.ObserveStep | ast.MarginalizeStep):
                src = step.source
                if not (isinstance(src, ast.Call) and src.callee.text in FAMILIES):
                    what = getattr(getattr(src, "callee", None), "text", None) or "this source"
                    raise QvrError(
                        f"line {line}: {what} is not a family call or a program template; qvr "
                        "runs model programs whose steps draw from families (`Normal(mu, sigma)`)"
                    )
            _record_uses(step, bound, self.uses, sizes, self.top)
            if isinstance(step, ast.SampleStep | ast.ObserveStep):
                kind = "sample" if isinstance(step, ast.SampleStep) else "observe"
                self.sites.append(Site(prefix + step.target.text, kind, step, scope))
            if isinstance(step, ast.MarginalizeStep):
                bound.add(step.target.text)
                self.walk(step.steps, step.target.text, bound, prefix, sizes, depth)
            elif not isinstance(step, ast.ReturnStep):
                bound.add(step.target.text)

    def _template(self, step: ast.SampleStep) -> ast.ProgramDecl | None:
        src = step.source
        name = (
            src.callee.text
            if isinstance(src, ast.Call)
            else (src.name.text if isinstance(src, ast.NameRef) else None)
        )
        return self.programs.get(name) if name is not None else None

    def call(
        self,
        step: ast.SampleStep,
        bound: set[str],
        prefix: str,
        sizes: dict[str, int],
        depth: int,
    ) -> None:
        """`sample v <- template(args)`: the template's steps, its sites named `v$z`."""
        decl = self._template(step)
        assert decl is not None
        line = step.span.start_line + 1
        if depth >= MAX_TEMPLATE_DEPTH:
            raise QvrError(
                f"line {line}: templates call each other more than "
                f"{MAX_TEMPLATE_DEPTH} deep (a cycle?)"
            )
        src = step.source
        args = src.args if isinstance(src, ast.Call) else ()
        params = template_params(decl)
        if len(args) != len(params) or (isinstance(src, ast.Call) and src.kwargs):
            raise QvrError(
                f"line {line}: {decl.name.text} takes {len(params)} argument(s) by position"
            )
        inner = dict(sizes)
        local: set[str] = set()
        for (param, kind), arg in zip(params, args, strict=True):
            if kind == "Mor":
                raise QvrError(f"line {line}: morphism parameters of templates cannot run yet")
            if kind in OBJECT_KINDS:
                obj = _object_arg(arg)
                if obj not in sizes:
                    raise QvrError(
                        f"line {line}: '{param.text}' of {decl.name.text} needs an "
                        "object such as a declared FinSet"
                    )
                inner[param.text] = sizes[obj]
            else:
                _record_uses(ast.LetStep(param, arg, step.span), bound, self.uses, sizes, self.top)  # type: ignore[arg-type]  # an argument is an expression here
                local.add(param.text)
        self.templates[decl.name.text] = decl
        self.walk(decl.steps, None, local, f"{prefix}{step.target.text}$", inner, depth + 1)
        bound.add(step.target.text)


def _object_arg(arg: object) -> str | None:
    if isinstance(arg, ast.NameRef):
        return arg.name.text
    if isinstance(arg, ast.Literal) and arg.kind == "name":
        return str(arg.value)
    return None


_FUNCS = set(UNARY) | set(BINARY) | set(METHODS) | set(FUNCTIONS)


def _record_uses(
    step: ast.Step,
    bound: set[str],
    uses: dict[str, ast.Name],
    sizes: dict[str, int],
    top: set[str],
) -> None:
    """Names the step reads that nothing bound so far: data names."""
    for name, role in _names(_read_parts(step)):
        if role == "callee" or role == "key":
            continue
        n = name.text
        if n in bound or n in sizes or n in top or n in FAMILIES or n in _FUNCS:
            continue
        uses.setdefault(n, name)


def _read_parts(step: ast.Step) -> list[object]:
    """The parts of a step whose names it reads (not its sub-steps)."""
    if isinstance(step, ast.SampleStep | ast.ObserveStep | ast.MarginalizeStep):
        return [step.source, [o.value for o in step.options if o.key.text == "via"]]
    if isinstance(step, ast.LetStep | ast.ScoreStep):
        return [step.value]
    if isinstance(step, ast.ReturnStep):
        return [step.values]
    return []


def step_reads(step: ast.Step) -> frozenset[str]:
    """The names one step reads (not its sub-steps')."""
    return frozenset(n.text for n, role in _names(_read_parts(step)) if role == "use")


def scope_reads(step: ast.MarginalizeStep) -> frozenset[str]:
    """The names a `marginalize` scope reads from outside itself: its prior's and every
    inner step's, less what the scope binds before reading. The scope's sum depends on
    nothing else, which lets the runtime reuse it (the forward algorithm's saving)."""
    reads: set[str] = set()

    def walk(steps: tuple[ast.Step, ...], bound: frozenset[str]) -> None:
        for s in steps:
            reads.update(
                n.text
                for n, role in _names(_read_parts(s))
                if role == "use" and n.text not in bound
            )
            if isinstance(s, ast.MarginalizeStep):
                walk(s.steps, bound | {s.target.text})
            target = getattr(s, "target", None)
            if isinstance(target, ast.Name):
                bound = bound | {target.text}

    walk((step,), frozenset())
    return frozenset(reads)


def _names(root: object) -> Iterator[tuple[ast.Name, str]]:
    """(name, role) for every Name under `root`: a callee, an option key, or a use."""
    stack: list[tuple[object, str]] = [(root, "use")]
    while stack:
        node, role = stack.pop()
        if isinstance(node, ast.Name):
            yield node, role
        elif isinstance(node, tuple | list):
            stack.extend((n, role) for n in node)
        elif isinstance(node, ast.Call | ast.Apply):
            callee = node.callee if isinstance(node, ast.Call) else node.func
            yield callee, "callee"
            stack.extend((a, "use") for a in node.args)
            stack.extend((k, "use") for k in getattr(node, "kwargs", ()))
        elif isinstance(node, ast.KeywordArg | ast.Option):
            yield node.key, "key"
            stack.append((node.value, "use"))
        elif isinstance(node, ast.MethodCall):
            yield node.method, "callee"
            stack.append((node.receiver, "use"))
            stack.extend((a, "use") for a in node.args)
        elif isinstance(node, ast.Literal):
            if node.kind == "name":
                yield ast.Name(str(node.value), node.span), role
        elif dataclasses.is_dataclass(node) and not isinstance(node, type):
            stack.extend(
                (getattr(node, f.name), role) for f in dataclasses.fields(node) if f.name != "span"
            )


def _declared(decl: object) -> tuple[ast.Name, ...]:
    if isinstance(decl, ast.ExportDecl):
        return ()
    names = getattr(decl, "names", None)
    if names is not None:
        return tuple(names)
    return (decl.name,)  # type: ignore[attr-defined]  # every other declaration has one name


def _kind_name(kind: object) -> str | None:
    if isinstance(kind, ast.TypeRef) and len(kind.factors) == 1:
        return kind.factors[0].text
    return None


def _is_mor(kind: object) -> bool:
    return isinstance(kind, ast.ObjApply) and kind.func.text == "Mor"
