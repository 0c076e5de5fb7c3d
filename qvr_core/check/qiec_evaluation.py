"""The state and the expressions of the checker's evaluation of QIEC computations.

`Evaluation` holds what one run of a computation keeps (the draws and weights it made,
the handlers being run, the defines being called) and evaluates expressions over the
checker's values (`qiec_values.py`): arithmetic folded where the file knows both sides,
lists, indexing, lambdas, `map`/`fold`/`traverse`/`logsumexp_over`, the families as
distributions and `log_prob`. The statements, calls and handlers are `Evaluator`'s
(`qiec_eval.py`); the entry points that check declarations are in `qiec_checks.py`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeGuard, TypeVar

from qvr_core.builtins import FAMILIES, FUNCTIONS, bind, resolved
from qvr_core.builtins.effects import (
    CATEGORICAL,
    COMPUTATION_FUNCTIONS,
    KNOWN_VALUES,
    LENGTH,
    LOG_PROB,
    LOGSUMEXP,
    LOGSUMEXP_OVER,
    MIXTURE,
    REAL_TYPE,
    SITE,
    TO_INT,
    TO_REAL,
    TRAVERSE,
    WEIGHT,
    WHOLE_VALUED,
)
from qvr_core.builtins.functions import FOLD, MAP
from qvr_core.check.context import SymbolKey
from qvr_core.check.defines import Line
from qvr_core.check.qiec_declarations import (
    COMPUTATION,
    EFFECT,
    FAMILY,
    HANDLER,
    INDEX,
    INSTANCE,
    Constructor,
    Family,
    Handler,
    Header,
    Interface,
    Quiet,
    read_family,
    read_handler,
    read_header,
    read_index,
    read_instance,
    read_interface,
)
from qvr_core.check.qiec_types import (
    BOOL,
    INT,
    STRING,
    BaseT,
    DistT,
    QType,
    TensorT,
)
from qvr_core.check.qiec_values import (
    Built,
    Closure,
    Dist,
    Items,
    NotRun,
    Opaque,
    Scalar,
    Tagged,
    Value,
    arithmetic,
    as_real,
    describe,
    fits,
    log_density,
    real,
    select,
    type_of,
)
from qvr_core.check.terms import Call, Num, Ref, Stack, Term
from qvr_core.syntax import ast
from qvr_core.text import rules
from qvr_core.text.span import Span

if TYPE_CHECKING:
    from qvr_core.check.context import Context
    from qvr_core.text.diagnostics import Rule

#: The most steps one evaluation may take: lists the file writes are short, and a body
#: that would take longer is refused, not run for ever.
MOST_STEPS = 200_000

_T = TypeVar("_T")


class Refused(Exception):
    """What the evaluator does not type: the define keeps the names-only check."""


class Failed(Exception):
    """An error: the evaluation stops. `reported` unless it lies inside a callee's body,
    whose own check reports it (then the call reports `rule` and the message)."""

    def __init__(
        self, message: str, rule: Rule = rules.DECLARED_TYPE_MISMATCH, reported: bool = False
    ) -> None:
        super().__init__(message)
        self.rule = rule
        self.reported = reported


@dataclass(frozen=True)
class InScope:
    """An instance in scope: the module's, or one `with instance` binds."""

    name: str
    interface: str
    statics: tuple[str, ...]


@dataclass
class HandleFrame:
    """One `handle i with h in body` being run: its answers so far and how many of them
    the current replay has used. `shots` numbers each answer by the resumption that gave
    it (one count per frame, so a replay of an enclosing body numbers them alike), and
    `drawn` counts the draws of the current run of the body: together they name a draw
    of the body, which a replay gives back instead of drawing again."""

    instance: str
    handler: Handler
    interface: Interface
    statics: tuple[str, ...]
    body: tuple[ast.Clause, ...]
    env: dict[str, object]
    owner: object | None  # the declaration whose text the handled body is
    answers: list[Value] = field(default_factory=list)
    shots: list[int] = field(default_factory=list)
    cursor: int = 0
    resumed: int = 0
    drawn: int = 0


