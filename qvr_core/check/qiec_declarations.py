"""QIEC's declarations as typed records: indices, indexed families, interfaces with static
parameters, their instances, handlers, and a computation's header.

quivers 0.25.2 (`dsl/ast_nodes/qiec.py`, its guide's "indexed families" and "handlers"):

    index Evidence = Answered | Predict
    family Interpretation(e : Evidence) : Type
        constructor Chose : Int -> Interpretation(Answered)
        constructor Unanswered : Interpretation(Predict)
    effect Resolve[p : Precision]
        choose : Int -> Resolution[Int](p)
    instance unresolved : Resolve[Loose]
    handler h for Resolve[Loose] : Real -> Real [coverage=total, ...]
        return x =>
            ...
        choose(center : Int) resumes omega =>
            ...

An index is a finite set of constructors; a family's constructors each build a value at
one index (a GADT), so a `case` on a value whose index is known has one branch to take.
Each reader reports what is wrong in its declaration where it is written and returns
None then; the computations' evaluator (`qiec_eval.py`) reads the records.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from qvr_core.builtins.effects import UNIT_TYPE
from qvr_core.check.context import SymbolKey
from qvr_core.check.qiec_types import (
    KIND,
    DistT,
    FamilyT,
    QType,
    Reader,
    TypeSyntaxError,
    tokens,
    with_variables,
    written,
)
from qvr_core.syntax import ast
from qvr_core.syntax.walk import walk
from qvr_core.text import rules

if TYPE_CHECKING:
    from qvr_core.text.diagnostics import Rule
    from qvr_core.text.span import LineIndex, Span


class Reading(Protocol):
    """What the readers use of the checker's context: the text, the top-level names, and
    where to report (the context itself, or `Quiet` to read a declaration again where it
    is used without reporting its errors twice)."""

    text: str
    lines: LineIndex
    top: dict[str, ast.Decl]

    def report(self, rule: Rule, message: str, span: Span, **kwargs: object) -> None: ...

    def ref(self, span: Span, key: SymbolKey, definition: bool = False) -> None: ...

    def real(self, decl: object, span: Span) -> Span: ...


class Quiet:
    """A context that reports nothing: a declaration is checked where it is written, and
    read again, silently, where it is used."""

    def __init__(self, ctx: Reading) -> None:
        self.text = ctx.text
        self.top = ctx.top
        self.lines = ctx.lines
        self.real = ctx.real

    def report(self, rule: Rule, message: str, span: Span, **kwargs: object) -> None:
        return None

    def ref(self, span: Span, key: SymbolKey, definition: bool = False) -> None:
        return None


INDEX, FAMILY, EFFECT, INSTANCE, HANDLER = "index", "family", "effect", "instance", "handler"
COMPUTATION = "computation"
ONE_SHOT, MULTI_SHOT = "1", "omega"  # `resumes 1`, `resumes omega`


@dataclass(frozen=True)
class IndexType:
    name: str
    constructors: tuple[str, ...]

    def summary(self) -> str:
        return f"an index of {len(self.constructors)}: {' | '.join(self.constructors)}"


@dataclass(frozen=True)
class Constructor:
    """`constructor Around : A * Int -> Resolution[A](Loose)`."""

    name: str
    family: str
    fields: tuple[QType, ...]
    result: FamilyT


@dataclass(frozen=True)
class Family:
    name: str
    type_params: tuple[str, ...]
    index_params: tuple[tuple[str, str], ...]  # (name, index type)
    constructors: tuple[Constructor, ...]

    def constructor(self, name: str) -> Constructor | None:
        return next((c for c in self.constructors if c.name == name), None)

    def summary(self) -> str:
        """Its constructors with their types, for hover."""
        ctors = "; ".join(
            f"{c.name} : {' * '.join(written(f) for f in c.fields)}"
            f"{' -> ' if c.fields else ''}{written(c.result)}"
            for c in self.constructors
        )
        return f"an indexed family; constructors: {ctors or 'none'}"


@dataclass(frozen=True)
class Signature:
    params: tuple[QType, ...]
    result: QType


@dataclass(frozen=True)
class Interface:
    """A module's `effect`: its static parameters (index variables) and operations."""

    name: str
    statics: tuple[tuple[str, str], ...]
    operations: tuple[tuple[str, Signature], ...]

    def operation(self, name: str) -> Signature | None:
        return next((s for n, s in self.operations if n == name), None)

    @property
    def types(self) -> list[QType]:
        """Every type its operations take or give."""
        return [t for _, sig in self.operations for t in (*sig.params, sig.result)]

    def summary(self) -> str:
        ops = "; ".join(
            f"{n} : {' * '.join(written(t) for t in s.params) or UNIT_TYPE} -> {written(s.result)}"
            for n, s in self.operations
        )
        return f"operations: {ops or 'none'} (a handler answers them)"


@dataclass(frozen=True)
class Instance:
    """`instance unresolved : Resolve[Loose]`: the interface at the given indices."""

    name: str
    interface: str
    statics: tuple[str, ...]


