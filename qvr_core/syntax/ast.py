"""The QVR syntax tree: frozen dataclasses, every node with its source span.

The parser builds these and nothing else mutates them. Later stages key
their facts (types, symbols) by node, which works because frozen
dataclasses hash by value and every node carries its span.

Names of builtins (type constructors, roles, families, combinators) are
ordinary `Name`s here: the checker resolves them, so a misspelling is a
checker diagnostic with a suggestion, not a parse error.
"""

from __future__ import annotations

from dataclasses import dataclass

from qvr_core.builtins.transformations import CHANGE_BASE
from qvr_core.text.span import Span

#: The two curry methods, by the side of the domain whose last (right) or first (left)
#: factor moves into the codomain (check/curry.py).
CURRY = {"curry_right": "right", "curry_left": "left"}
#: QIEC's keywords before a name of the module's declarations: a constructor after
#: `construct`, an instance after `perform`, a handler after `handle i with`.
CONSTRUCT, PERFORM, HANDLE, WITH = "construct", "perform", "handle", "with"


@dataclass(frozen=True)
class Name:
    """An identifier occurrence."""

    text: str
    span: Span


# ---------------------------------------------------------------- types


@dataclass(frozen=True)
class TypeRef:
    """A product of object names as written: `A`, `A * B * C`."""

    factors: tuple[Name, ...]
    span: Span


@dataclass(frozen=True)
class SizedObject:
    """`FinSet 256`, `Real 64`: a type constructor applied to a size.

    `size` is None when the size is missing or not a positive integer; the
    parser has then already reported the problem.
    """

    constructor: Name
    size: int | None
    size_span: Span | None
    span: Span


@dataclass(frozen=True)
class ObjBinary:
    """`A + B` (coproduct), `A / B`, `A \\ B` (slash types), or a product `*` that is
    more than names (`Real 3 * B`, `(A * B) * C`)."""

    op: str
    left: ObjectExpr
    right: ObjectExpr
    span: Span


@dataclass(frozen=True)
class ObjCtor:
    """A constructor applied to arguments beyond one size: `Real 3 {lower=0.0}`,
    `Stiefel 4 2`, `FinSet N`. Arguments are literals (kind "name" for identifiers)."""

    constructor: Name
    args: tuple[Literal, ...]
    options: tuple[Option, ...]
    span: Span


@dataclass(frozen=True)
class ObjApply:
    """`FreeResiduated(Atoms, depth=2)`, `FreeMonoid(X, max_length=5)`, `span(I, K, NP)`,
    `Mor[A, B]`: a name applied to object expressions and `key=value` options."""

    func: Name
    args: tuple[ObjectExpr | Option, ...]
    span: Span


@dataclass(frozen=True)
class EnumSet:
    """`{a, b, c}`: a finite set given by its elements."""

    elements: tuple[Name, ...]
    span: Span


ObjectBody = SizedObject | TypeRef | ObjBinary | ObjCtor | ObjApply | EnumSet
#: An object expression as written in a signature, a plate or a rule.
ObjectExpr = ObjectBody


# -------------------------------------------------------------- options


@dataclass(frozen=True)
class Literal:
    """A literal option or argument value.

    kind is "int", "float", "bool", "name", "string" or "unit"; `raw` is the text as
    written and `value` the parsed Python value (int, float, bool or str; a string's
    value is its text without quotes or escapes).
    """

    kind: str
    raw: str
    value: int | float | bool | str
    span: Span


@dataclass(frozen=True)
class ValueList:
    """`[a, "b", 1]` as an option value."""

    items: tuple[Literal, ...]
    span: Span


@dataclass(frozen=True)
class ValueCall:
    """`program(prog)` as an option value."""

    func: Name
    args: tuple[Literal, ...]
    span: Span


@dataclass(frozen=True)
class Option:
    """`key=value` inside a `[...]` option block; `value` is None for a bare flag (`key`)."""

    key: Name
    value: Literal | ValueList | ValueCall | None
    span: Span


# ---------------------------------------------------------- expressions


@dataclass(frozen=True)
class NameRef:
    """A reference to a morphism, let, program or object by name."""

    name: Name
    span: Span


@dataclass(frozen=True)
class Compose:
    """`left >> right` (`op` is ">>"; quivers also has "<<", ">>>" and, 0.11-0.14, ">=>"...).

    `left` runs first whatever the operator: `g << f` (quivers' `f >> g` written right to
    left) is stored with `left` f and `right` g, so every reader follows the data; the
    printer writes it back as written."""

    left: Expr
    right: Expr
    span: Span
    op: str = ">>"


