"""The PyMC module an export writes, as a tree: what the lowering decided, before any text.

`lower.lower` builds it from a plan, `printer.write` turns it into text, and nothing
here decides anything. Expressions are Python text already (the term printer's, or a
call the lowering spells whole); a call that a statement makes is kept as its function,
its arguments and its `dims`, because whether it fits on one line is the printer's to
say. A statement with a body (`def`, `for`, `with`, `if`) holds its statements, and the
printer indents them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias


@dataclass(frozen=True)
class Call:
    """`fn(arg, ..., dims=...)`: a PyMC call whose arguments (keyword ones written
    `loc=mu`) the printer puts one a line where the call is long; `dims` names the
    coordinates of the value, last."""

    fn: str
    args: tuple[str | KeywordCall, ...]
    dims: tuple[str, ...] = ()


@dataclass(frozen=True)
class KeywordCall:
    """`keyword=fn(...)`: an argument that is a call of its own
    (`comp_dists=pm.Normal.dist(...)`), broken as a call of its own where it is long."""

    keyword: str
    call: Call


@dataclass(frozen=True)
class LogP:
    """`pm.logp(dist, value)`: the log density of `value` under a distribution."""

    dist: Call
    value: str


Value: TypeAlias = str | Call | LogP


@dataclass(frozen=True)
class Assign:
    """`target = value`, or the value alone, a statement of its own (`pm.Potential(...)`),
    where nothing reads it (`target` None)."""

    target: str | None
    value: Value


@dataclass(frozen=True)
class AddTerm:
    """`lp = lp + per_group(term, groups, via=...)`: one term of a summed-out scope's log
    density, summed down to the scope's groups (`via`: the rows' groups)."""

    term: str | LogP
    groups: str
    via: str | None = None


@dataclass(frozen=True)
class Comment:
    """`# text` on a line of its own (`marker` `#:`: a comment on the name below)."""

    text: str
    marker: str = "#"


@dataclass(frozen=True)
class Blank:
    """An empty line, between function definitions."""


@dataclass(frozen=True)
class Source:
    """Lines of Python written as they are: a helper every such module has the same."""

    lines: tuple[str, ...]


@dataclass(frozen=True)
class Import:
    """`import module` or `import module as alias`."""

    module: str
    alias: str | None = None


@dataclass(frozen=True)
class Coords:
    """`coords = {"School": range(8), ...}`: each dim with its values (Python text)."""

    entries: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Return:
    """`return value`."""

    value: str


@dataclass(frozen=True)
class Decorator:
    """`@name  # why`."""

    name: str
    why: str


@dataclass(frozen=True)
class FunctionDef:
    """`def name(params) -> returns:`, its docstring (lines apart by `\\n`), its body."""

    name: str
    params: tuple[str, ...]
    returns: str | None
    decorator: Decorator | None
    doc: str
    body: tuple[Statement, ...]


@dataclass(frozen=True)
class For:
    """`for target in iterable:`."""

    target: str
    iterable: str
    body: tuple[Statement, ...]


@dataclass(frozen=True)
class With:
    """`with context as target:` (`with context:` where target is None)."""

    context: str
    target: str | None
    body: tuple[Statement, ...]


@dataclass(frozen=True)
class If:
    """`if test:`."""

    test: str
    body: tuple[Statement, ...]


Statement: TypeAlias = (
    Assign
    | AddTerm
    | Comment
    | Blank
    | Source
    | Import
    | Coords
    | Return
    | FunctionDef
    | For
    | With
    | If
)


@dataclass(frozen=True)
class Module:
    """The whole file: its header comment (the plan's), its groups of imports, then its
    top-level sections (the renamed data, the helper, `build_model`, the `__main__`
    block), two empty lines before each."""

    header: str
    imports: tuple[tuple[Import, ...], ...]
    sections: tuple[tuple[Statement, ...], ...]


__all__ = [
    "AddTerm",
    "Assign",
    "Blank",
    "Call",
    "Comment",
    "Coords",
    "Decorator",
    "For",
    "FunctionDef",
    "If",
    "Import",
    "KeywordCall",
    "LogP",
    "Module",
    "Return",
    "Source",
    "Statement",
    "Value",
    "With",
]
