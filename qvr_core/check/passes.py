"""What the checker's passes share, as protocols: the module's tables (`Env`), one
program being typed (`ProgramPass`) and one Bayesian program being typed (`ModelPass`).

A pass that works on behalf of another (a model step for its program, a call step for
its model) names the other through these, never through the class that implements it,
so the passes form a tree of imports with no cycle, type-only imports included
(`tests/rails/test_import_cycles.py`). The classes are `checker.Env`,
`programs.ProgramChecker` and `model_steps.ModelChecker`; each protocol lists exactly
what the passes below it use, so widening one is a visible decision.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from qvr_core.check.context import Context, SymbolKey
    from qvr_core.check.deduction_system import Deduction
    from qvr_core.check.defines import Computation
    from qvr_core.check.model import DataVariable, Step
    from qvr_core.check.module import (
        ModuleAlgebra,
        ProgramInfo,
        SymbolKind,
        TransformationStep,
    )
    from qvr_core.check.qiec_checks import Staged
    from qvr_core.check.types import Arrow, Group, Plated, ValueType
    from qvr_core.check.wiring import Contraction
    from qvr_core.syntax import ast
    from qvr_core.text.diagnostics import Diagnostic
    from qvr_core.text.span import Span


@dataclass
class Local:
    """A value bound in a program: its kind, where it is named and bound, its type."""

    kind: SymbolKind
    name: ast.Name
    step_span: Span
    type: ValueType | None
    is_input: bool = False


class Env(Protocol):
    """The module's tables, typing lets, programs and `define`s on first use."""

    @property
    def ctx(self) -> Context: ...

    @property
    def programs(self) -> dict[str, ProgramInfo | object | None]: ...

    @property
    def locals(self) -> dict[SymbolKey, tuple[SymbolKind, Span, Span, ValueType | None]]: ...

    def name_type(self, name: ast.Name) -> Arrow | Group | None: ...

    def arrow_of(self, n: str) -> Arrow | None:
        """The type of the morphism or let named `n`, recording no use of it."""
        ...

    def transformation(self, n: str) -> tuple[TransformationStep, ...] | None:
        """The steps of the let `n` when it is bound to a transformation, else None."""
        ...

    def program_type(self, n: str) -> Arrow | None: ...

    def cyclic(self, name: ast.Name) -> bool: ...

    def computation(self, n: str) -> Computation | None: ...

    def staged(self, n: str) -> Staged | None: ...

    def algebra(self) -> ModuleAlgebra | None: ...

    def contraction(self, n: str) -> Contraction | None: ...

    def deduction(self, n: str) -> Deduction | None: ...

    def sequence_scans(self, expr: ast.Expr) -> list[ast.Call]: ...


class ProgramPass(Protocol):
    """One program being typed: its locals, and how a step binds and reads them."""

    @property
    def env(self) -> Env: ...

    @property
    def ctx(self) -> Context: ...

    @property
    def decl(self) -> ast.ProgramDecl: ...

    @property
    def scope(self) -> str: ...

    @property
    def locals(self) -> dict[str, Local]: ...

    fed_data: set[str]  # the data names only fed to a step, set by the names-only check

    def lookup(self, name: ast.Name) -> ValueType | None: ...

    def define(
        self,
        name: ast.Name,
        kind: SymbolKind,
        step_span: Span,
        type_: ValueType | None,
        is_input: bool = False,
    ) -> None: ...

    def use(self, name: str) -> None: ...

    def unused_locals(self) -> None: ...


class ModelPass(Protocol):
    """One Bayesian program being typed into a `Model`: what a call step inlines into."""

    @property
    def pc(self) -> ProgramPass: ...

    @property
    def ctx(self) -> Context: ...

    @property
    def env(self) -> Env: ...

    @property
    def data(self) -> dict[str, DataVariable]: ...

    @property
    def steps(self) -> list[Step]: ...

    @property
    def gaps(self) -> list[str]: ...

    @property
    def binders(self) -> dict[str, Plated]: ...

    @property
    def lambdas(self) -> dict[str, ast.Lambda]: ...

    @property
    def accumulators(self) -> dict[str, tuple[str, ...]]: ...

    @property
    def parses(self) -> dict[Span, Deduction]: ...

    @property
    def charts(self) -> set[str]: ...

    @property
    def whole_data(self) -> dict[str, str]: ...

    def site_label(self, label: str, callee: ast.Name) -> str: ...

    def bind_target(
        self, target: ast.Name, kind: SymbolKind, span: Span, t: Plated | None
    ) -> None: ...

    def arith(self, node: ast.Arith) -> Plated | None: ...

    def is_plate(self, name: str) -> bool: ...

    def plates_of(self, name: str) -> tuple[str, ...]: ...


class LatePass(Protocol):
    """A whole-module pass run after the others when they found no error, adding its
    diagnostics: QVR601 (`qvr_core.sizing.too_large`), which sizes what the passes
    typed. Passes above the checker register here, so the checker imports none."""

    def __call__(
        self, ctx: Context, env: Env, exports: tuple[str, ...], budget: int | None
    ) -> list[Diagnostic]: ...


_LATE: list[LatePass] = []


def add_late_pass(late: LatePass) -> None:
    """Run `late` after every check from now on (once, however often it is added)."""
    if late not in _LATE:
        _LATE.append(late)


def late_passes() -> tuple[LatePass, ...]:
    """The late passes, in the order they were added."""
    return tuple(_LATE)