@dataclass(frozen=True)
class Tensor:
    """`left @ right` (binds tighter than `>>`)."""

    left: Expr
    right: Expr
    span: Span


@dataclass(frozen=True)
class ListArg:
    """`[a, 1.0]` as an argument of a family or morphism in a step."""

    items: tuple[Arg, ...]
    span: Span


@dataclass(frozen=True)
class IndexArg:
    """`phi[z]`, `sigma[School]`: a value indexed by a plate or a bound value."""

    name: Name
    index: ObjectExpr
    span: Span


@dataclass(frozen=True)
class KeywordArg:
    """`reverse=true`, `probs=theta`, `loc=Normal(0.0, 1.0)` inside a call."""

    key: Name
    value: Literal | Expr | ListArg | IndexArg
    span: Span

    @property
    def word(self) -> str:
        """The value written as one bare word (`init=learned`, `reverse=true`), else ""."""
        v = self.value
        if isinstance(v, NameRef):
            return v.name.text
        return v.raw if isinstance(v, Literal) else ""


@dataclass(frozen=True)
class Method:
    """`expr.dagger`, `f.marginalize(A)`, `f.curry_right`: a method of a morphism expression
    (0.15 on)."""

    receiver: Expr
    method: Name
    args: tuple[Arg, ...] | None
    span: Span

    @property
    def is_dagger(self) -> bool:
        """`f.dagger` (no argument list): the checker, the lowered model and the diagram
        all ask this."""
        return self.method.text == "dagger" and self.args is None

    @property
    def is_marginalize(self) -> bool:
        """`f.marginalize(A)`: the codomain's factors A summed out (check/marginals.py)."""
        return self.method.text == "marginalize" and self.args is not None

    @property
    def is_curry(self) -> bool:
        """`f.curry_right` / `f.curry_left` (no argument list): the relation read into a
        residual (check/curry.py)."""
        return self.method.text in CURRY and self.args is None

    @property
    def is_change_base(self) -> bool:
        """`f.change_base(phi)`: the relation moved to another rule (check/change_base.py)."""
        return self.method.text == CHANGE_BASE and self.args is not None

    @property
    def typed(self) -> bool:
        """Whether the checker types this method (the others keep the names-only check)."""
        return self.is_dagger or self.is_marginalize or self.is_curry or self.is_change_base


@dataclass(frozen=True)
class Call:
    """`callee(args...)`.

    In a let this is a combinator (`fan`, `scan`, `stack`, `repeat`,
    `identity`); in a program step it may also be a morphism applied to
    named values (`lm_head(h)`). The checker decides which from what the
    callee resolves to. Positional args are expressions or literals
    (`stack(b, 3)`).
    """

    callee: Name
    args: tuple[Arg, ...]
    kwargs: tuple[KeywordArg, ...]
    span: Span


Expr = NameRef | Compose | Tensor | Call | Method

#: What a call or a method takes as a positional argument.
Arg = Expr | Literal | ListArg | IndexArg


# ---------------------------------------------------- program arithmetic


@dataclass(frozen=True)
class Number:
    value: float
    raw: str
    span: Span


@dataclass(frozen=True)
class Var:
    """A program-local value used in arithmetic or as a call argument."""

    name: Name
    span: Span


@dataclass(frozen=True)
class Unary:
    op: str  # "-" or "not"
    operand: Arith
    span: Span


@dataclass(frozen=True)
class Binary:
    op: str  # "+", "-", "*", "/", "%", comparisons, "&&", "||"
    left: Arith
    right: Arith
    span: Span


@dataclass(frozen=True)
class Apply:
    """A builtin function in arithmetic: `sigmoid(x)`, `min(a, b)`."""

    func: Name
    args: tuple[Arith, ...]
    span: Span


@dataclass(frozen=True)
class Index:
    """`theta[person_idx]`, `cell_score[0, 0]`."""

    base: Var
    indices: tuple[Arith, ...]
    span: Span


@dataclass(frozen=True)
class MethodCall:
    """`x.sum(0)`: a method of a value."""

    receiver: Var
    method: Name
    args: tuple[Arith, ...]
    span: Span


@dataclass(frozen=True)
class ListExpr:
    """`[a, b]`, or `(a, b)` when `tuple` is true."""

    items: tuple[Arith, ...]
    span: Span
    tuple: bool = False


