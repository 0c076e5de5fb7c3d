"""The checks of QIEC declarations, each where it is written: a computation run once for
each choice of its static parameters (`check_define`), a handler's clauses
(`check_handler`), an index, a family, an interface with static parameters and an
instance of one (`check_declaration`). Each gives the record the module keeps, which
hover, signature help and a program's calls read.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from qvr_core.check.context import SymbolKey
from qvr_core.check.qiec_declarations import (
    EFFECT,
    FAMILY,
    HANDLER,
    INDEX,
    INSTANCE,
    Family,
    HandlerInfo,
    Header,
    IndexType,
    Interface,
    OperationClause,
    Quiet,
    clause_names,
    read_family,
    read_handler,
    read_header,
    read_index,
    read_instance,
    read_interface,
    unknown_type,
)
from qvr_core.check.qiec_eval import Evaluator
from qvr_core.check.qiec_evaluation import Failed, Refused, unknown_value
from qvr_core.check.qiec_types import (
    BaseT,
    QType,
    TensorT,
    substitute,
    written,
)
from qvr_core.check.qiec_values import (
    NotRun,
    Value,
    describe,
    fits,
    leaves,
)
from qvr_core.syntax import ast
from qvr_core.text import rules
from qvr_core.text.span import Span

if TYPE_CHECKING:
    from qvr_core.check.context import Context

#: The most combinations of static parameters a define is checked under.
MOST_STATIC_CHOICES = 64


@dataclass(frozen=True)
class Staged:
    """A checked QIEC computation, which a program's call runs with its values
    (`qiec_calls.py`)."""

    name: str
    header: Header

    def summary(self) -> str:
        h = self.header
        statics = "".join(f" for each {k} {n}" for n, k in h.statics)
        takes = ", ".join(f"{n} : {written(t)}" for n, t in h.params) or "nothing"
        row = ", ".join(h.row) + (" and the caller's" if h.open_row else "")
        return (
            f"a computation checked{statics}: takes {takes}; gives {written(h.result)}; "
            f"performs on {row or 'nothing (pure)'}; a program's call runs it with the "
            "program's values"
        )


#: A checked QIEC declaration, as the module keeps it (hover reads its summary).
QiecRecord = Staged | IndexType | Family | Interface | HandlerInfo
QIEC_RECORDS = (Staged, IndexType, Family, Interface, HandlerInfo)


def static_choices(ev: Evaluator, header: Header) -> Iterator[dict[str, str]] | None:
    """Every assignment of the define's static parameters to their index's constructors
    (None when one names no index, or there are too many)."""
    options: list[list[str]] = []
    for _, kind in header.statics:
        ctors = ev.index_of(kind)
        if not ctors:
            return None
        options.append(list(ctors))
    total = math.prod(len(o) for o in options)
    if total > MOST_STATIC_CHOICES:
        return None
    names = [n for n, _ in header.statics]
    return (dict(zip(names, combo, strict=True)) for combo in itertools.product(*options))


def check_define(ctx: Context, decl: ast.OtherDecl) -> Staged | str | None:
    """Check a define alone (its errors reported): the record a call stages, a reason it
    keeps the names-only check, or None after an error."""
    header = read_header(ctx, decl)
    if header is None:
        return None
    unknown = unknown_type(ctx, [*(t for _, t in header.params), header.result])
    if unknown is not None:
        return f"its type {unknown}"
    ev = Evaluator(ctx, root=decl)
    choices = static_choices(ev, header)
    if choices is None:
        return "its static parameters"
    try:
        for bound in choices:
            args = tuple(
                unknown_value(substitute(t, {}, bound))
                if not isinstance(t, BaseT | TensorT)
                else leaves(t, n, decl.name.span)
                for n, t in header.params
            )
            ev.define(header, decl, bound, args)
    except Refused as why:
        return str(why)
    except Failed:
        return None
    except NotRun:  # a check alone never stages
        pass
    return Staged(header.name, header)


def check_handler(ctx: Context, decl: ast.OtherDecl) -> HandlerInfo | bool:
    """Check a handler alone: its return clause takes the handled body's value and gives
    the handler's result, each operation clause takes the operation's values, and what
    it resumes with is of the operation's result. True when it checks."""
    handler = read_handler(ctx, decl)
    if handler is None:
        return False
    ev = Evaluator(ctx, root=decl)
    ev.owners.append(decl)
    interface = ev.interface(handler.interface)
    if interface is None:
        return False  # a handler of a prelude interface: names only
    if unknown_type(ctx, [*interface.types, handler.input, handler.output]) is not None:
        return False  # its interface is checked names-only
    indices = dict(zip((n for n, _ in interface.statics), handler.statics, strict=False))
    span = decl.name.span
    try:
        out = ev.block(handler.return_body, {handler.return_param: unknown_value(handler.input)})
        if out is not None and not fits(out, handler.output):
            raise ev.fail(
                rules.DECLARED_TYPE_MISMATCH,
                f"handler {handler.name} gives {written(handler.output)}, but its return "
                f"clause gives {describe(out)}",
                span,
            )
        for clause in handler.clauses:
            sig = interface.operation(clause.operation)
            if sig is None:
                raise ev.fail(
                    rules.EFFECT_ROW,
                    f"{interface.name} has no operation '{clause.operation}'",
                    span,
                )
            params = [substitute(t, {}, indices) for t in sig.params]
            result = substitute(sig.result, {}, indices)

            def resume(
                value: Value,
                at: Span,
                want: QType = result,
                c: OperationClause = clause,
                used: list[int] = [0],  # noqa: B006 (one counter per clause, bound here)
            ) -> Value:
                used[0] += 1
                ev.once(handler.name, c, used[0], at)
                if not fits(value, want):
                    raise ev.fail(
                        rules.DECLARED_TYPE_MISMATCH,
                        f"resume takes the operation's result, {written(want)}, not "
                        f"{describe(value)}",
                        at,
                    )
                return unknown_value(handler.output)

            ev.resumptions.append(resume)
            env: dict[str, object] = {
                n: unknown_value(t) for n, t in zip(clause.params, params, strict=False)
            }
            value = ev.block(clause.body, env)
            ev.resumptions.pop()
            if value is not None and not fits(value, handler.output):
                raise ev.fail(
                    rules.DECLARED_TYPE_MISMATCH,
                    f"handler {handler.name} gives {written(handler.output)}, but its clause "
                    f"for {clause.operation} gives {describe(value)}",
                    span,
                )
    except Failed:
        return True
    except (Refused, NotRun):
        return False
    return handler.info


