"""Which programs of a checked module can run, and which of them are model programs.

Two runtimes run programs: the seeds' (`runtime/compile.py`: morphisms, kernels,
networks, a batch axis) and the model runtime (`runtime/model/`: family steps
with arguments, plates, data names, `marginalize`). A *model program* draws its
sites from families called with arguments (`sample mu <- Normal(0.0, 5.0)`); the
decision is made here once, without torch, for `qvr run`, the inference job and
the language server's run command and code lenses.
"""

from __future__ import annotations

from qvr_core.builtins import FAMILIES
from qvr_core.syntax import ast


def _declared(module: ast.Module) -> set[str]:
    names: set[str] = set()
    for decl in module.decls:
        if isinstance(decl, ast.ExportDecl):
            continue
        names.update(n.text for n in getattr(decl, "names", (decl.name,)))
    return names


def _site_steps(steps: tuple[ast.Step, ...]) -> list[ast.Step]:
    out: list[ast.Step] = []
    stack = list(steps)
    while stack:
        step = stack.pop()
        out.append(step)
        if isinstance(step, ast.MarginalizeStep):
            stack.extend(step.steps)
    return out


def is_model_program(decl: ast.ProgramDecl, declared: set[str]) -> bool:
    """True when a step draws from a family called with arguments (not a morphism)."""
    for step in _site_steps(decl.steps):
        if isinstance(step, ast.MarginalizeStep | ast.ScoreStep):
            return True
        if isinstance(step, ast.SampleStep | ast.ObserveStep):
            src = step.source
            if (
                isinstance(src, ast.Call)
                and src.callee.text in FAMILIES
                and src.callee.text not in declared
            ):
                return True
    return False


def model_program(checked: object, name: str) -> ast.ProgramDecl | None:
    """The program `name` of a checked module when it is a model program."""
    module: ast.Module = checked.ast  # type: ignore[attr-defined]  # checked: a CheckedModule, typed object here
    declared = _declared(module)
    for decl in module.decls:
        if isinstance(decl, ast.ProgramDecl) and decl.name.text == name:
            return decl if is_model_program(decl, declared) else None
    return None


def runnable_programs(checked: object) -> dict[str, ast.ProgramDecl]:
    """Every program either runtime can run, by name, in source order."""
    module: ast.Module = checked.ast  # type: ignore[attr-defined]  # checked: a CheckedModule, typed object here
    typed = checked.programs  # type: ignore[attr-defined]  # checked: a CheckedModule, typed object here
    declared = _declared(module)
    out: dict[str, ast.ProgramDecl] = {}
    for decl in module.decls:
        if not isinstance(decl, ast.ProgramDecl):
            continue
        name = decl.name.text
        if is_model_program(decl, declared) or (name in typed and typed[name].type is not None):
            out.setdefault(name, decl)
    return out
