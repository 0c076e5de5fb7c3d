"""Checked `let`/`score` terms written as jax.numpy expressions for the NumPyro export.

A term means what `qvr_core.runtime.evaluate` computes on torch tensors; each
builtin of `qvr_core.builtins.functions` is written as the jnp / jax.nn call
with the same meaning (`functions.py`'s tables), and an operator keeps qvr's result type
(a comparison is 0.0 or 1.0, as qvr's `real()` makes it, so that `(a < b) + (c < d)`
counts rather than or-ing two booleans).

Inside a summed-out scope NumPyro gives every value that depends on an
enumerated site extra dimensions on the left (one per enumerated site), where
qvr's runtime evaluates the scope once per value. Elementwise arithmetic and
functions of the last axis mean the same either way; a reduction, an axis
counted from the left, or a gather from such a value would not, so those are
reported as `Unsupported` instead of written.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from qvr_core.builtins import OPERATORS
from qvr_core.check.terms import (
    Call,
    Comprehension,
    Fold,
    Gather,
    Num,
    Op,
    Ref,
    Stack,
    Term,
    Unary,
    refs,
)
from qvr_core.export.densities import density_problem, density_text
from qvr_core.export.numpyro.families import family_call
from qvr_core.export.numpyro.functions import (
    ELEMENTWISE,
    NOT_WRITTEN,
    PAIRWISE,
    REAL_ARGUMENTS,
    REDUCE,
    WRITTEN,
    known_function,
)
from qvr_core.export.plan import NOT_EXPORTED_FACTOR, NOT_EXPORTED_FOLD, Unsupported
from qvr_core.text.span import Span

#: Operators as Python writes them, with their precedence (higher binds tighter).
_ARITHMETIC = {"+": 1, "-": 1, "*": 2, "/": 2, "%": 2}
_COMPARISON = {"==", "!=", "<", "<=", ">", ">="}
_LOGICAL = {"&&": "jnp.logical_and", "||": "jnp.logical_or"}
_UNARY_PRECEDENCE = 3
_ATOM = 4


def number(value: float) -> str:
    """A float as Python writes it (inf and nan through jnp)."""
    if math.isnan(value):
        return "jnp.nan"
    if math.isinf(value):
        return "jnp.inf" if value > 0 else "-jnp.inf"
    return repr(float(value))


@dataclass(frozen=True)
class Terms:
    """Writes terms of one model: `names` maps each QVR name to its Python name,
    `integer` holds the names of integer data (indices, counts), `enumerated` the
    sites NumPyro enumerates, `dependent` every name whose value carries their
    enumeration dimensions (the enumerated ones included)."""

    names: Mapping[str, str]
    integer: frozenset[str]
    enumerated: frozenset[str]
    dependent: frozenset[str]
    plates: frozenset[str]  # objects a gather index may name (every entry of that axis)
    one_entry: frozenset[str] = frozenset()  # objects of one entry: no axis in qvr

    # -------------------------------------------------------------- problems

    def depends(self, term: Term) -> bool:
        """Whether `term`'s value carries enumeration dimensions."""
        return any(n in self.dependent for n in refs(term))

    def problems(self, term: Term) -> list[Unsupported]:
        """What in `term` this printer does not write, each at its span."""
        out: list[Unsupported] = []
        stack: list[Term] = [term]
        while stack:
            t = stack.pop()
            match t:
                case Num():
                    pass
                case Ref(name=name):
                    if name not in self.names:
                        out.append(Unsupported(t.span, f"`{name}` is not a value of this program"))
                case Unary(op=op, operand=operand):
                    if op not in ("-", "not"):
                        out.append(
                            Unsupported(t.span, f"the unary operator `{op}` is not exported")
                        )
                    stack.append(operand)
                case Op(op=op, left=left, right=right):
                    if op not in OPERATORS or not (
                        op in _ARITHMETIC or op in _COMPARISON or op in _LOGICAL
                    ):
                        out.append(Unsupported(t.span, f"the operator `{op}` is not exported"))
                    stack += [left, right]
                case Call(density=density, args=args) if density is not None:
                    why = density_problem(t, family_call, "NumPyro")
                    out += [] if why is None else [Unsupported(t.span, why)]
                    stack.extend(args)
                case Call(fn=fn, args=args, axis=axis):
                    out += self._call_problems(t, fn, len(args), axis)
                    stack.extend(args)
                case Gather(base=base, indices=indices, plates=plates):
                    out += self._gather_problems(t.span, base, indices, plates)
                    stack.extend(i for i in indices if i is not None)
                case Stack(items=items):
                    stack.extend(items)
                case Comprehension():
                    out.append(Unsupported(t.span, NOT_EXPORTED_FACTOR))
                case Fold():
                    out.append(Unsupported(t.span, NOT_EXPORTED_FOLD))
        return out

    def _call_problems(self, t: Call, fn: str, arity: int, axis: int | None) -> list[Unsupported]:
        if not known_function(fn, arity, axis):
            why = f": {NOT_WRITTEN[fn]}" if fn in NOT_WRITTEN else ""
            return [Unsupported(t.span, f"the function `{fn}` is not exported to NumPyro yet{why}")]
        if not any(self.depends(a) for a in t.args):
            return []
        reduces = (fn in REDUCE and arity == 1) or axis is not None
        if reduces:
            return [
                Unsupported(
                    t.span,
                    f"`{fn}` of a value that depends on a summed-out site: NumPyro's "
                    "enumeration adds dimensions on its left, which this reduction would "
                    "take in; compute it outside the scope",
                )
            ]
        return []  # elementwise, or along the last axis: the same with dimensions on the left

    def _gather_problems(
        self, span: Span, base: str, indices: tuple[Term | None, ...], plates: tuple[str, ...]
    ) -> list[Unsupported]:
        out: list[Unsupported] = []
        if base not in self.names:
            out.append(Unsupported(span, f"`{base}` is not a value of this program"))
        for index, plate in zip(indices, plates, strict=False):
            if index is not None and plate in self.one_entry and not isinstance(index, Num):
                out.append(
                    Unsupported(
                        index.span,
                        f"an index into {plate}, which has one entry: qvr gives a one-entry "
                        "plate no axis; index it with the plate itself",
                    )
                )
        if base in self.dependent:
            out.append(
                Unsupported(
                    span,
                    f"a gather from `{base}`, which depends on a summed-out site: NumPyro "
                    "enumerates that site in dimensions on the left, which the index would "
                    "read instead; gather before the scope",
                )
            )
        seen_plate = False
        for index in indices:
            if index is None:
                seen_plate = True
                continue
            if isinstance(index, Num) and not (index.value >= 0 and index.value.is_integer()):
                out.append(Unsupported(index.span, "an index is a whole number from 0"))
            if seen_plate and self.depends(index):
                out.append(
                    Unsupported(
                        index.span,
                        "an index by a summed-out site after a whole axis (`x[Plate, z]`): "
                        "NumPyro's Vindex would lay the axes out otherwise; put the "
                        "summed-out index first",
                    )
                )
        return out

    # -------------------------------------------------------------- text

    def text(self, term: Term) -> str:
        """`term` as a jax.numpy expression (call `problems` first: this assumes none)."""
        return self._text(term)[0]

    def _text(self, t: Term) -> tuple[str, int]:
        """The expression and its precedence (how tightly it binds)."""
        match t:
            case Num(value=value):
                return number(value), (_UNARY_PRECEDENCE if value < 0 else _ATOM)
            case Ref(name=name):
                return self.names[name], _ATOM
            case Unary(op=op, operand=operand):
                inner, p = self._text(operand)
                if op == "not":
                    return f"jnp.asarray(jnp.logical_not({inner}), dtype=float)", _ATOM
                return f"-{_wrap(inner, p, _UNARY_PRECEDENCE)}", _UNARY_PRECEDENCE
            case Op():
                return self._operator(t)
            case Call(density=density, args=args) if density is not None:
                texts = [self.text(a) for a in args]
                written = density_text(t, texts, family_call, "{dist}.log_prob({value})")
                assert written is not None  # problems() refuses a family NumPyro lacks
                return written, _ATOM
            case Call(fn=fn, args=args, axis=axis):
                return self._call(fn, [self.text(a) for a in args], axis, args), _ATOM
            case Gather(base=base, indices=indices, plates=plates):
                # a one-entry axis is no axis in qvr: nothing to take, whole (`a[One]`) or
                # its one entry (`a[0]`, which the checker bounds)
                kept = [
                    i
                    for k, i in enumerate(indices)
                    if not (
                        (i is None or isinstance(i, Num))
                        and k < len(plates)
                        and plates[k] in self.one_entry
                    )
                ]
                return self.gather(base, [self._index(i) for i in kept], tuple(kept)), _ATOM
            case Stack(items=items):
                inner = ", ".join(self.text(i) for i in items)
                return f"jnp.stack(jnp.broadcast_arrays({inner}), axis=-1)", _ATOM
            case Comprehension():
                raise AssertionError("problems() refuses a factor expression")
            case Fold():
                raise AssertionError("problems() refuses a fold")

    def _operator(self, t: Op) -> tuple[str, int]:
        spine = [t]  # along the left spine, as the runtime does: long chains do not recurse
        while isinstance(spine[-1].left, Op):
            spine.append(spine[-1].left)
        text, p = self._text(spine[-1].left)
        for node in reversed(spine):
            right, q = self._text(node.right)
            op = node.op
            if op in _ARITHMETIC:
                level = _ARITHMETIC[op]
                text = f"{_wrap(text, p, level)} {op} {_wrap(right, q, level + 1)}"
                p = level
            elif op in _LOGICAL:
                text = f"jnp.asarray({_LOGICAL[op]}({text}, {right}), dtype=float)"
                p = _ATOM
            else:  # a comparison: 0.0 or 1.0, as qvr's runtime makes it
                text = f"jnp.asarray({_wrap(text, p, 1)} {op} {_wrap(right, q, 1)}, dtype=float)"
                p = _ATOM
        return text, p

    def _call(self, fn: str, args: list[str], axis: int | None, terms: tuple[Term, ...]) -> str:
        if fn in PAIRWISE and len(args) == 2:
            return f"{PAIRWISE[fn]}({args[0]}, {args[1]})"
        if fn in REDUCE:
            return (
                f"{REDUCE[fn]}({args[0]})"
                if axis is None
                else f"{REDUCE[fn]}({args[0]}, axis={axis})"
            )
        if fn in ELEMENTWISE:
            return f"{ELEMENTWISE[fn]}({args[0]})"
        if fn in REAL_ARGUMENTS:
            args = [self._real(a, t) for a, t in zip(args, terms, strict=True)]
        return WRITTEN[fn].format(*args)

    def _real(self, text: str, term: Term) -> str:
        """An integer value (an index, a count) as a float, as qvr's arithmetic reads it."""
        integer = (isinstance(term, Ref) and term.name in self.integer) or (
            isinstance(term, Gather) and term.base in self.integer
        )
        return f"jnp.asarray({text}, dtype=float)" if integer else text

    def _index(self, index: Term | None) -> str | None:
        """An index as Python writes it: None takes the whole axis (`:`)."""
        if index is None:
            return None
        if isinstance(index, Num):
            return str(int(index.value))
        if isinstance(index, Ref) and (index.name in self.integer or index.name in self.enumerated):
            return self.names[index.name]
        return f"jnp.asarray(jnp.round({self.text(index)}), dtype=int)"

    def gather(
        self,
        base: str,
        indices: list[str | None],
        terms: tuple[Term | None, ...] | None = None,
        *,
        enumerated: bool | None = None,
    ) -> str:
        """`base[i, :, j]`, written through NumPyro's `Vindex` when an index is a
        summed-out site (the idiom of NumPyro's enumeration examples)."""
        if enumerated is None:
            enumerated = any(t is not None and self.depends(t) for t in terms or ())
        inside = ", ".join(":" if i is None else i for i in indices)
        name = self.names[base]
        if not indices:  # every axis it would take has one entry: no axis in qvr either
            return name
        if enumerated:
            return f"Vindex({name})[{inside}]"
        return f"{name}[{inside}]"


def literal(text: str) -> str:
    """A Python string literal (QVR names are plain, but a quote must not end it)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _wrap(text: str, precedence: int, needed: int) -> str:
    return text if precedence >= needed else f"({text})"


__all__ = ["Terms", "known_function", "literal", "number"]