def check_declaration(ctx: Context, decl: ast.OtherDecl) -> QiecRecord | bool:
    """Check a QIEC declaration other than a define (its errors reported): its record,
    True when checked with an error, False when it is none of them, or one qvr does not
    type (names only)."""
    kind = decl.clause.kind
    if kind == INDEX:
        ctx.once_each(
            [p.names[0] for p in decl.clause.parts if isinstance(p, ast.Clause) and p.names],
            "index constructor {name} is declared twice",
        )
        return read_index(decl)
    if kind == FAMILY:
        quiet = read_family(Quiet(ctx), decl)
        fields = [f for c in quiet.constructors for f in c.fields] if quiet else []
        if unknown_type(ctx, fields) is not None:
            return False
        fam = read_family(ctx, decl)
        if fam is None:
            return True
        _refer_indices(ctx, decl, [k for _, k in fam.index_params])
        return fam
    if kind == EFFECT:
        interface = read_interface(Quiet(ctx), decl)
        if interface is None:
            return False
        if unknown_type(ctx, interface.types) is not None:
            return False
        read_interface(ctx, decl)
        _refer_indices(ctx, decl, [k for _, k in interface.statics])
        return interface
    if kind == INSTANCE:
        return _check_instance(ctx, decl)
    if kind == HANDLER:
        return check_handler(ctx, decl)
    return False


def _refer_indices(ctx: Context, decl: ast.OtherDecl, kinds: list[str]) -> None:
    """Uses of the index types and families a declaration names; an index type that is
    no declaration of the module is reported."""
    own = {id(n) for n in decl.names}
    for name in clause_names(decl.clause):
        if id(name) not in own and name.text in ctx.top:
            ctx.ref(name.span, SymbolKey(name.text))
    for kind in kinds:
        if kind not in ctx.top:
            ctx.report(rules.UNDEFINED_NAME, f"undefined index '{kind}'", decl.name.span)


def _check_instance(ctx: Context, decl: ast.OtherDecl) -> bool:
    """`instance i : Resolve[Loose]`: an interface of the module, given one constructor of
    its index for each static parameter."""
    found = read_instance(ctx, decl)
    if found is None:
        return False
    ev = Evaluator(ctx)
    interface = ev.interface(found.interface)
    if interface is None:
        return False
    if unknown_type(ctx, interface.types) is not None:
        return False  # its interface is checked names-only
    _refer_indices(ctx, decl, [])
    if len(found.statics) != len(interface.statics):
        ctx.report(
            rules.ARGUMENT_COUNT,
            f"{interface.name} takes {len(interface.statics)} static arguments, not "
            f"{len(found.statics)}",
            decl.span,
        )
        return True
    for given, (pname, kind) in zip(found.statics, interface.statics, strict=True):
        ctors = ev.index_of(kind) or ()
        if given not in ctors:
            ctx.report(
                rules.DECLARED_TYPE_MISMATCH,
                f"{pname} of {interface.name} is one of {kind}'s constructors "
                f"({', '.join(ctors)}), not {given}",
                decl.span,
            )
    return True
