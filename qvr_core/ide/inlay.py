"""Inlay hints: the facts the checker inferred, shown where the user did not write them.

- the type after each `let NAME` (top-level lets and program-local values),
- the type after each `sample` site (a Bayesian model's: where no `: Plate`
  is written),
- the reading direction of each branch of a bidirectional `fan` (the
  convention that feeds the second branch the sequence reversed),
- both sides' dimensions where two products match by dimension (QVR203).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from qvr_core.check.module import CheckedModule, ProgramInfo
from qvr_core.check.types import Arrow, Group, ObjectType, ValueType
from qvr_core.syntax import ast
from qvr_core.text import rules


class HintKind(StrEnum):
    TYPE = "type"
    PARAMETER = "parameter"  # attached to an argument, like a direction marker


@dataclass(frozen=True)
class InlayHint:
    offset: int  # where the label is shown
    label: str
    kind: HintKind
    tooltip: str = ""
    pad_left: bool = False
    pad_right: bool = False


LEFT_TO_RIGHT = "→"
RIGHT_TO_LEFT = "←"


def inlay_hints(module: CheckedModule, start: int = 0, end: int | None = None) -> list[InlayHint]:
    """Every hint whose offset lies in [start, end], sorted by offset."""
    stop = len(module.source) if end is None else end
    hints = [
        *_let_hints(module),
        *_program_hints(module),
        *_model_hints(module),
        *_direction_hints(module),
        *_dimension_hints(module),
    ]
    return sorted((h for h in hints if start <= h.offset <= stop), key=lambda h: h.offset)


def type_label(t: Arrow | ValueType | ObjectType | Group) -> str:
    return t.name if isinstance(t, ObjectType) else t.label


def _type_hint(name: ast.Name, t: Arrow | ValueType | Group) -> InlayHint:
    return InlayHint(name.span.end, f": {type_label(t)}", HintKind.TYPE)


def _let_hints(module: CheckedModule) -> Iterable[InlayHint]:
    for decl in module.ast.decls:
        if not isinstance(decl, ast.LetDecl):
            continue
        info = module.lets.get(decl.name.text)
        if info is not None and info.decl == decl and info.type is not None:
            yield _type_hint(decl.name, info.type)


def _program_hints(module: CheckedModule) -> Iterable[InlayHint]:
    for decl in module.ast.decls:
        if not isinstance(decl, ast.ProgramDecl):
            continue
        info = module.programs.get(decl.name.text)
        if info is None or info.decl is not decl:
            continue
        yield from _step_hints(info)


def _model_hints(module: CheckedModule) -> Iterable[InlayHint]:
    """A Bayesian model's lets and the sites whose step writes no `: Plate`."""
    for model in module.models.values():
        for step in model.steps:
            node = step.step
            if (
                step.type is None
                or step.called is not None  # put in place at a call step: not written there
                or (
                    isinstance(node, ast.SampleStep | ast.MarginalizeStep)
                    and node.plate is not None
                )
            ):
                continue
            if isinstance(node, ast.SampleStep | ast.MarginalizeStep | ast.LetStep):
                yield InlayHint(node.target.span.end, f": {step.type.label}", HintKind.TYPE)


def _step_hints(info: ProgramInfo) -> Iterable[InlayHint]:
    for step in info.decl.steps:
        if isinstance(step, ast.SampleStep):
            targets: tuple[ast.Name, ...] = (step.target, *step.more_targets)  # `(h, c)`
        elif isinstance(step, ast.LetStep):
            targets = (step.target,)
        elif isinstance(step, ast.DestructureStep):
            targets = step.targets
        else:
            continue
        for target in targets:
            t = info.values.get(target.text)
            if t is not None:
                yield _type_hint(target, t)


def _direction_hints(module: CheckedModule) -> Iterable[InlayHint]:
    for call, reversed_indices in module.reversed_branches.items():
        for i, branch in enumerate(call.args):
            backwards = i in reversed_indices
            arrow = RIGHT_TO_LEFT if backwards else LEFT_TO_RIGHT
            way = "right to left" if backwards else "left to right"
            yield InlayHint(
                branch.span.start,
                arrow,
                HintKind.PARAMETER,
                tooltip=f"bidirectional fan: this branch reads the sequence {way}",
                pad_right=True,
            )


def _dimension_hints(module: CheckedModule) -> Iterable[InlayHint]:
    for d in module.diagnostics:
        if d.code != rules.MATCHED_BY_DIMENSION.code:
            continue
        facts = dict(d.data)
        if "produced" not in facts or "expected" not in facts:
            continue
        label = (
            f"{facts['produced']} = {facts.get('produced_dims', '?')} as "
            f"{facts['expected']} = {facts.get('expected_dims', '?')}"
        )
        yield InlayHint(d.span.end, label, HintKind.TYPE, tooltip=d.message, pad_left=True)
