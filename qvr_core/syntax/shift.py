"""Moving syntax, and the facts recorded about it, to another place in the text.

An edit moves every declaration after it by the same number of characters
and lines. Incremental analysis reuses the parse and the check of such a
declaration by moving its nodes and facts instead of recomputing them, which
is several times cheaper. Columns never change: a declaration's segment
starts at the beginning of a line.

A `Shifter` remembers what it has moved (by identity), so a fact keyed by a
node (`expr_types[node]`) is re-keyed by the very node of the moved tree.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable
from typing import Any

from qvr_core.text.span import Span

_new = object.__new__
_set = object.__setattr__

#: Classes whose instances hold no position (types, for example): shared, not copied.
_POSITIONLESS: set[type] = {str, int, float, bool, type(None)}
#: How to move an instance of each dataclass seen so far (see `_mover`).
_MOVERS: dict[type, Callable[[Shifter, dict[str, Any]], Any]] = {}


def positionless(*classes: type) -> None:
    """Declare classes whose values never contain a span, so moving them is free."""
    _POSITIONLESS.update(classes)


class Unmovable(TypeError):
    """A value of a kind the shifter does not know; the caller recomputes instead."""


class Shifter:
    """Moves spans by `chars` characters and `lines` lines; nodes are copied once each.

    Spans that start before `floor` stay where they are: they point at text
    in front of what moves (a diagnostic's related declaration, say).
    """

    __slots__ = ("chars", "floor", "lines", "memo")

    def __init__(self, chars: int, lines: int, floor: int = 0) -> None:
        self.chars = chars
        self.lines = lines
        self.floor = floor
        self.memo: dict[int, Any] = {}

    def span(self, s: Span) -> Span:
        d = s.__dict__
        if d["start"] < self.floor:
            return s
        moved = _new(Span)
        _set(
            moved,
            "__dict__",
            {
                "start": d["start"] + self.chars,
                "end": d["end"] + self.chars,
                "start_line": d["start_line"] + self.lines,
                "start_col": d["start_col"],
                "end_line": d["end_line"] + self.lines,
                "end_col": d["end_col"],
            },
        )
        return moved

    def __call__(self, value: Any) -> Any:
        """`value` moved: spans shifted, containers and dataclasses rebuilt around them."""
        kind = type(value)
        if kind in _POSITIONLESS:
            return value
        if kind is Span:
            return self.span(value)
        if kind is tuple:
            return tuple([self(v) for v in value])
        known = self.memo.get(id(value))
        if known is not None:
            return known
        mover = _MOVERS.get(kind)
        if mover is None and dataclasses.is_dataclass(kind):
            mover = _MOVERS[kind] = _mover(kind)
        if mover is not None:
            moved = mover(self, value.__dict__)
        elif isinstance(value, dict):
            moved = {self(k): self(v) for k, v in value.items()}
        elif isinstance(value, frozenset | set):
            moved = kind(self(v) for v in value)
        elif isinstance(value, enum.Enum):
            _POSITIONLESS.add(kind)
            return value
        elif isinstance(value, tuple) and hasattr(kind, "_fields"):  # a NamedTuple
            moved = kind(*(self(v) for v in value))
        else:
            raise Unmovable(f"cannot move a {kind.__name__}")
        self.memo[id(value)] = moved
        return moved


#: Field annotations (as written) whose values never hold a position.
_PLAIN = frozenset(
    {
        "str",
        "int",
        "bool",
        "float",
        "str | None",
        "int | None",
        "float | None",
        "bool | None",
        "int | float | bool | str",
    }
)


def _mover(kind: type) -> Callable[[Shifter, dict[str, Any]], Any]:
    """A function that moves an instance of the dataclass `kind`, given its `__dict__`.

    Generated once per class from its field annotations: fields of plain
    types are copied, spans shifted directly, anything else moved by the
    shifter. It is several times faster than a loop over the fields, and
    moving is what an edit in a large file spends its time on.
    """
    items = []
    for f in dataclasses.fields(kind):
        annotation = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", "")
        get = f"d[{f.name!r}]"
        if annotation in _PLAIN:
            items.append(f"{f.name!r}: {get}")
        elif annotation == "Span":
            items.append(f"{f.name!r}: span({get})")
        elif annotation == "Span | None":
            items.append(f"{f.name!r}: None if {get} is None else span({get})")
        else:
            items.append(f"{f.name!r}: shift({get})")
    source = (
        "def move(shift, d):\n"
        "    span = shift.span\n"
        "    moved = new(kind)\n"
        f"    put(moved, '__dict__', {{{', '.join(items)}}})\n"
        "    return moved\n"
    )
    namespace: dict[str, Any] = {"new": _new, "put": _set, "kind": kind}
    exec(compile(source, f"<mover of {kind.__name__}>", "exec"), namespace)
    move: Callable[[Shifter, dict[str, Any]], Any] = namespace["move"]
    return move