class Performed(Exception):
    def __init__(self, frame: HandleFrame, operation: str, args: tuple[Value, ...]) -> None:
        super().__init__(operation)
        self.frame = frame
        self.operation = operation
        self.args = args


@dataclass
class DefineScope:
    """The define being run: its name, its row, and whether the row is open."""

    name: str
    row: tuple[str, ...]
    open_row: bool


class Evaluation:
    """Runs QIEC expressions over checker values; `staging` when a program calls the
    computation (then draws and weights are recorded as lines, and what a run cannot do
    is `NotRun`)."""

    def __init__(self, ctx: Context, staging: bool = False, root: object | None = None) -> None:
        self.ctx = ctx
        self.staging = staging
        #: the declaration being checked: only what its own text does is reported (None:
        #: a program's step, whose arguments are its own text)
        self.root = root
        #: the declarations whose text is being run, innermost last (a callee's body, a
        #: handler's clause); an incremental check reads a kept one where it is now
        self.owners: list[object] = []
        self.lines: list[Line] = []
        self.frames: list[HandleFrame] = []
        self.scopes: list[DefineScope] = []
        self.resumptions: list[Callable[[Value, Span], Value]] = []
        self.reported: set[tuple[str, int, str]] = set()
        self.draws = 0
        self.steps = 0
        self._records: dict[tuple[int, object], Any] = {}  # `_read`'s
        #: names a run decides that pick one of n categories (`log_prob(Categorical(p), k)`
        #: with k a program's value): a data file must give one of 0..n-1
        self.picks: dict[str, int] = {}
        #: the draws made in handled bodies, by `_draw_key`, for their replays
        self.replayed: dict[tuple[tuple[int, int, tuple[int, ...], int], ...], Value] = {}

    # ------------------------------------------------------------ reporting

    @property
    def muted(self) -> bool:
        """Inside a replayed prefix: what happens there happened before."""
        return any(f.cursor < len(f.answers) for f in self.frames)

    @property
    def owner(self) -> object | None:
        """The declaration whose text is being run (None: a program's step)."""
        return self.owners[-1] if self.owners else None

    @property
    def own(self) -> bool:
        """Whether what is being run is the checked declaration's own text (a define's
        body, a program's arguments), not a callee's or a handler's, which their own
        checks report on."""
        return self.owner is self.root and not self.muted

    def _reporting(self, key: tuple[str, int, str]) -> bool:
        if key in self.reported or not self.own:
            return False
        self.reported.add(key)
        return True

    def report(self, rule: Rule, message: str, span: Span) -> bool:
        """Report where written (True), unless in a callee's text or reported before."""
        if not self._reporting((rule.code, span.start, message)):
            return False
        self.ctx.report(rule, message, span)
        return True

    def fail(self, rule: Rule, message: str, span: Span) -> Failed:
        return Failed(message, rule, self.report(rule, message, span))

    def ref(self, name: ast.Name) -> None:
        """A use of a top-level declaration, in the checked declaration's own text."""
        if name.text in self.ctx.top and self._reporting(("ref", name.span.start, name.text)):
            self.ctx.ref(name.span, SymbolKey(name.text))

    def _tick(self) -> None:
        self.steps += 1
        if self.steps > MOST_STEPS:
            raise Refused(f"its evaluation past {MOST_STEPS} steps")

    # ------------------------------------------------------------ declarations

    def _decl(self, name: str, kind: str) -> ast.OtherDecl | None:
        decl = self.ctx.top.get(name)
        if isinstance(decl, ast.OtherDecl) and decl.clause.kind == kind:
            return decl
        return None

    def _read(self, decl: ast.OtherDecl, reader: Callable[[Quiet, ast.OtherDecl], _T]) -> _T:
        """A declaration read once per evaluation (a loop's constructor, a handler resumed
        many times, would read it again each time), silently: it is checked where it is."""
        key = (id(decl), reader)
        if key not in self._records:
            self._records[key] = reader(Quiet(self.ctx), decl)
        found: _T = self._records[key]
        return found

    def family(self, name: str) -> Family | None:
        decl = self._decl(name, FAMILY)
        return None if decl is None else self._read(decl, read_family)

    def index_of(self, name: str) -> tuple[str, ...] | None:
        decl = self._decl(name, INDEX)
        return None if decl is None else read_index(decl).constructors

    def interface(self, name: str) -> Interface | None:
        decl = self._decl(name, EFFECT)
        return None if decl is None else self._read(decl, read_interface)

    def handler(self, name: str) -> Handler | None:
        decl = self._decl(name, HANDLER)
        return None if decl is None else self._read(decl, read_handler)

    def header(self, name: str) -> tuple[Header, ast.OtherDecl] | None:
        decl = self._decl(name, COMPUTATION)
        if decl is None:
            return None
        found = self._read(decl, read_header)
        return None if found is None else (found, decl)

    def instance(self, name: str, env: dict[str, object]) -> InScope | None:
        local = env.get(name)
        if isinstance(local, InScope):
            return local
        decl = self._decl(name, INSTANCE)
        if decl is None:
            return None
        found = self._read(decl, read_instance)
        if found is None:
            return None
        return InScope(found.name, found.interface, found.statics)

    def declared(self, kind: str) -> list[ast.OtherDecl]:
        """The module's declarations of a kind (`family`, `handler`, ...), each looked up
        by name, so the frame asking depends on them and on the module's names."""
        names = [n for n, d in self.ctx.top.items() if isinstance(d, ast.OtherDecl)]
        found = [self.ctx.top.get(n) for n in names]
        return [d for d in found if isinstance(d, ast.OtherDecl) and d.clause.kind == kind]

    def constructor(self, name: str) -> tuple[Family, Constructor] | None:
        for decl in self.declared(FAMILY):
            if any(p.names and p.names[0].text == name for p in decl.clause.body):
                fam = self.family(decl.name.text)
                ctor = fam.constructor(name) if fam is not None else None
                if fam is not None and ctor is not None:
                    return fam, ctor
        return None

    def ctx_undefined(self, name: ast.Name, what: str, candidates: list[str]) -> Failed:
        """An undefined name, reported with its did-you-mean; the failure to raise."""
        reported = self._reporting((rules.UNDEFINED_NAME.code, name.span.start, what))
        if reported:
            self.ctx.undefined(name, what, candidates)
        return Failed(f"undefined {what} '{name.text}'", rules.UNDEFINED_NAME, reported)

    def index_names(self, fam: Family) -> frozenset[str]:
        out: set[str] = set()
        for _, kind in fam.index_params:
            out.update(self.index_of(kind) or ())
        return frozenset(out)

    def _list(self, xs: Value, fn: str, node: object) -> tuple[Value, ...]:
        at = span_of(node, self.ctx.lines.span(0, 0))
        if not isinstance(xs, Items):
            raise self.fail(
                rules.DECLARED_TYPE_MISMATCH,
                f"{fn} runs over a list, not {describe(xs)}",
                at,
            )
        return xs.items

    def apply(self, f: Value, args: tuple[Value, ...], span: Span) -> Value:
        """A lambda applied to its arguments, one parameter at a time (curried)."""
        for arg in args:
            if not isinstance(f, Closure):
                raise self.fail(
                    rules.DECLARED_TYPE_MISMATCH,
                    f"a function of {len(args)} values is expected here, not {describe(f)}",
                    span,
                )
            inner: dict[str, object] = dict(f.env)
            inner[f.param] = arg
            f = self.expr(f.body, inner)
        return f

    # ------------------------------------------------------------ expressions

    def expr(self, node: ast.Arith, env: dict[str, object]) -> Value:
        self._tick()
        span = node.span
        match node:
            case ast.Number(value=value, raw=raw):
                if _whole(raw):
                    return Scalar(INT, static=int(value), literal=True)
                return real(float(value))
            case ast.Literal(kind="int", value=value):
                return Scalar(INT, static=int(value), literal=True)
            case ast.Literal(kind="float", value=value):
                return real(float(value))
            case ast.Literal(kind="bool", value=value):
                return Scalar(BOOL, static=bool(value))
            case ast.Literal(kind="string", value=value):
                return Scalar(STRING, static=str(value))
            case ast.Var(name=name):
                return self._name(name, env)
            case ast.Unary(op=op, operand=operand):
                return self._unary(op, self.expr(operand, env), operand, span)
            case ast.Binary(op=op, left=left, right=right):
                return self._binary(op, self.expr(left, env), self.expr(right, env), node)
            case ast.ListExpr(items=items, tuple=False):
                return self._items(tuple(self.expr(i, env) for i in items), node)
            case ast.ListExpr(tuple=True):
                raise Refused("its tuples")
            case ast.Lambda(param=param, body=body):
                return Closure(
                    param.text,
                    body,
                    tuple((k, v) for k, v in env.items() if is_value(v)),
                )
            case ast.Index(base=base, indices=indices):
                return self._index(self._name(base.name, env), indices, env, node)
            case ast.Apply(func=func, args=args):
                return self._apply(func, args, env, span)
            case _:
                raise Refused(f"its {type(node).__name__.lower()} expression")

    def _name(self, name: ast.Name, env: dict[str, object]) -> Value:
        v = env.get(name.text)
        if (v is None or not is_value(v)) and self.staging and not self.scopes:
            raise NotRun(
                f"{name.text}, which is no value a computation takes (a value over plates?)"
            )
        if v is None or not is_value(v):
            reported = self.report_unbound(name, env)
            raise Failed(f"unbound variable '{name.text}'", rules.UNBOUND_VARIABLE, reported)
        assert is_value(v)
        return v

    def report_unbound(self, name: ast.Name, env: dict[str, object]) -> bool:
        if not self._reporting((rules.UNBOUND_VARIABLE.code, name.span.start, name.text)):
            return False
        scope = self.scopes[-1].name if self.scopes else "the computation"
        self.ctx.did_you_mean(
            rules.UNBOUND_VARIABLE,
            f"unbound variable '{name.text}' in define {scope}",
            name.span,
            name.text,
            [k for k, v in env.items() if is_value(v)],
        )
        return True

    def _unary(self, op: str, v: Value, node: ast.Arith, span: Span) -> Value:
        if op == "-" and isinstance(v, Scalar) and v.kind in (INT, REAL_TYPE):
            if v.static is not None and not isinstance(v.static, str):
                return Scalar(v.kind, static=-v.static, literal=v.literal)
            return Scalar(v.kind, term=_neg(v, span))
        if op == "not" and isinstance(v, Scalar) and v.kind == BOOL:
            if v.static is not None:
                return Scalar(BOOL, static=not v.static)
            return Scalar(BOOL, term=_neg_bool(v, span))
        raise self.fail(
            rules.DECLARED_TYPE_MISMATCH, f"{op} takes a number, not {describe(v)}", node.span
        )

    def _binary(self, op: str, a: Value, b: Value, node: ast.Binary) -> Value:
        span = node.span
        if not isinstance(a, Scalar) or not isinstance(b, Scalar):
            raise self.fail(
                rules.DECLARED_TYPE_MISMATCH,
                f"{op} takes two numbers, not {describe(a)} and {describe(b)}",
                span,
            )
        if op in ("&&", "||"):
            if a.kind != BOOL or b.kind != BOOL:
                raise self.fail(rules.DECLARED_TYPE_MISMATCH, f"{op} takes two Bools", span)
            return arithmetic(op, a, b, BOOL, span)
        kind = self._numbers(op, a, b, node)
        if op in ("==", "!=", "<", "<=", ">", ">="):
            return arithmetic(op, a, b, BOOL, span)
        return arithmetic(op, a, b, kind, span)

    def _numbers(self, op: str, a: Scalar, b: Scalar, node: ast.Binary) -> str:
        """The kind `a op b` computes in: both Int, or both Real (a whole-number literal
        goes with a Real); an Int variable beside a Real is an error (`real(n)`)."""
        if op in ("==", "!=") and a.kind == b.kind:
            return a.kind
        numeric = (INT, REAL_TYPE)
        if a.kind in numeric and b.kind in numeric:
            if a.kind == b.kind:
                if a.kind == INT and op == "/":
                    raise self.fail(
                        rules.DECLARED_TYPE_MISMATCH,
                        "/ divides Reals: write real(a) / real(b) for two Ints",
                        node.span,
                    )
                return a.kind
            if (a.kind == INT and a.literal) or (b.kind == INT and b.literal):
                return REAL_TYPE
            ints = node.left if a.kind == INT else node.right
            raise self.fail(
                rules.DECLARED_TYPE_MISMATCH,
                f"{self.ctx.source(ints.span)} is an Int and the other side of {op} a Real: "
                "QIEC never converts, write real(...)",
                ints.span,
            )
        raise self.fail(
            rules.DECLARED_TYPE_MISMATCH,
            f"{op} takes two numbers, not {describe(a)} and {describe(b)}",
            node.span,
        )

    def _items(self, values: tuple[Value, ...], node: ast.ListExpr) -> Value:
        if not values:
            raise Refused("its empty list")
        reals = any(isinstance(v, Scalar) and v.kind == REAL_TYPE for v in values)
        if reals:
            values = tuple(as_real(v) if isinstance(v, Scalar) else v for v in values)
        out = Items(values)
        if type_of(out) is None and not all(isinstance(v, Dist) for v in values):
            raise self.fail(
                rules.DECLARED_TYPE_MISMATCH,
                "a list's entries are of one type: " + ", ".join(describe(v) for v in values[:4]),
                node.span,
            )
        return out

    def _index(
        self, base: Value, indices: tuple[ast.Arith, ...], env: dict[str, object], node: ast.Index
    ) -> Value:
        v = base
        for ix in indices:
            i = self.expr(ix, env)
            if not isinstance(v, Items):
                raise self.fail(
                    rules.INDEX_PLATE,
                    f"{self.ctx.source(node.base.span)} is {describe(base)}: it has no entry "
                    "to pick",
                    ix.span,
                )
            if not isinstance(i, Scalar) or i.kind != INT:
                raise self.fail(
                    rules.DECLARED_TYPE_MISMATCH,
                    f"a list's entry is picked by an Int, not {describe(i)}",
                    ix.span,
                )
            if i.static is not None:
                k = int(i.static)
                if not 0 <= k < len(v.items):
                    raise self.fail(
                        rules.INDEX_PLATE,
                        f"entry {k} of a list of {len(v.items)} (entries from 0)",
                        ix.span,
                    )
                v = v.items[k]
            else:
                picked = select(i, v.items, ix.span) if self.staging else v.items[0]
                if picked is None:
                    raise NotRun("an entry of a list of non-numbers that a run picks")
                v = picked
        return v

    def _apply(
        self, func: ast.Name, args: tuple[ast.Arith, ...], env: dict[str, object], span: Span
    ) -> Value:
        name = func.text
        if name in (SITE, WEIGHT):
            if len(args) != 1:
                raise self.fail(rules.ARGUMENT_COUNT, f"{name} takes 1 value", span)
            return Tagged(name, self.expr(args[0], env))
        if name in (MAP.name, TRAVERSE.name):
            return self.lifted(func, args, env, span)
        if name == FOLD.name:
            if len(args) != 3:
                raise self.fail(
                    rules.ARGUMENT_COUNT,
                    f"fold takes 3 values (xs, init, f), not {len(args)}",
                    span,
                )
            items = self._list(self.expr(args[0], env), name, args[0])
            acc = self.expr(args[1], env)
            f = self.expr(args[2], env)
            for x in items:
                acc = self.apply(f, (acc, x), span)
            return acc
        if name == LOGSUMEXP_OVER.name:
            items = self._list(self.expr(args[0], env), name, args[0])
            f = self.expr(args[1], env)
            values = [self.apply(f, (x,), span) for x in items]
            return self._logsumexp(values, span)
        if name == LENGTH.name:
            xs = self.expr(args[0], env)
            return Scalar(INT, static=len(self._list(xs, name, args[0])))
        if name in (TO_REAL.name, TO_INT.name):
            x = self.expr(args[0], env)
            want, into = (INT, REAL_TYPE) if name == TO_REAL.name else (REAL_TYPE, INT)
            if not isinstance(x, Scalar) or (x.kind != want and not x.literal):
                raise self.fail(
                    rules.DECLARED_TYPE_MISMATCH,
                    f"{name} takes a{'n' if want == INT else ''} {want}, not {describe(x)}",
                    span,
                )
            static = (
                None
                if x.static is None
                else (float(x.static) if into == REAL_TYPE else int(x.static))
            )
            return Scalar(into, static=static, term=x.term)
        if name == LOG_PROB.name:
            return self._log_prob(args, env, span)
        if name == MIXTURE.name:
            ws = self.expr(args[0], env)
            comps = self.expr(args[1], env)
            if not isinstance(comps, Items) or not all(isinstance(c, Dist) for c in comps.items):
                raise self.fail(
                    rules.DECLARED_TYPE_MISMATCH,
                    "Mixture's components are a list of distributions",
                    span,
                )
            first = comps.items[0]
            assert isinstance(first, Dist)
            return Dist(MIXTURE.name, (("weights", ws), ("components", comps)), first.element)
        if self.header(name) is not None:  # the module's own define, before a builtin
            return self.call(func, [], args, env, span)
        if name in FAMILIES:
            return self._dist(func, args, env, span)
        if name in FUNCTIONS:
            return self._function(name, tuple(self.expr(a, env) for a in args), span)
        if name in COMPUTATION_FUNCTIONS:
            raise Refused(f"its function {name}")
        raise self.ctx_undefined(func, "function", [*FUNCTIONS, *COMPUTATION_FUNCTIONS])

    def _logsumexp(self, values: list[Value], span: Span) -> Value:
        if not all(isinstance(v, Scalar) and fits(v, BaseT(REAL_TYPE)) for v in values):
            raise self.fail(
                rules.DECLARED_TYPE_MISMATCH, "logsumexp_over's function gives Reals", span
            )
        scalars = [v for v in values if isinstance(v, Scalar)]
        if all(s.static is not None for s in scalars):
            xs = [_number(s.static) for s in scalars]
            top = max(xs)
            return real(top + math.log(sum(math.exp(x - top) for x in xs)))
        if not self.staging:
            return Scalar(REAL_TYPE)
        stacked = Stack(tuple(s.as_term(span) for s in scalars), span)
        return Scalar(REAL_TYPE, term=Call(LOGSUMEXP, (stacked,), span))

    def _function(self, name: str, args: tuple[Value, ...], span: Span) -> Value:
        if not all(isinstance(a, Scalar) and a.kind in (INT, REAL_TYPE) for a in args):
            raise self.fail(
                rules.DECLARED_TYPE_MISMATCH,
                f"{name} takes numbers here, not {', '.join(describe(a) for a in args)}",
                span,
            )
        scalars = [a for a in args if isinstance(a, Scalar)]
        kind = INT if name in WHOLE_VALUED and all(a.kind == INT for a in scalars) else REAL_TYPE
        if len(scalars) == 1 and scalars[0].static is not None:
            folded = _math(name, float(scalars[0].static))
            if folded is not None:
                return Scalar(kind, static=int(folded) if kind == INT else folded)
        if not self.staging and any(a.term is None and a.static is None for a in scalars):
            return Scalar(kind)
        return Scalar(kind, term=Call(name, tuple(a.as_term(span) for a in scalars), span))

    def _dist(
        self, func: ast.Name, args: tuple[ast.Arith, ...], env: dict[str, object], span: Span
    ) -> Value:
        family = resolved(FAMILIES[func.text])
        bound = bind(family, args, {})
        if isinstance(bound, str):
            raise self.fail(rules.FAMILY_ARGUMENTS, f"{family.name}: {bound}", span)
        schema, given = bound
        values: list[tuple[str, Value]] = []
        for p in schema:
            node = given.get(p.name)
            if node is None:
                continue
            if not is_arith(node):
                raise Refused(f"its argument of {family.name}")
            v = self.expr(node, env)
            values.append((p.name, as_real(v) if isinstance(v, Scalar) else v))
        element = INT if family.discrete else REAL_TYPE
        return Dist(family.name, tuple(values), element)

    def _log_prob(self, args: tuple[ast.Arith, ...], env: dict[str, object], span: Span) -> Value:
        if len(args) != 2:
            raise self.fail(
                rules.ARGUMENT_COUNT,
                f"log_prob takes 2 values (distribution, value), not {len(args)}",
                span,
            )
        dist = self.expr(args[0], env)
        x = self.expr(args[1], env)
        if not isinstance(dist, Dist):
            raise self.fail(
                rules.DECLARED_TYPE_MISMATCH,
                f"log_prob takes a distribution, not {describe(dist)}",
                args[0].span,
            )
        if not isinstance(x, Scalar) or not fits(x, BaseT(dist.element)):
            raise self.fail(
                rules.DECLARED_TYPE_MISMATCH,
                f"{dist.family} gives {dist.element}s, but {self.ctx.source(args[1].span)} "
                f"is {describe(x)}",
                args[1].span,
            )
        if not self.staging:
            return Scalar(REAL_TYPE)
        probs = dist.arg("probs")
        if dist.family == CATEGORICAL and isinstance(x.term, Ref) and isinstance(probs, Items):
            self.picks[x.term.name] = len(probs.items)
        out = log_density(dist, as_real(x) if dist.element == REAL_TYPE else x, span)
        if out is None:
            raise NotRun(
                f"log_prob of {dist.family}: qvr scores a family whose arguments are numbers "
                "(a Categorical's a list of them), and a Mixture of such families"
            )
        return out

    # ---------------------------------------------------------------- helpers

    def lifted(
        self, fn: ast.Name, nodes: tuple[object, ...], env: dict[str, object], span: Span
    ) -> Value:
        """`traverse(xs, f)` and `map(xs, f)` (`Evaluator.lifted`)."""
        raise NotImplementedError

    def call(
        self,
        callee: ast.Name,
        statics: list[ast.Name],
        nodes: tuple[object, ...],
        env: dict[str, object],
        span: Span,
    ) -> Value:
        """A call of a define (`Evaluator.call`)."""
        raise NotImplementedError