@dataclass(frozen=True)
class Lambda:
    """`x -> body`."""

    param: Name
    body: Arith
    span: Span


@dataclass(frozen=True)
class Factor:
    """`factor v : Verb, c : Class in body` or `... in {0 -> a, 1 -> b}`."""

    binders: tuple[tuple[Name, ObjectExpr], ...]
    body: Arith | None
    cases: tuple[tuple[Literal, Arith], ...]
    span: Span


Arith = (
    Number
    | Var
    | Unary
    | Binary
    | Apply
    | Literal
    | Index
    | MethodCall
    | ListExpr
    | Lambda
    | Factor
)


# ---------------------------------------------------------- program steps


@dataclass(frozen=True)
class SampleStep:
    """`sample x <- source`; source is an Expr (a Call for `f(a, b)` or a family
    `Normal(0.0, 1.0)`). quivers adds `sample (a, b) <- ...` (`more_targets`), a plate
    `sample x : School <- ...` and a trailing option block `[over=Topic]`."""

    target: Name
    source: Expr
    span: Span
    more_targets: tuple[Name, ...] = ()
    plate: ObjectExpr | None = None
    options: tuple[Option, ...] = ()


@dataclass(frozen=True)
class ObserveStep:
    """`observe y : T <- source`. `declared` is the `: T` (the seeds' declared type,
    quivers' plate), None when absent."""

    target: Name
    declared: ObjectExpr | None
    source: Expr
    span: Span
    more_targets: tuple[Name, ...] = ()
    options: tuple[Option, ...] = ()


@dataclass(frozen=True)
class MarginalizeStep:
    """`marginalize z : Topic <- Categorical(probs=theta) [over=Doc]` and its indented
    scope of steps, over which `z` is summed out."""

    target: Name
    plate: ObjectExpr | None
    source: Expr
    options: tuple[Option, ...]
    steps: tuple[Step, ...]
    header_span: Span
    span: Span


@dataclass(frozen=True)
class CallStep:
    """`let y <- f(a, 2.0)`: a call of a typed computation (quivers 0.19 on).

    `args` are its arithmetic arguments. quivers' HEAD also takes static arguments
    (`f[Real](..)`, kept in `static`) and `construct C(..) as T(..)` values (kept in
    `constructs`): clauses the checker leaves names-only, so that no call is refused."""

    target: Name
    callee: Name
    args: tuple[Arith, ...]
    span: Span
    static: Clause | None = None
    constructs: tuple[Clause, ...] = ()


@dataclass(frozen=True)
class ScoreStep:
    """`score w = arithmetic`: a term added to the log joint."""

    target: Name
    value: Arith
    span: Span


@dataclass(frozen=True)
class LetStep:
    """`let y = arithmetic`."""

    target: Name
    value: Arith
    span: Span


@dataclass(frozen=True)
class DestructureStep:
    """`let (a, b) = value`."""

    targets: tuple[Name, ...]
    value: Arith
    span: Span


@dataclass(frozen=True)
class ReturnStep:
    """`return x`, `return (a, b)` or, labelled, `return (mean: a, scale: b)`."""

    values: tuple[Name, ...]
    span: Span
    labels: tuple[Name, ...] = ()


Step = (
    SampleStep
    | ObserveStep
    | LetStep
    | DestructureStep
    | ReturnStep
    | MarginalizeStep
    | CallStep
    | ScoreStep
)


# ----------------------------------------------------------- declarations


@dataclass(frozen=True)
class ObjectDecl:
    """`object A : Real 3`; `object A, B : Real 3` (0.15 on) puts B in `more_names`."""

    name: Name
    body: ObjectBody
    doc: str | None
    span: Span
    more_names: tuple[Name, ...] = ()

    @property
    def names(self) -> tuple[Name, ...]:
        return (self.name, *self.more_names)


@dataclass(frozen=True)
class MorphismDecl:
    """`morphism f : A -> B [options] ~ Family`; `morphism f, g : ...` (0.15 on) puts g
    in `more_names`; `~ Normal(scale=0.1)` gives `family_args`, and an initialiser that
    is a morphism expression (`~ f >> g`) is `init` (with `family` None)."""

    name: Name
    dom: ObjectExpr
    cod: ObjectExpr
    options: tuple[Option, ...]
    options_span: Span | None  # the `[...]` block, None when absent
    family: Name | None
    doc: str | None
    span: Span
    more_names: tuple[Name, ...] = ()
    family_args: Call | None = None
    init: Expr | None = None

    @property
    def names(self) -> tuple[Name, ...]:
        return (self.name, *self.more_names)


