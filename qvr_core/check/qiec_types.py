"""The types of quivers' QIEC computations, and a reader of them as written.

A computation's values (quivers 0.25.2, `qiec/types.py`) are of the kernel's base types
(`Int`, `Real`, `Bool`, `String`, `Unit`), tensors of one base type with a fixed shape
(`Tensor[Real]([3, 2])`), values of an indexed family (`Interpretation(Answered)`,
`Resolution[Int](Loose)`: a family applied to its static type arguments and its
indices) and distributions (`Sampleable[Real]`). A type variable (`A` of `family
Resolution[A : Type]`) or an index variable (`e` of `define interpret[e : Evidence]`)
stands for what a use gives it.

The syntax tree keeps a type as the names it is made of, so the reader here parses the
text of a header again with a small recursive descent over its own tokens; every type it
reads knows where it is written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from qvr_core.builtins.effects import REAL_TYPE, UNIT_TYPE

INT, BOOL, STRING = "Int", "Bool", "String"
#: The kernel's base types; a Real is a number, an Int a whole number, a Bool a truth value.
BASE_TYPES = (INT, REAL_TYPE, BOOL, STRING, UNIT_TYPE)
TENSOR = "Tensor"  # `Tensor[Real]([3, 2])`
SAMPLEABLE = "Sampleable"  # `Sampleable[Real]`: a distribution over Reals
KIND = "Type"  # `family F[A : Type]`: A is a type


@dataclass(frozen=True)
class BaseT:
    name: str


@dataclass(frozen=True)
class TensorT:
    """A tensor of one base type: `dims` its fixed shape, outermost first."""

    element: str
    dims: tuple[int, ...]


@dataclass(frozen=True)
class FamilyT:
    """A family applied: `Resolution[Int](Loose)` has statics (Int,) and index (Loose,);
    an index entry is an index constructor or a variable of the enclosing declaration."""

    family: str
    statics: tuple[QType, ...]
    index: tuple[str, ...]


@dataclass(frozen=True)
class DistT:
    """`Sampleable[Real]`: a distribution whose draws are of `element`."""

    element: QType


@dataclass(frozen=True)
class VarT:
    """A type variable of the declaration it is written in."""

    name: str


QType = BaseT | TensorT | FamilyT | DistT | VarT
REAL, INTEGER, TRUTH, TEXT, UNIT = (BaseT(n) for n in (REAL_TYPE, INT, BOOL, STRING, UNIT_TYPE))


def written(t: QType) -> str:
    """A type as the language writes it."""
    match t:
        case BaseT(name=name) | VarT(name=name):
            return name
        case TensorT(element=e, dims=dims):
            return f"{TENSOR}[{e}]([{', '.join(str(d) for d in dims)}])"
        case FamilyT(family=f, statics=statics, index=index):
            inner = f"[{', '.join(written(s) for s in statics)}]" if statics else ""
            return f"{f}{inner}({', '.join(index)})" if index else f"{f}{inner}"
        case DistT(element=e):
            return f"{SAMPLEABLE}[{written(e)}]"


def substitute(t: QType, types: dict[str, QType], indices: dict[str, str]) -> QType:
    """`t` with its type variables and index variables replaced by what they stand for."""
    match t:
        case VarT(name=name):
            return types.get(name, t)
        case FamilyT(family=f, statics=statics, index=index):
            moved = tuple(substitute(s, types, indices) for s in statics)
            return FamilyT(f, moved, tuple(indices.get(i, i) for i in index))
        case DistT(element=e):
            return DistT(substitute(e, types, indices))
        case _:
            return t


# ---------------------------------------------------------------- reading


class TypeSyntaxError(Exception):
    """A header qvr cannot read as a QIEC type (the grammar accepted it)."""

    def __init__(self, message: str, offset: int) -> None:
        super().__init__(message)
        self.offset = offset


_TOKEN = re.compile(r"\s*(->|=>|[A-Za-z_][A-Za-z_0-9']*|\d+|[\[\](),:*|!{}=]|\S)")


@dataclass(frozen=True)
class Token:
    text: str
    start: int  # offset in the module's text
    end: int


def tokens(text: str, start: int, end: int) -> list[Token]:
    """The tokens of `text[start:end]`, each with its offsets in `text`."""
    out: list[Token] = []
    at = start
    while at < end:
        m = _TOKEN.match(text, at, end)
        if m is None or not m.group(1):
            break
        out.append(Token(m.group(1), m.start(1), m.end(1)))
        at = m.end()
    return out


class Reader:
    """A cursor over a header's tokens, reading types, binders and rows."""

    def __init__(self, toks: list[Token], end: int) -> None:
        self.toks = toks
        self.at = 0
        self.end = end

    @property
    def offset(self) -> int:
        return self.toks[self.at].start if self.at < len(self.toks) else self.end

    def peek(self, ahead: int = 0) -> str:
        i = self.at + ahead
        return self.toks[i].text if i < len(self.toks) else ""

    def take(self, want: str | None = None) -> Token:
        if self.at >= len(self.toks) or (want is not None and self.toks[self.at].text != want):
            found = self.peek() or "the end"
            raise TypeSyntaxError(f"expected {want or 'more'} before {found}", self.offset)
        tok = self.toks[self.at]
        self.at += 1
        return tok

    def accept(self, want: str) -> bool:
        if self.peek() == want:
            self.at += 1
            return True
        return False

    def name(self) -> Token:
        tok = self.take()
        if not (tok.text[0].isalpha() or tok.text[0] == "_"):
            raise TypeSyntaxError(f"expected a name, not {tok.text}", tok.start)
        return tok

    def qtype(self) -> QType:
        """`Int`, `A`, `Tensor[Real]([2, 3])`, `Sampleable[Real]`, `F[A](i, j)`, `F(i)`."""
        head = self.name().text
        if head in BASE_TYPES:
            return BaseT(head)
        statics: list[QType] = []
        if self.accept("["):
            statics.append(self.qtype())
            while self.accept(","):
                statics.append(self.qtype())
            self.take("]")
        if head == TENSOR:
            if len(statics) != 1 or not isinstance(statics[0], BaseT):
                raise TypeSyntaxError("a tensor holds one base type: Tensor[Real]", self.offset)
            self.take("(")
            self.take("[")
            dims = [self._int()]
            while self.accept(","):
                dims.append(self._int())
            self.take("]")
            self.take(")")
            return TensorT(statics[0].name, tuple(dims))
        if head == SAMPLEABLE:
            if len(statics) != 1:
                raise TypeSyntaxError("Sampleable takes one type: Sampleable[Real]", self.offset)
            return DistT(statics[0])
        index: list[str] = []
        if self.accept("("):
            if self.peek() != ")":
                index.append(self.name().text)
                while self.accept(","):
                    index.append(self.name().text)
            self.take(")")
        return FamilyT(head, tuple(statics), tuple(index))  # a variable: `with_variables`

    def _int(self) -> int:
        tok = self.take()
        if not tok.text.isdigit():
            raise TypeSyntaxError(f"a tensor's sizes are whole numbers, not {tok.text}", tok.start)
        return int(tok.text)

    def signature(self) -> tuple[tuple[QType, ...], QType]:
        """`A * Int -> R`, `Int -> R`, or `R` alone (no values): the fields and the result."""
        first = [self.qtype()]
        while self.accept("*"):
            first.append(self.qtype())
        if self.accept("->"):
            params = () if first == [UNIT] else tuple(first)
            return params, self.qtype()
        if len(first) != 1:
            raise TypeSyntaxError("expected -> after the values' types", self.offset)
        return (), first[0]

    def binders(self, close: str) -> list[tuple[Token, Token]]:
        """`name : Kind, ...` up to `close` (consumed)."""
        out: list[tuple[Token, Token]] = []
        while not self.accept(close):
            name = self.name()
            self.take(":")
            out.append((name, self.name()))
            if not self.accept(","):
                self.take(close)
                break
        return out

    def row(self) -> tuple[list[Token], Token | None]:
        """`!{a, b}` or `!{a | rho lacks a}`: the instances listed, and the row variable."""
        self.take("!")
        self.take("{")
        listed: list[Token] = []
        tail: Token | None = None
        while not self.accept("}"):
            if self.accept("|"):
                tail = self.name()
                while self.peek() not in ("}", ""):
                    self.take()
                continue
            listed.append(self.name())
            self.accept(",")
        return listed, tail


def with_variables(t: QType, variables: frozenset[str]) -> QType:
    """`t` with each bare name among the declaration's type variables read as that
    variable (the reader cannot tell `A` from a family without indices)."""
    match t:
        case FamilyT(family=f, statics=(), index=()) if f in variables:
            return VarT(f)
        case FamilyT(family=f, statics=statics, index=index):
            return FamilyT(f, tuple(with_variables(s, variables) for s in statics), index)
        case DistT(element=e):
            return DistT(with_variables(e, variables))
        case _:
            return t
