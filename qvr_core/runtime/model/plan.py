"""What a model program is made of, read once from the syntax tree and the checked tables.

A *model program* is a program the checker does not type as a seed program (it has
family steps with arguments, plates, options, `score` or `marginalize`): its
sites, which of them are observed, the plate sizes of the objects, and its *data
names*: every name a step uses that no step, parameter or declaration binds,
which the data supplies at fit time (quivers' host-data channel).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

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
    sites: tuple[Site, ...]
    data_names: tuple[str, ...]  # in order of first use
    data_uses: dict[str, ast.Name]  # where each data name is first used

    @property
    def site_names(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.sites)


def plan(checked: object, decl: ast.ProgramDecl) -> ModelPlan:
    """Read a model program's sites and data names, refusing what qvr cannot run yet."""
    sizes = object_sizes(checked)
    top = {n.text for d in checked.ast.decls for n in _declared(d)}
    sites: list[Site] = []
    bound: set[str] = set()
    uses: dict[str, ast.Name] = {}
    for p, kind in zip(decl.params or (), decl.param_kinds or (None,) * 99, strict=False):
        if _kind_name(kind) in ("FinSet", "Space", "Object", "Nat") or _is_mor(kind):
            raise QvrError(
                f"program {decl.name.text} is a template over '{p.text}' "
                f"({_kind_name(kind) or 'Mor'}): run a program that calls it"
            )
        uses.setdefault(p.text, p)  # a Real parameter is a number the data gives
    _walk(decl.steps, None, sites, bound, uses, sizes, top)
    data = {n: name for n, name in uses.items() if n not in bound}
    return ModelPlan(decl.name.text, decl, sizes, tuple(sites), tuple(data), data)


def _walk(steps, scope, sites, bound, uses, sizes, top) -> None:  # type: ignore[no-untyped-def]
    for step in steps:
        if not isinstance(step, _RUNNABLE):
            kind = type(step).__name__.removesuffix("Step").lower()
            raise QvrError(
                f"line {step.span.start_line + 1}: qvr cannot run {kind} steps in model "
                "programs yet"
            )
        if isinstance(step, ast.SampleStep | ast.ObserveStep) and step.more_targets:
            raise QvrError(f"line {step.span.start_line + 1}: tuple sites cannot run yet")
        if isinstance(step, ast.SampleStep | ast.ObserveStep | ast.MarginalizeStep):
            src = step.source
            if not (isinstance(src, ast.Call) and src.callee.text in FAMILIES):
                what = getattr(getattr(src, "callee", None), "text", None) or "this source"
                raise QvrError(
                    f"line {step.span.start_line + 1}: {what} is not a family call; qvr runs "
                    "model programs whose steps draw from families (`Normal(mu, sigma)`)"
                )
        if isinstance(step, ast.SampleStep) and scope is not None:
            raise QvrError(
                f"line {step.span.start_line + 1}: a sample inside `marginalize {scope}` "
                "cannot run yet: only observe, let and score steps are summed over"
            )
        _record_uses(step, bound, uses, sizes, top)
        if isinstance(step, ast.SampleStep | ast.ObserveStep):
            kind = "sample" if isinstance(step, ast.SampleStep) else "observe"
            sites.append(Site(step.target.text, kind, step, scope))
        if isinstance(step, ast.MarginalizeStep):
            bound.add(step.target.text)
            _walk(step.steps, step.target.text, sites, bound, uses, sizes, top)
        elif not isinstance(step, ast.ReturnStep):
            bound.add(step.target.text)


_FUNCS = set(UNARY) | set(BINARY) | set(METHODS) | set(FUNCTIONS)


def _record_uses(step, bound, uses, sizes, top) -> None:  # type: ignore[no-untyped-def]
    """Names the step reads that nothing bound so far: data names."""
    parts: list[object] = []
    if isinstance(step, ast.SampleStep | ast.ObserveStep | ast.MarginalizeStep):
        via = [o.value for o in step.options if o.key.text == "via"]
        parts = [step.source, via]
    elif isinstance(step, ast.LetStep | ast.ScoreStep):
        parts = [step.value]
    elif isinstance(step, ast.ReturnStep):
        parts = [step.values]
    skip: set[int] = set()
    for name, role in _names(parts):
        if role == "callee" or role == "key" or id(name) in skip:
            continue
        n = name.text
        if n in bound or n in sizes or n in top or n in FAMILIES or n in _FUNCS:
            continue
        uses.setdefault(n, name)


def _names(root: object):  # type: ignore[no-untyped-def]
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
    return (decl.name,)  # type: ignore[attr-defined]


def _kind_name(kind: object) -> str | None:
    if isinstance(kind, ast.TypeRef) and len(kind.factors) == 1:
        return kind.factors[0].text
    return None


def _is_mor(kind: object) -> bool:
    return isinstance(kind, ast.ObjApply) and kind.func.text == "Mor"
