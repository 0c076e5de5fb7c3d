"""Which programs of a checked module run, on which runtime, and why not.

Two runtimes run programs: the seeds' (`runtime/compile.py`: morphisms, kernels,
networks, a batch axis) compiles a typed `ProgramInfo`, and the model runtime
(`runtime/model/`: family steps with arguments, plates, data names,
`marginalize`) compiles the checker's `Model`. A program the checker did not
type runs on neither: it is refused with the checker's own reason (its QVR011),
never run on a guess. `runnability` decides once, without torch, for `qvr run`,
the inference job, the Python API and the language server's run command and
code lenses.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from qvr_core import rules
from qvr_core.builtins.objects import PLATE_KINDS
from qvr_core.check.model import Model
from qvr_core.check.module import CheckedModule
from qvr_core.syntax import ast

RuntimeKind = Literal["model", "morphism"]
#: Program parameter kinds that make a model program a template: the caller picks them.
TEMPLATE_KINDS = PLATE_KINDS


@dataclass(frozen=True)
class Runnability:
    """Whether program `name` runs: on which runtime (`kind`), or why not (`reason`)."""

    name: str
    kind: RuntimeKind | None
    reason: str | None = None

    @property
    def ok(self) -> bool:
        return self.kind is not None


def runnability(checked: CheckedModule, name: str) -> Runnability:
    """How program `name` of `checked` runs, or the one-line reason it does not."""
    model = checked.models.get(name)
    if model is not None:
        template = next((p for p in model.params if p.kind in TEMPLATE_KINDS), None)
        if template is not None:
            return Runnability(
                name,
                None,
                f"program {name} is a template over '{template.name}' ({template.kind}): "
                "run a program that calls it",
            )
        why = _model_gap(checked, model, set())
        return Runnability(name, "model") if why is None else Runnability(name, None, why)
    info = checked.programs.get(name)
    if info is not None:
        if info.type is not None:
            return Runnability(name, "morphism")
        return Runnability(name, None, f"program {name} does not type-check")
    decl = program_decl(checked, name)
    if decl is None:
        what = "a let" if name in checked.lets else "not a program"
        return Runnability(
            name,
            None,
            f"'{name}' is {what}: inference needs a program with sample or observe steps",
        )
    return Runnability(name, None, _unchecked_reason(checked, decl))


def runnable_programs(checked: CheckedModule) -> dict[str, ast.ProgramDecl]:
    """Every program that runs, by name, in source order."""
    out: dict[str, ast.ProgramDecl] = {}
    for decl in checked.ast.decls:
        if isinstance(decl, ast.ProgramDecl) and runnability(checked, decl.name.text).ok:
            out.setdefault(decl.name.text, decl)
    return out


def _model_gap(checked: CheckedModule, model: Model, seen: set[str]) -> str | None:
    """Why a checked model cannot run: a gap of its own or of a program it calls."""
    if model.runtime_gaps:
        return f"program {model.name}: {model.runtime_gaps[0]}"
    seen.add(model.name)
    for site in model.sites:
        if site.callee is None or site.callee in seen:
            continue
        callee = checked.models.get(site.callee)
        if callee is None:
            decl = program_decl(checked, site.callee)
            what = _unchecked_reason(checked, decl) if decl is not None else "not a program"
            return (
                f"program {model.name} calls {site.callee} (line {site.line}), which cannot "
                f"run: {what}"
            )
        inner = _model_gap(checked, callee, seen)
        if inner is not None:
            return inner
    return None


def program_decl(checked: CheckedModule, name: str) -> ast.ProgramDecl | None:
    """The declaration of program `name`, typed or not; None when it is no program."""
    return next(
        (d for d in checked.ast.decls if isinstance(d, ast.ProgramDecl) and d.name.text == name),
        None,
    )


def _unchecked_reason(checked: CheckedModule, decl: ast.ProgramDecl) -> str:
    """The checker's QVR011 on the program, which says what it does not type."""
    for d in checked.diagnostics:
        if d.code == rules.NOT_CHECKED.code and d.span == decl.name.span:
            return (
                f"{d.message} ({d.code}): qvr runs only what it checks; "
                f"`qvr explain {d.code}` says more"
            )
    return f"program {decl.name.text} is not checked, so it cannot run"
