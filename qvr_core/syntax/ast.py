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

from qvr_core.syntax.span import Span


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


ObjectBody = SizedObject | TypeRef


# -------------------------------------------------------------- options


@dataclass(frozen=True)
class Literal:
    """A literal option or argument value.

    kind is "int", "float", "bool" or "name"; `raw` is the text as written
    and `value` the parsed Python value (int, float, bool or str).
    """

    kind: str
    raw: str
    value: int | float | bool | str
    span: Span


@dataclass(frozen=True)
class Option:
    """`key=value` inside a morphism's `[...]` block."""

    key: Name
    value: Literal
    span: Span


# ---------------------------------------------------------- expressions


@dataclass(frozen=True)
class NameRef:
    """A reference to a morphism, let, program or object by name."""

    name: Name
    span: Span


@dataclass(frozen=True)
class Compose:
    """`left >> right`."""

    left: Expr
    right: Expr
    span: Span


@dataclass(frozen=True)
class Tensor:
    """`left @ right` (binds tighter than `>>`)."""

    left: Expr
    right: Expr
    span: Span


@dataclass(frozen=True)
class KeywordArg:
    """`reverse=true` inside a call."""

    key: Name
    value: Literal
    span: Span


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
    args: tuple[Expr | Literal, ...]
    kwargs: tuple[KeywordArg, ...]
    span: Span


Expr = NameRef | Compose | Tensor | Call


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
    op: str  # "-"
    operand: Arith
    span: Span


@dataclass(frozen=True)
class Binary:
    op: str  # "+", "-", "*", "/"
    left: Arith
    right: Arith
    span: Span


@dataclass(frozen=True)
class Apply:
    """A builtin function in arithmetic: `sigmoid(x)`, `min(a, b)`."""

    func: Name
    args: tuple[Arith, ...]
    span: Span


Arith = Number | Var | Unary | Binary | Apply


# ---------------------------------------------------------- program steps


@dataclass(frozen=True)
class SampleStep:
    """`sample x <- source`; source is an Expr (a Call for `f(a, b)`)."""

    target: Name
    source: Expr
    span: Span


@dataclass(frozen=True)
class ObserveStep:
    """`observe y : T <- source`."""

    target: Name
    declared: TypeRef
    source: Expr
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
    """`return x` or `return (a, b)`."""

    values: tuple[Name, ...]
    span: Span


Step = SampleStep | ObserveStep | LetStep | DestructureStep | ReturnStep


# ----------------------------------------------------------- declarations


@dataclass(frozen=True)
class ObjectDecl:
    name: Name
    body: ObjectBody
    doc: str | None
    span: Span


@dataclass(frozen=True)
class MorphismDecl:
    name: Name
    dom: TypeRef
    cod: TypeRef
    options: tuple[Option, ...]
    options_span: Span | None  # the `[...]` block, None when absent
    family: Name | None
    doc: str | None
    span: Span


@dataclass(frozen=True)
class LetDecl:
    name: Name
    expr: Expr
    doc: str | None
    span: Span


@dataclass(frozen=True)
class ProgramDecl:
    name: Name
    params: tuple[Name, ...] | None
    dom: TypeRef
    cod: TypeRef
    steps: tuple[Step, ...]  # includes the ReturnStep(s) in source order
    doc: str | None
    header_span: Span  # the `program ...` line
    span: Span


@dataclass(frozen=True)
class ExportDecl:
    name: Name
    span: Span


Decl = ObjectDecl | MorphismDecl | LetDecl | ProgramDecl | ExportDecl


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
