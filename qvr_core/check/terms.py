"""Checked arithmetic: the value of a `let`, a `score` or a template argument, as run.

The checker lowers each expression it has typed into these terms, so the runtime
evaluates what was checked without reading the syntax tree: a name is a `Ref`
(a local, a program parameter or a data variable), a builtin is a `Call` of a
name in `qvr_core.builtins.FUNCTIONS` (a method `x.sum(0)` is the same call with
its `axis`), an operator an `Op` of a symbol in `OPERATORS`, and a gather
`alpha[group]` a `Gather` whose indices are terms or `None` for every entry of a
plate (`sigma[School]`), and quivers' `factor v : Verb in body` a `Comprehension`
(the body once per entry of its plates, its binders whole numbers read as `Ref`s),
and quivers' `fold(xs, init, acc -> x -> body)` a `Fold` (a loop carrying its
accumulator, never the body copied once per entry).
`span` is where the term is written (kept in place by the incremental checker like
every other fact), `line` its 1-based line for the runtime's messages.

`lower` returns None for what the checker does not type; such a program is not
run (the run is refused with the checker's reason).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace

from qvr_core.builtins import FUNCTIONS, METHODS, OPERATORS
from qvr_core.builtins.deduction_calls import GOAL_WEIGHT, PARSE
from qvr_core.builtins.functions import FOLD, MAP
from qvr_core.check.deduction_system import Deduction
from qvr_core.syntax import ast
from qvr_core.text.span import Span


class _Written:
    span: Span

    @property
    def line(self) -> int:
        return self.span.start_line + 1


@dataclass(frozen=True)
class Num(_Written):
    value: float
    span: Span


@dataclass(frozen=True)
class Ref(_Written):
    name: str
    span: Span


@dataclass(frozen=True)
class Unary(_Written):
    op: str  # "-" or "not"
    operand: Term
    span: Span


@dataclass(frozen=True)
class Op(_Written):
    op: str  # a key of OPERATORS
    left: Term
    right: Term
    span: Span


@dataclass(frozen=True)
class Call(_Written):
    fn: str  # a key of FUNCTIONS
    args: tuple[Term, ...]
    span: Span
    axis: int | None = None  # `x.sum(0)`: reduce along this axis only
    # the `define` a function argument names (`ode_rk45(f, ...)`'s f), not among `args`:
    # a body of its own names, so `subterms` and `refs` do not enter it
    function: Body | None = None
    #: `parse(D, sentence)`: the checked deduction D (`args` is the sentence); set by the
    #: model checker, which knows the declarations (`check/deduction_calls.py`)
    deduction: Deduction | None = None
    #: `log_prob(F(a, b), x)` inside a computation: the family F of the registry and the
    #: parameters `args[1:]` are bound to (`args[0]` is x); set by the computation
    #: evaluator (`check/qiec_values.density`), which the runtime scores with the
    #: registry's own torch distribution rather than a formula written here
    density: Density | None = None


@dataclass(frozen=True)
class Density:
    """Which log density a `log_prob` call is: a family of the registry and the names of
    the parameters its arguments after the value are bound to."""

    family: str
    params: tuple[str, ...]


@dataclass(frozen=True)
class Body:
    """A pure `define` as a function of its parameters (`ode_rk45`'s right-hand side): each
    of `lines` binds a name to a term over the parameters and the names bound before it,
    and `result` is its value. `sizes[i]` is parameter i's length: 0 for a number, n for a
    vector of n entries (`z : State -> Real`, which the body reads as `z[0]`)."""

    name: str
    params: tuple[str, ...]
    sizes: tuple[int, ...]
    lines: tuple[tuple[str, Term], ...]
    result: Term
    span: Span


@dataclass(frozen=True)
class Gather(_Written):
    base: str
    indices: tuple[Term | None, ...]  # None: every entry of the plate on this axis
    span: Span
    # the plate of `base` each index reads, as the checker typed it (empty when unknown,
    # as for data): a one-entry plate has no tensor axis, and the runtime must know that
    plates: tuple[str, ...] = ()


@dataclass(frozen=True)
class Stack(_Written):
    items: tuple[Term, ...]  # `[a, b]`: a new last axis
    span: Span


@dataclass(frozen=True)
class Comprehension(_Written):
    """`factor v : Verb, c : Class in body`: a value over the plates `plates` (sizes
    `sizes`) whose entry at (i, j) is `body` with `v` = i, `c` = j, then the body's own
    axes, as quivers' compiler builds it (one comprehension per binder, the first
    outermost). The case form `factor c : Class in {0 -> a, 1 -> b}` has one binder and
    `cases` instead of a body: entry k is case k's value, the binder reading k in it.
    The binders are names of this term only: `refs` does not count them as reads.
    quivers' `map(xs, x -> body)` is one too: binder `x#` over xs's first plate, the
    body reading `xs[x#]` for `x` (`_mapped`)."""

    binders: tuple[str, ...]
    plates: tuple[str, ...]
    sizes: tuple[int, ...]
    body: Term | None
    cases: tuple[Term, ...]
    span: Span


@dataclass(frozen=True)
class Fold(_Written):
    """quivers' `fold(xs, init, acc -> x -> body)`, a left fold along xs's first plate
    (`plate`, `size` entries): the accumulator `acc` starts as `init`'s value, and entry
    k of `items` (read as `item`) gives the next one as `body`. Its value is the last
    accumulator. It is a term of its own, not the body copied once per entry: quivers'
    compiler unrolls it so, which grows exponentially where the body reads `acc` twice.
    `acc` and `item` are names of the body only: `refs` does not count them as reads."""

    items: Term  # xs as read: a name, or an entry `xs[x#]` where xs is a map's parameter
    plate: str
    size: int
    init: Term
    acc: str
    item: str
    body: Term
    span: Span


Term = Num | Ref | Unary | Op | Call | Gather | Stack | Comprehension | Fold


def lower(
    node: ast.Arith,
    is_plate: Callable[[str], bool],
    plates_of: Callable[[str], tuple[str, ...]] = lambda _: (),
    size_of: Callable[[str], int | None] = lambda _: None,
    constant: Callable[[str], float | None] = lambda _: None,
) -> Term | None:
    """The term of a typed expression; None when it holds what the checker does not type.

    `is_plate(name)` says whether an index names a plate object (`sigma[School]`);
    `plates_of(name)` the plates of a value the checker typed, outermost first;
    `size_of(name)` the size of a finite object, which an object argument of a function
    is lowered to (`lags(y, Lag)` reads Lag's size: a number); `constant(name)` the number
    a name used as an index is bound to (`let i = 1`), lowered as that number is
    (`beta[i]` is `beta[1]`, an entry the checker has checked), so no reader decides it."""
    span = node.span
    match node:
        case ast.Number(value=value):
            return Num(float(value), span)
        case ast.Literal(kind="int" | "float" | "bool", value=value):
            return Num(float(value), span)
        case ast.Var(name=name):
            return Ref(name.text, span)
        case ast.Unary(op=op, operand=operand):
            inner = lower(operand, is_plate, plates_of, size_of, constant)
            if inner is None:
                return None
            return Unary(op, inner, span)
        case ast.Binary(op=op) if op in OPERATORS:
            return _binary(node, is_plate, plates_of, size_of, constant)
        case ast.Apply(func=func, args=(ast.Var() as xs, ast.Lambda() as f)) if (
            func.text == MAP.name and not isinstance(f.body, ast.Lambda)
        ):
            return _mapped(xs.name.text, f, span, is_plate, plates_of, size_of, constant)
        case ast.Apply(func=func) if func.text == MAP.name:  # misuse: the checker reports it
            return Comprehension(("",), ("",), (-1,), Num(0.0, span), (), span)
        case ast.Apply(
            func=func, args=(ast.Var() as xs, init, ast.Lambda(body=ast.Lambda() as g) as f)
        ) if func.text == FOLD.name and not isinstance(g.body, ast.Lambda):
            return _folded(xs, init, f, span, is_plate, plates_of, size_of, constant)
        case ast.Apply(func=func) if func.text == FOLD.name:  # misuse: the checker reports it
            return Fold(Ref("", span), "", -1, Num(0.0, span), "", "", Num(0.0, span), span)
        case ast.Apply(func=func, args=args) if func.text in FUNCTIONS:
            fn = FUNCTIONS[func.text]
            if not fn.accepts(len(args)) and not fn.defines:  # a solver's checker says why
                return None
            items = _all(args, is_plate, plates_of, size_of, constant, fn.objects_at)
            return None if items is None else Call(func.text, items, span)
        case ast.Apply(func=func, args=(ast.Var(), ast.Var() as sentence)) if func.text == PARSE:
            return Call(PARSE, (Ref(sentence.name.text, sentence.span),), span)
        case ast.MethodCall(receiver=receiver, method=method, args=()) if (
            method.text == GOAL_WEIGHT
        ):
            return Ref(receiver.name.text, span)  # a chart is bound to its goal's weight
        case ast.MethodCall(receiver=receiver, method=method, args=args):
            if method.text not in METHODS or len(args) > 1:
                return None
            axis: int | None = None
            if args:
                a = args[0]
                if not isinstance(a, ast.Number) or not float(a.value).is_integer():
                    return None
                if METHODS[method.text].shape != "reduce":
                    return None
                axis = int(a.value)
            return Call(method.text, (Ref(receiver.name.text, span),), span, axis)
        case ast.Index(base=base, indices=indices):
            out: list[Term | None] = []
            for i in indices:
                if isinstance(i, ast.Var) and is_plate(i.name.text):
                    out.append(None)
                    continue
                number = constant(i.name.text) if isinstance(i, ast.Var) else None
                if number is not None:
                    out.append(Num(number, i.span))
                    continue
                t = lower(i, is_plate, plates_of, size_of, constant)
                if t is None:
                    return None
                out.append(t)
            plates = plates_of(base.name.text)[: len(out)]
            return Gather(base.name.text, tuple(out), span, plates)
        case ast.ListExpr(items=items, tuple=False):
            terms = _all(items, is_plate, plates_of, size_of, constant)
            return None if terms is None else Stack(terms, span)
        case ast.Factor():
            return _comprehension(node, is_plate, plates_of, size_of, constant)
        case _:
            return None


def binder_object(obj: ast.ObjectExpr) -> ast.Name | None:
    """The object a `factor` binder ranges over, when it is written as one name (`v :
    Verb`); None for any other object expression, which the checker does not type."""
    if isinstance(obj, ast.TypeRef) and len(obj.factors) == 1:
        return obj.factors[0]
    return None


def _comprehension(
    node: ast.Factor,
    is_plate: Callable[[str], bool],
    plates_of: Callable[[str], tuple[str, ...]],
    size_of: Callable[[str], int | None],
    constant: Callable[[str], float | None],
) -> Comprehension | None:
    """A `factor`'s term: each binder's object by name and size, the body (or the cases
    in label order) lowered with the binders as names of their own, which shadow a let
    bound to a number and a plate of the same name."""
    names = tuple(n.text for n, _ in node.binders)
    plates: list[str] = []
    sizes: list[int] = []
    for _, obj in node.binders:  # an object the checker reports is lowered with size -1
        name = binder_object(obj)
        size = size_of(name.text) if name is not None else None
        plates.append(name.text if name is not None else "")
        sizes.append(-1 if size is None else size)
    bound = frozenset(names)

    def inner_plate(n: str) -> bool:
        return n not in bound and is_plate(n)

    def inner_plates_of(n: str) -> tuple[str, ...]:
        return () if n in bound else plates_of(n)

    def inner_constant(n: str) -> float | None:
        return None if n in bound else constant(n)

    def part(n: ast.Arith) -> Term | None:
        return lower(n, inner_plate, inner_plates_of, size_of, inner_constant)

    if node.body is not None:
        body = part(node.body)
        if body is None:
            return None
        return Comprehension(names, tuple(plates), tuple(sizes), body, (), node.span)
    cases = [part(value) for _, value in sorted(node.cases, key=lambda c: _label(c[0]))]
    if any(c is None for c in cases):
        return None
    kept = tuple(c for c in cases if c is not None)
    return Comprehension(names, tuple(plates), tuple(sizes), None, kept, node.span)


def map_binder(param: str) -> str:
    """The name of the entry a `map`'s lambda reads (`x -> ...` reads entry `x#` of its
    collection): no written name can be it, so it shadows nothing."""
    return f"{param}#"


def _mapped(
    source: str,
    f: ast.Lambda,
    span: Span,
    is_plate: Callable[[str], bool],
    plates_of: Callable[[str], tuple[str, ...]],
    size_of: Callable[[str], int | None],
    constant: Callable[[str], float | None],
) -> Comprehension | None:
    """quivers' `map(xs, x -> body)`: the body once per entry of xs's first plate, as
    `factor x# : P in body` with each read of `x` the entry `xs[x#]` (an `x[c]` is
    `xs[x#, c]`). An xs of no plate (which the checker reports) lowers with size -1."""
    param = f.param.text
    plates = plates_of(source)
    plate = plates[0] if plates else ""
    size = size_of(plate) if plate else None

    def inner_plate(n: str) -> bool:
        return n != param and is_plate(n)

    def inner_plates_of(n: str) -> tuple[str, ...]:
        return plates[1:] if n == param else plates_of(n)

    def inner_constant(n: str) -> float | None:
        return None if n == param else constant(n)

    body = lower(f.body, inner_plate, inner_plates_of, size_of, inner_constant)
    if body is None:
        return None
    binder = map_binder(param)
    entry = Ref(binder, f.param.span)
    body = _entry_of(body, param, source, entry, plates[:1])
    return Comprehension((binder,), (plate,), (-1 if size is None else size,), body, (), span)


def fold_accumulator(fold: Span) -> str:
    """The name under which the checker gives `lower` the plates of the accumulator of the
    `fold` written at `fold` (its type is its init's, which `lower` cannot know from a
    name): no written name can be it."""
    return f"#fold@{fold.start}"


def _folded(
    xs: ast.Var,
    init: ast.Arith,
    f: ast.Lambda,
    span: Span,
    is_plate: Callable[[str], bool],
    plates_of: Callable[[str], tuple[str, ...]],
    size_of: Callable[[str], int | None],
    constant: Callable[[str], float | None],
) -> Fold | None:
    """quivers' `fold(xs, init, acc -> x -> body)`: init lowered where the fold is, the
    body with `acc` and `x` names of its own (`x` shadows `acc` when both are one name,
    as the inner lambda's parameter does), `x` over xs's other plates and `acc` over the
    plates the checker gave the accumulator (`fold_accumulator`)."""
    assert isinstance(f.body, ast.Lambda)  # the case of `lower` that calls this
    source = xs.name.text
    acc, item = f.param.text, f.body.param.text
    plates = plates_of(source)
    plate = plates[0] if plates else ""
    size = size_of(plate) if plate else None
    acc_plates = plates_of(fold_accumulator(span))
    start = lower(init, is_plate, plates_of, size_of, constant)
    if start is None:
        return None
    bound = frozenset((acc, item))

    def inner_plate(n: str) -> bool:
        return n not in bound and is_plate(n)

    def inner_plates_of(n: str) -> tuple[str, ...]:
        if n == item:
            return plates[1:]
        return acc_plates if n == acc else plates_of(n)

    def inner_constant(n: str) -> float | None:
        return None if n in bound else constant(n)

    body = lower(f.body.body, inner_plate, inner_plates_of, size_of, inner_constant)
    if body is None:
        return None
    items = Ref(source, xs.span)
    return Fold(items, plate, -1 if size is None else size, start, acc, item, body, span)


def _entry_of(term: Term, param: str, source: str, entry: Ref, plate: tuple[str, ...]) -> Term:
    """`term` with each read of `param` the entry `source[entry]` of the mapped value."""

    def go(t: Term) -> Term:
        match t:
            case Ref(name=name, span=span) if name == param:
                return Gather(source, (entry,), span, plate)
            case Gather(base=base, indices=indices, plates=plates):
                inner = tuple(None if i is None else go(i) for i in indices)
                if base == param:
                    return Gather(source, (entry, *inner), t.span, (*plate, *plates))
                return replace(t, indices=inner)
            case Unary(operand=o):
                return replace(t, operand=go(o))
            case Op(left=left, right=right):
                return replace(t, left=go(left), right=go(right))
            case Call(args=args):
                return replace(t, args=tuple(go(a) for a in args))
            case Stack(items=items):
                return replace(t, items=tuple(go(i) for i in items))
            case Comprehension(binders=binders, body=body, cases=cases):
                if param in binders:  # shadowed: its own name inside
                    return t
                return replace(
                    t,
                    body=None if body is None else go(body),
                    cases=tuple(go(c) for c in cases),
                )
            case Fold(items=items, init=init, acc=acc, item=item, body=body):
                step = body if param in (acc, item) else go(body)  # shadowed inside
                return replace(t, items=go(items), init=go(init), body=step)
            case _:
                return t

    return go(term)


def _label(label: ast.Literal) -> float:
    """A case's label as a number (the checker reports one that is not a whole number)."""
    try:
        return float(label.value)
    except (TypeError, ValueError):
        return float("inf")


def _binary(
    node: ast.Binary,
    is_plate: Callable[[str], bool],
    plates_of: Callable[[str], tuple[str, ...]],
    size_of: Callable[[str], int | None],
    constant: Callable[[str], float | None],
) -> Term | None:
    spine = [node]  # along the left spine: a long chain does not recurse per operator
    while isinstance(spine[-1].left, ast.Binary) and spine[-1].left.op in OPERATORS:
        spine.append(spine[-1].left)
    value = lower(spine[-1].left, is_plate, plates_of, size_of, constant)
    for b in reversed(spine):
        right = lower(b.right, is_plate, plates_of, size_of, constant)
        if value is None or right is None:
            return None
        value = Op(b.op, value, right, b.span)
    return value


def _all(
    nodes: tuple[ast.Arith, ...],
    is_plate: Callable[[str], bool],
    plates_of: Callable[[str], tuple[str, ...]],
    size_of: Callable[[str], int | None],
    constant: Callable[[str], float | None],
    objects: frozenset[int] = frozenset(),
) -> tuple[Term, ...] | None:
    """Each node's term; one at the positions `objects` that names a finite object is
    lowered to its size (anything else there is lowered as it is: the checker reports
    it, so it never runs)."""
    out: list[Term] = []
    for i, n in enumerate(nodes):
        size = size_of(n.name.text) if i in objects and isinstance(n, ast.Var) else None
        if size is not None:
            out.append(Num(float(size), n.span))
            continue
        t = lower(n, is_plate, plates_of, size_of, constant)
        if t is None:
            return None
        out.append(t)
    return tuple(out)


def subterms(term: Term) -> Iterator[Term]:
    """The term and every term inside it, outermost first, in order of writing."""
    stack: list[Term] = [term]
    while stack:
        t = stack.pop()
        yield t
        match t:
            case Unary(operand=o):
                stack.append(o)
            case Op(left=left, right=right):
                stack += [right, left]
            case Call(args=args) | Stack(items=args):
                stack.extend(reversed(args))
            case Gather(indices=indices):
                stack.extend(reversed([i for i in indices if i is not None]))
            case Comprehension(body=body, cases=cases):
                stack.extend(reversed((body, *cases) if body is not None else cases))
            case Fold(items=items, init=init, body=body):
                stack += [body, init, items]
            case Num() | Ref():
                pass


def refs(term: Term) -> Iterator[str]:
    """Every name a term reads, in order of writing (repeats included); a `factor`'s
    binders are its own names, not reads."""
    stack: list[tuple[Term, frozenset[str]]] = [(term, frozenset())]
    while stack:
        t, bound = stack.pop()
        match t:
            case Ref(name=name):
                if name not in bound:
                    yield name
            case Gather(base=base, indices=indices):
                if base not in bound:
                    yield base
                stack.extend((i, bound) for i in reversed(indices) if i is not None)
            case Unary(operand=o):
                stack.append((o, bound))
            case Op(left=left, right=right):
                stack += [(right, bound), (left, bound)]
            case Call(args=args) | Stack(items=args):
                stack.extend((a, bound) for a in reversed(args))
            case Comprehension(binders=binders, body=body, cases=cases):
                inner = bound | frozenset(binders)
                parts = (body, *cases) if body is not None else cases
                stack.extend((p, inner) for p in reversed(parts))
            case Fold(items=items, init=init, acc=acc, item=item, body=body):
                stack += [(body, bound | {acc, item}), (init, bound), (items, bound)]
            case Num():
                pass