@dataclass(frozen=True)
class LetDecl:
    """`let f = expr` (0.11 - 0.14) or `define f = expr` (0.15 on): `keyword` says which.
    `where` holds the definitions of an indented `where` block."""

    name: Name
    expr: Expr
    doc: str | None
    span: Span
    keyword: str = "let"
    where: tuple[LetDecl, ...] = ()


@dataclass(frozen=True)
class ProgramDecl:
    """A program. `params` are its parameter names; `param_kinds` (0.15 on) holds each
    one's `: Real` / `: Mor[A, B]` when any is typed (None where untyped)."""

    name: Name
    params: tuple[Name, ...] | None
    dom: ObjectExpr
    cod: ObjectExpr
    steps: tuple[Step, ...]  # includes the ReturnStep(s) in source order
    doc: str | None
    header_span: Span  # the `program ...` line
    span: Span
    param_kinds: tuple[ObjectExpr | None, ...] = ()
    options: tuple[Option, ...] = ()


@dataclass(frozen=True)
class ExportDecl:
    """`export name`; quivers 0.15 on exports any expression (`expr`, with `name` its
    first name)."""

    name: Name
    span: Span
    expr: Expr | None = None


@dataclass(frozen=True)
class Clause:
    """A construct the checker does not model yet, as written: a declaration kind of
    quivers' grammar (`deduction`, `signature`, `effect`, a typed `define`, a pragma...)
    or one line of its body.

    `kind` names it (the grammar rule, e.g. "deduction", "lexicon_entry");
    `keyword` is its leading keyword when it has one; `names` are the names it
    declares (a declaration's own name first); `parts` are the names, literals and
    sub-expressions it is made of, in source order (its references among them);
    `body` the clauses of its indented lines.
    """

    kind: str
    keyword: Name | None
    names: tuple[Name, ...]
    parts: tuple[object, ...]
    body: tuple[Clause, ...]
    span: Span


@dataclass(frozen=True)
class OtherDecl:
    """A top-level declaration the checker does not model yet (see `Clause`). Its names
    are declared (uses of them are not undefined); the checker says once that it is not
    checked."""

    clause: Clause
    doc: str | None
    span: Span

    @property
    def name(self) -> Name:
        """Its first declared name, else its keyword (a pragma declares nothing), else
        its kind, empty at its start (so every declaration has a place to report at)."""
        c = self.clause
        if c.names:
            return c.names[0]
        if c.keyword is not None:
            return c.keyword
        at = c.span
        start = Span(at.start, at.start, at.start_line, at.start_col, at.start_line, at.start_col)
        return Name(c.kind, start)

    @property
    def names(self) -> tuple[Name, ...]:
        return self.clause.names


Decl = ObjectDecl | MorphismDecl | LetDecl | ProgramDecl | ExportDecl | OtherDecl


@dataclass(frozen=True)
class Comment:
    """A comment as written (`# ...` or `#! ...`), kept for the formatter and folding."""

    text: str
    span: Span


@dataclass(frozen=True)
class Module:
    decls: tuple[Decl, ...]
    comments: tuple[Comment, ...]
    span: Span


def _node_hash(self: object) -> int:
    """Hash a node by its kind and place, not its whole subtree.

    Later stages key facts by node (`expr_types[expr]`); the generated hash
    would walk the subtree on every lookup. Equality stays structural.
    """
    span = self.span  # type: ignore[attr-defined]  # set below on node classes only
    return hash((type(self).__name__, span.start, span.end))


for _node in (
    Name,
    TypeRef,
    SizedObject,
    ObjBinary,
    ObjCtor,
    ObjApply,
    EnumSet,
    ValueList,
    ValueCall,
    ListArg,
    IndexArg,
    Method,
    Index,
    MethodCall,
    ListExpr,
    Lambda,
    Factor,
    MarginalizeStep,
    CallStep,
    ScoreStep,
    Clause,
    OtherDecl,
    Literal,
    Option,
    NameRef,
    Compose,
    Tensor,
    KeywordArg,
    Call,
    Number,
    Var,
    Unary,
    Binary,
    Apply,
    SampleStep,
    ObserveStep,
    LetStep,
    DestructureStep,
    ReturnStep,
    ObjectDecl,
    MorphismDecl,
    LetDecl,
    ProgramDecl,
    ExportDecl,
    Comment,
    Module,
):
    _node.__hash__ = _node_hash  # type: ignore[method-assign]  # once, at import
