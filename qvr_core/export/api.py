"""Export a checked program to a target, or say where and why the target cannot express it.

The emitters (`qvr_core.export.stan`, `.numpyro`, `.pymc`) each lower a `Plan` once
and answer with the program written in their language or with what in it their
language cannot say (`written(plan)`: text, or located problems; `unsupported` and
`emit` ask the same lowering one question each). Problems become
QVR701 diagnostics, the same in `qvr check --target`, `qvr export` and the
editor, so nothing is written that the check would have refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from qvr_core.check.module import CheckedModule
from qvr_core.export.plan import Plan, Unsupported, make_plan
from qvr_core.export.targets import Target
from qvr_core.text import rules
from qvr_core.text.diagnostics import Diagnostic, make


class Emitter(Protocol):
    """What an emitter module provides (module-level functions)."""

    def unsupported(self, plan: Plan) -> list[Unsupported]: ...

    def emit(self, plan: Plan) -> str: ...

    def written(self, plan: Plan) -> str | list[Unsupported]: ...


@dataclass(frozen=True)
class Exported:
    """One program written for one target: `text` None when `diagnostics` say why not."""

    program: str
    target: Target
    text: str | None
    diagnostics: tuple[Diagnostic, ...]


def emitter(target: Target) -> Emitter:
    """The target's emitter module. Imported here, when a program is exported or checked
    for a target (the three take ~40 ms), not with `qvr check` or the `qvr` command line."""
    from qvr_core.export import numpyro, pymc, stan

    emitters: dict[str, Emitter] = {"stan": stan, "numpyro": numpyro, "pymc": pymc}
    return emitters[target.name]


def exportable_programs(module: CheckedModule) -> tuple[str, ...]:
    """The programs an export (and `check --target`) looks at: what the module exports,
    or, when it exports nothing, every model program that is not a template (a program
    with parameters is written to be called, as `school_effects(0.6, School)`)."""
    if module.exports:
        return tuple(module.exports)
    return tuple(name for name, m in module.models.items() if not m.params)


def export_program(
    module: CheckedModule, target: Target, program: str, *, source: str = "<source>"
) -> Exported:
    """`program` of a checked module (without errors) written for `target`."""
    plan = make_plan(module, program, source)
    if isinstance(plan, list):
        return Exported(program, target, None, _diagnostics(plan, target, program))
    text = emitter(target).written(plan)
    if isinstance(text, list):
        return Exported(program, target, None, _diagnostics(text, target, program))
    return Exported(program, target, text, ())


def target_diagnostics(module: CheckedModule, target: Target) -> tuple[Diagnostic, ...]:
    """Why each exportable program of `module` cannot be written for `target` (QVR701)."""
    out: list[Diagnostic] = []
    for program in exportable_programs(module):
        plan = make_plan(module, program, "<source>")
        found = plan if isinstance(plan, list) else emitter(target).unsupported(plan)
        out.extend(_diagnostics(found, target, program))
    return tuple(out)


def _diagnostics(found: list[Unsupported], target: Target, program: str) -> tuple[Diagnostic, ...]:
    seen: set[tuple[int, int, str]] = set()
    out = []
    for u in found:
        key = (u.span.start, u.span.end, u.message)
        if key in seen:
            continue
        seen.add(key)
        out.append(
            make(
                rules.NOT_EXPORTABLE,
                f"not exportable to {target.title}: {u.message}",
                u.span,
                data=(("target", target.name), ("program", program)),
            )
        )
    return tuple(out)