@dataclass(frozen=True)
class OperationClause:
    """`choose(center : Int) resumes omega =>` and its body."""

    operation: str
    params: tuple[str, ...]
    resumes: str
    body: tuple[ast.Clause, ...]


@dataclass(frozen=True)
class Handler:
    name: str
    interface: str
    statics: tuple[str, ...]
    input: QType  # the handled computation's result, bound by the return clause
    output: QType  # what the handler gives
    return_param: str
    return_body: tuple[ast.Clause, ...]
    clauses: tuple[OperationClause, ...]

    @property
    def info(self) -> HandlerInfo:
        """What the module keeps of it: no bodies, so nothing that has a place."""
        resumes = tuple((c.operation, c.resumes) for c in self.clauses)
        return HandlerInfo(
            self.name, self.interface, self.statics, self.input, self.output, resumes
        )


@dataclass(frozen=True)
class HandlerInfo:
    """A checked handler as the module keeps it (hover, completion)."""

    name: str
    interface: str
    statics: tuple[str, ...]
    input: QType
    output: QType
    resumes: tuple[tuple[str, str], ...]  # (operation, ONE_SHOT or MULTI_SHOT)

    def summary(self) -> str:
        statics = f"[{', '.join(self.statics)}]" if self.statics else ""
        resumes = ", ".join(
            f"{op} resumes {'once' if how == ONE_SHOT else 'any number of times'}"
            for op, how in self.resumes
        )
        return (
            f"handles {self.interface}{statics}: a body of {written(self.input)} gives "
            f"{written(self.output)}; {resumes or 'no operation clauses'}"
        )


@dataclass(frozen=True)
class Header:
    """`define f[e : Evidence](x : Real, ...) : Int !{random | rho lacks random} =`."""

    name: str
    statics: tuple[tuple[str, str], ...]
    params: tuple[tuple[str, QType], ...]
    result: QType
    row: tuple[str, ...]
    open_row: bool


def clause_reader(ctx: Reading, decl: object, clause: ast.Clause) -> Reader:
    """The tokens of a clause's first line, up to its body (all of it when it has none).
    `decl` is the declaration it is in: one an incremental check kept sits where an
    earlier text had it, and `ctx.real` says where it is in this one."""
    start = ctx.real(decl, clause.span).start
    end = ctx.real(decl, clause.body[0].span if clause.body else clause.span)
    stop = end.start if clause.body else end.end
    return Reader(tokens(ctx.text, start, stop), stop)


def _reader(ctx: Reading, decl: ast.OtherDecl) -> Reader:
    """The header's tokens: from the declaration's start to its first body line."""
    return clause_reader(ctx, decl, decl.clause)


def _syntax(ctx: Reading, what: str, err: TypeSyntaxError) -> None:
    at = ctx.lines.span(err.offset, err.offset + 1)
    ctx.report(rules.DECLARED_TYPE_MISMATCH, f"{what}: {err}", at)


def unknown_type(ctx: Reading, types: list[QType]) -> str | None:
    """The first family a type names that the module does not declare (quivers' prelude
    types beyond the kernel's, such as lists, keep the names-only check), or None."""
    stack = list(types)
    while stack:
        t = stack.pop()
        if isinstance(t, FamilyT):
            decl = ctx.top.get(t.family)
            if not (isinstance(decl, ast.OtherDecl) and decl.clause.kind == FAMILY):
                return t.family
            stack.extend(t.statics)
        elif isinstance(t, DistT):
            stack.append(t.element)
    return None


def read_index(decl: ast.OtherDecl) -> IndexType:
    ctors = tuple(
        p.names[0].text for p in decl.clause.parts if isinstance(p, ast.Clause) and p.names
    )
    return IndexType(decl.name.text, ctors)


def read_family(ctx: Reading, decl: ast.OtherDecl) -> Family | None:
    r = _reader(ctx, decl)
    try:
        r.take(FAMILY)
        name = r.name().text
        type_params = [n.text for n, _ in r.binders("]")] if r.accept("[") else []
        index_params = [(n.text, k.text) for n, k in r.binders(")")] if r.accept("(") else []
        r.take(":")
        r.take(KIND)
    except TypeSyntaxError as err:
        _syntax(ctx, f"family {decl.name.text}", err)
        return None
    variables = frozenset(type_params)
    ctors: list[Constructor] = []
    for line in decl.clause.body:
        if line.kind != "constructor" or not line.names:
            continue
        lr = clause_reader(ctx, decl, line)
        try:
            lr.take("constructor")
            cname = lr.name().text
            lr.take(":")
            fields, result = lr.signature()
        except TypeSyntaxError as err:
            _syntax(ctx, f"constructor {line.names[0].text}", err)
            return None
        result = with_variables(result, variables)
        if not isinstance(result, FamilyT) or result.family != name:
            ctx.report(
                rules.DECLARED_TYPE_MISMATCH,
                f"constructor {cname} builds a value of family {name}, written "
                f"{name}(...), not {result}",
                line.span,
            )
            return None
        if len(result.index) != len(index_params):
            ctx.report(
                rules.ARGUMENT_COUNT,
                f"family {name} takes {len(index_params)} indices, but constructor {cname} "
                f"gives {len(result.index)}",
                line.span,
            )
            return None
        for (_, kind), given in zip(index_params, result.index, strict=True):
            if not index_has(ctx, kind, given):
                ctx.report(
                    rules.DECLARED_TYPE_MISMATCH,
                    f"constructor {cname}: {given} is no constructor of index {kind}",
                    line.span,
                )
                return None
        ctors.append(
            Constructor(cname, name, tuple(with_variables(f, variables) for f in fields), result)
        )
    return Family(name, tuple(type_params), tuple(index_params), tuple(ctors))


