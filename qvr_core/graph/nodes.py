"""The vocabulary of the dataflow graph: node kinds, nodes, clusters and their ids.

Ids are shared by every renderer and by the editor (a click on a drawn node
jumps to its source), so they are built once here: readable dotted paths
(`program.site.let.morphism`), unique, and valid as Mermaid node ids.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from qvr_core.check.types import Arrow, Group, ObjectType, Plated, Product, Scalar, Seq, dims_text
from qvr_core.text.span import Span

# First segments that Mermaid's flowchart lexer reads as keywords (checked against
# mermaid's own parser in tests/graph): such an id would not parse.
MERMAID_RESERVED = frozenset(
    {
        "end",
        "style",
        "class",
        "classDef",
        "graph",
        "subgraph",
        "flowchart",
        "linkStyle",
        "interpolate",
        "_self",
        "_blank",
        "_parent",
        "_top",
    }
)

REVERSED_LABEL = "right to left"


class NodeKind(StrEnum):
    INPUT = "input"  # a program's input (or one named parameter), a let's argument
    MORPHISM = "morphism"  # one use of a declared morphism (or of a program as a morphism)
    COMBINATOR = "combinator"  # fan, @, scan, stack, repeat, identity
    SAMPLE = "sample"  # a sampled site
    OBSERVE = "observe"  # an observed site
    VALUE = "value"  # a deterministic program-local value (`let y = ...`)
    OUTPUT = "output"  # what a program (or a drawn let) returns


class ClusterKind(StrEnum):
    PROGRAM = "program"
    LET = "let"
    PLATE = "plate"  # the sites of a Bayesian model drawn once per index of a finite set
    MARGINAL = "marginalize"  # the body of a `marginalize` block: its coordinate summed out
    #: the box around a program that `stack(block, n)` or `repeat(block, n)` repeats,
    #: named after the call (n copies in a row, own or shared parameters)
    COPIES = "copies"


@dataclass(frozen=True)
class Node:
    """One node as renderers and the editor see it; `type` and `dims` are "" when unknown."""

    id: str
    label: str
    kind: NodeKind
    type: str
    dims: str
    span: Span | None
    cluster: str | None  # innermost program or let cluster
    detail: str = ""  # a kernel's family, a value's formula
    errors: tuple[str, ...] = ()  # "QVRnnn: message" of the errors at this node (marks.py)

    @property
    def observed(self) -> bool:
        return self.kind is NodeKind.OBSERVE


@dataclass(frozen=True)
class Cluster:
    """A program, a let drawn where it is used, a plate or a marginalised scope: a box
    around its nodes."""

    id: str
    kind: ClusterKind
    name: str
    type: str
    dims: str
    span: Span | None
    parent: str | None

    @property
    def label(self) -> str:
        typed = f" : {self.type}" if self.type else ""
        if self.kind is ClusterKind.COPIES:  # its name is the call: `stack(block, 2)`
            return f"{self.name}{typed}"
        return f"{self.kind.value} {self.name}{typed}"


TypeLike = Arrow | Group | Product | Seq | Scalar | ObjectType | Plated


def type_label(t: TypeLike | None) -> str:
    if t is None:
        return ""
    return t.name if isinstance(t, ObjectType) else t.label


def type_dims(t: TypeLike | None) -> str:
    """Dimensions as the checker's messages show them: `FinSet 256 -> R^64`."""
    if t is None:
        return ""
    if isinstance(t, Arrow):
        return f"{dims_text(t.dom)} -> {dims_text(t.cod)}"
    if isinstance(t, Group):
        return f"{t.count} x ({type_dims(t.member)})"
    if isinstance(t, Plated):
        return "x".join("?" if n < 0 else str(n) for n in t.shape) or "scalar"
    return dims_text(t)


_UNSAFE = re.compile(r"[^A-Za-z0-9_]")


class IdAllocator:
    """Dotted, readable ids; a repeated path gets `_2`, `_3`... in creation order.

    Each path remembers the last suffix it used: every smaller one is taken
    already, so the search for a free id resumes there (a `fan` of 100,000
    uses of one morphism must not try `_2`, `_3`... again for each).
    """

    def __init__(self) -> None:
        self._used: set[str] = set()
        self._last: dict[str, int] = {}

    def make(self, *segments: str) -> str:
        parts = [_UNSAFE.sub("_", s) or "_" for s in segments]
        if parts[0] in MERMAID_RESERVED:
            parts[0] += "_"
        base = ".".join(parts)
        n = self._last.get(base, 1)
        candidate = base if n == 1 else f"{base}_{n}"
        while candidate in self._used:
            n += 1
            candidate = f"{base}_{n}"
        self._last[base] = n
        self._used.add(candidate)
        return candidate
