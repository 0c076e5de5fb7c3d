"""A module's own QIEC effects: `effect NAME` interfaces and the instances of them.

quivers' QIEC (0.25.2, `dsl/ast_nodes/qiec.py`, `QiecEffectDecl`) lets a module declare
an operation interface beside the prelude's `Random` and `Score`:

    effect Ask
        get : Unit -> Int
    instance ask : Ask
    define read() : Int !{ask} =
        let value <- perform ask.get()
        return value

An operation takes values of the types before `->` (joined by `*`; `Unit` alone: none)
and gives one of the type after it. qvr types the part of this over the kernel's base
types (`Unit`, `Bool`, `Int`, `Real`, `String`; quivers' `qiec/types.py`): the
operations' signatures, the instances, and a computation that performs them with
arguments and a result of the declared types (computations.py). What such a
performance returns is up to a handler, which qvr does not run: a computation that
performs a module's own effect is typed, and a program cannot call it
(`Computation.handlers`). Operations with static binders (`lbl[T] : T -> T`) or
types other than the base ones keep the names-only check (QVR011).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise
from typing import TYPE_CHECKING

from qvr_core.builtins.effects import UNIT_TYPE, VALUE_TYPES
from qvr_core.check.context import SymbolKey
from qvr_core.syntax import ast

if TYPE_CHECKING:
    from qvr_core.check.context import Context

EFFECT = "effect"  # the clause kind of an `effect` declaration
UNIT = UNIT_TYPE  # an operation taking it takes no value


@dataclass(frozen=True)
class UserOperation:
    """`get : Unit -> Int`: the types of its values (none for `Unit`) and of its result."""

    name: str
    params: tuple[str, ...]
    result: str

    @property
    def signature(self) -> str:
        return f"{self.name} : {' * '.join(self.params) or UNIT} -> {self.result}"


@dataclass(frozen=True)
class UserEffect:
    """A module's `effect` interface, as typed."""

    name: str
    operations: tuple[UserOperation, ...]

    def operation(self, name: str) -> UserOperation | None:
        return next((op for op in self.operations if op.name == name), None)

    @property
    def label(self) -> str:
        return f"effect {self.name}"

    def summary(self) -> str:
        """Its operations, for hover: `next : Unit -> Int; step : Int * Real -> Real`."""
        listed = "; ".join(op.signature for op in self.operations) or "no operations"
        return f"operations: {listed} (a handler gives their values; qvr runs none)"


def is_effect(decl: ast.Decl) -> bool:
    return isinstance(decl, ast.OtherDecl) and decl.clause.kind == EFFECT


def read_effect(ctx: Context, decl: ast.OtherDecl) -> UserEffect | str:
    """The interface `decl` declares, or what in it qvr does not type (names only)."""
    if len(decl.clause.parts) != 1:
        return "its static parameters"
    operations: list[UserOperation] = []
    for line in decl.clause.body:
        if line.kind != "operation" or not all(isinstance(p, ast.Name) for p in line.parts):
            return "its operations other than `name : A -> B`"
        name, *types = line.parts
        assert isinstance(name, ast.Name)
        names = [t for t in types if isinstance(t, ast.Name)]
        if len(names) < 2 or any(t.text not in VALUE_TYPES for t in names):
            return "its operations' types other than Unit, Bool, Int, Real and String"
        joins = [ctx.text[a.span.end : b.span.start].strip() for a, b in pairwise(names)]
        if joins[-1] != "->" or any(j != "*" for j in joins[:-1]):
            return "its operations' types other than `A * B -> C`"
        params = tuple(t.text for t in names[:-1])
        if params == (UNIT,):
            params = ()
        elif UNIT in params:
            return "its operations taking Unit among other values"
        operations.append(UserOperation(name.text, params, names[-1].text))
    return UserEffect(decl.name.text, tuple(operations))


def check_effect(ctx: Context, decl: ast.OtherDecl, found: UserEffect) -> None:
    """Check an `effect` declaration qvr types (`found`, as `read_effect` read it) where
    it is written: an operation named twice, and its hover."""
    ctx.record_type(decl.name.span, found, found.summary())
    names = [line.parts[0] for line in decl.clause.body]
    ctx.once_each(
        [n for n in names if isinstance(n, ast.Name)],
        f"effect {decl.name.text} declares the operation '{{name}}' twice",
    )


def user_effect(ctx: Context, instance: str) -> UserEffect | None:
    """The module's own interface `instance NAME : Effect` applies, or None (no such
    instance, a prelude interface's, or an interface qvr does not type)."""
    decl = ctx.top.get(instance)
    if not isinstance(decl, ast.OtherDecl) or decl.clause.kind != "instance":
        return None
    parts = decl.clause.parts
    if len(parts) != 2 or not isinstance(parts[1], ast.Name):
        return None
    effect = ctx.top.get(parts[1].text)
    if not isinstance(effect, ast.OtherDecl) or not is_effect(effect):
        return None
    found = read_effect(ctx, effect)
    return found if isinstance(found, UserEffect) else None


def check_user_instance(ctx: Context, decl: ast.OtherDecl) -> bool:
    """`instance ask : Ask` of a module's own effect: checked (its effect linked)."""
    found = user_effect(ctx, decl.name.text)
    if found is None:
        return False
    applied = decl.clause.parts[1]
    assert isinstance(applied, ast.Name)
    ctx.ref(applied.span, SymbolKey(applied.text))
    ctx.record_type(decl.name.span, found, f"an instance of {found.name}; {found.summary()}")
    return True