def is_arith(node: object) -> TypeGuard[ast.Arith]:
    return isinstance(
        node,
        ast.Number
        | ast.Var
        | ast.Unary
        | ast.Binary
        | ast.Apply
        | ast.Literal
        | ast.Index
        | ast.ListExpr
        | ast.Lambda
        | ast.MethodCall,
    )


def _number(x: object) -> float:
    assert isinstance(x, int | float)
    return float(x)


def is_value(v: object) -> TypeGuard[Value]:
    return isinstance(v, Scalar | Items | Built | Opaque | Dist | Closure | Tagged)


def span_of(node: object, otherwise: Span) -> Span:
    span = getattr(node, "span", None)
    return span if isinstance(span, Span) else otherwise


def _whole(raw: str) -> bool:
    return raw.isdigit()


def unknown_value(t: QType) -> Value:
    """A value of type `t` that a run decides (checking a define alone)."""
    match t:
        case BaseT(name=name):
            return Scalar(name)
        case TensorT(element=e, dims=dims):
            inner: Value = Scalar(e)
            for d in reversed(dims):
                inner = Items(tuple(inner for _ in range(d)))
            return inner
        case DistT(element=BaseT(name=e)):
            return Dist("", (), e)
        case _:
            return Opaque(t)


def _neg(v: Scalar, span: Span) -> Term:
    from qvr_core.check.terms import Unary

    return Unary("-", v.as_term(span), span)


def _neg_bool(v: Scalar, span: Span) -> Term:
    from qvr_core.check.terms import Op

    return Op("-", Num(1.0, span), v.as_term(span), span)


def _math(name: str, x: float) -> float | None:
    fn = KNOWN_VALUES.get(name)
    if fn is None:
        return None
    try:
        return fn(x)
    except (ValueError, OverflowError):
        return None