def clause_names(clause: ast.Clause) -> list[ast.Name]:
    """The names a clause is written with, its indented lines' included."""
    return [n for n in walk(clause) if isinstance(n, ast.Name)]


def index_has(ctx: Reading, kind: str, given: str) -> bool:
    decl = ctx.top.get(kind)
    if not (isinstance(decl, ast.OtherDecl) and decl.clause.kind == INDEX):
        return False
    return given in read_index(decl).constructors


def read_interface(ctx: Reading, decl: ast.OtherDecl) -> Interface | None:
    r = _reader(ctx, decl)
    try:
        r.take(EFFECT)
        name = r.name().text
        statics = [(n.text, k.text) for n, k in r.binders("]")] if r.accept("[") else []
    except TypeSyntaxError as err:
        _syntax(ctx, f"effect {decl.name.text}", err)
        return None
    ops: list[tuple[str, Signature]] = []
    for line in decl.clause.body:
        if line.kind != "operation" or not line.names:
            continue
        lr = clause_reader(ctx, decl, line)
        try:
            op = lr.name().text
            if lr.accept("["):
                raise TypeSyntaxError("an operation's own static binders", lr.offset)
            lr.take(":")
            params, result = lr.signature()
        except TypeSyntaxError as err:
            _syntax(ctx, f"operation {line.names[0].text}", err)
            return None
        ops.append((op, Signature(params, result)))
    return Interface(name, tuple(statics), tuple(ops))


def read_instance(ctx: Reading, decl: ast.OtherDecl) -> Instance | None:
    r = _reader(ctx, decl)
    try:
        r.take(INSTANCE)
        name = r.name().text
        r.take(":")
        applied = r.qtype()
    except TypeSyntaxError as err:
        _syntax(ctx, f"instance {decl.name.text}", err)
        return None
    if not isinstance(applied, FamilyT) or applied.index:
        return None
    statics = tuple(s.family for s in applied.statics if isinstance(s, FamilyT))
    return Instance(name, applied.family, statics)


def read_handler(ctx: Reading, decl: ast.OtherDecl) -> Handler | None:
    r = _reader(ctx, decl)
    try:
        r.take(HANDLER)
        name = r.name().text
        r.take("for")
        applied = r.qtype()
        r.take(":")
        params, output = r.signature()
    except TypeSyntaxError as err:
        _syntax(ctx, f"handler {decl.name.text}", err)
        return None
    if not isinstance(applied, FamilyT) or applied.index or len(params) != 1:
        ctx.report(
            rules.DECLARED_TYPE_MISMATCH,
            f"handler {name} is written `handler {name} for Interface : A -> B`",
            decl.name.span,
        )
        return None
    statics = tuple(s.family for s in applied.statics if isinstance(s, FamilyT))
    ret_param: str = ""
    ret_body: tuple[ast.Clause, ...] = ()
    clauses: list[OperationClause] = []
    for line in decl.clause.body:
        if line.kind == "return_clause":
            local = line.parts[0]
            if isinstance(local, ast.Clause) and isinstance(local.parts[0], ast.Name):
                ret_param, ret_body = local.parts[0].text, line.body
        elif line.kind == "operation_clause":
            op = line.parts[0]
            assert isinstance(op, ast.Name)
            names = [
                p.parts[0].text
                for p in line.parts[1:]
                if isinstance(p, ast.Clause) and isinstance(p.parts[0], ast.Name)
            ]
            last = line.parts[-1]
            resumes = (
                MULTI_SHOT if isinstance(last, ast.Name) and last.text == MULTI_SHOT else ONE_SHOT
            )
            clauses.append(OperationClause(op.text, tuple(names), resumes, line.body))
    return Handler(
        name, applied.family, statics, params[0], output, ret_param, ret_body, tuple(clauses)
    )


def read_header(ctx: Reading, decl: ast.OtherDecl) -> Header | None:
    r = _reader(ctx, decl)
    try:
        r.take("define")
        name = r.name().text
        statics = [(n.text, k.text) for n, k in r.binders("]")] if r.accept("[") else []
        r.take("(")
        params: list[tuple[str, QType]] = []
        while not r.accept(")"):
            pname = r.name().text
            r.take(":")
            params.append((pname, r.qtype()))
            if not r.accept(","):
                r.take(")")
                break
        r.take(":")
        result = r.qtype()
        listed, tail = r.row()
    except TypeSyntaxError as err:
        _syntax(ctx, f"define {decl.name.text}", err)
        return None
    return Header(
        name,
        tuple(statics),
        tuple(params),
        result,
        tuple(t.text for t in listed),
        tail is not None,
    )
