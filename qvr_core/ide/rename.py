"""Rename: scope-aware, refusing names that are not identifiers, are reserved, or collide.

The symbol table decides what a name means; rename only rewrites the spans
of its references. QVR has two namespaces: top-level declarations (objects,
morphisms, lets, programs) and each program's own values (parameters,
sites, local lets), which the checker resolves separately (a local `encode`
may sit beside a morphism `encode`). So a program-local name collides only
with the other values of its program, a top-level name only with top-level
names, including the copies `NAME_0..` of a `replicate` group.

A file is self-contained (QVR has no imports), so a rename never reaches
into another file: the same name elsewhere is a different declaration.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from qvr_core.builtins import FUNCTIONS
from qvr_core.builtins.functions import LIFTED
from qvr_core.check.context import COMBINATORS, FAMILIES, KEYWORDS
from qvr_core.check.module import CheckedModule, Reference, Symbol
from qvr_core.check.types import CONSTRUCTORS
from qvr_core.text import rules
from qvr_core.text.diagnostics import TextEdit
from qvr_core.text.span import Span

#: A file with these diagnostics may have uses the checker never saw.
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

#: Names the checker gives a fixed meaning wherever they appear.
BUILTIN_NAMES: dict[str, str] = {
    **{n: "a type constructor" for n in CONSTRUCTORS},
    **{n: "a combinator" for n in COMBINATORS},
    **{n: "a distribution family" for n in FAMILIES},
    **{n: "a builtin function" for n in (*FUNCTIONS, *LIFTED)},
    "true": "a boolean literal",
    "false": "a boolean literal",
}


class RenameError(Exception):
    """Why a rename is refused; the message is shown to the user as is."""


@dataclass(frozen=True)
class RenameTarget:
    """What the cursor is on: the span to edit in place and the symbol it names."""

    span: Span
    placeholder: str
    symbol: Symbol


def prepare_rename(module: CheckedModule, offset: int) -> RenameTarget:
    """The renamable name at `offset`, or RenameError saying why there is none."""
    if any(d.code in rules.UNPARSED_CODES for d in module.diagnostics):
        raise RenameError("the file has syntax errors: fix them first, so that every use is found")
    ref = module.symbols.reference_at(offset)
    if ref is None:
        raise RenameError("nothing to rename here: place the cursor on a declared name")
    member = _member_of(module, ref.symbol)
    if member is not None:
        raise RenameError(
            f"'{ref.symbol.name}' is copy {member[1]} of the replicated morphism "
            f"'{member[0]}': rename '{member[0]}' instead"
        )
    return RenameTarget(ref.span, ref.symbol.name, ref.symbol)


def rename(module: CheckedModule, offset: int, new_name: str) -> list[TextEdit]:
    """Edits that rename the symbol at `offset` everywhere it is used, or RenameError."""
    target = prepare_rename(module, offset)
    symbol = target.symbol
    if new_name == symbol.name:
        return []
    validate_name(new_name)
    _check_collisions(module, symbol, new_name)
    edits = [TextEdit(r.span, new_name) for r in _references(module, symbol)]
    for copy in _copies(module, symbol):
        suffix = copy.name[len(symbol.name) :]
        edits.extend(TextEdit(r.span, new_name + suffix) for r in _references(module, copy))
    return sorted(set(edits), key=lambda e: e.span.start)


def validate_name(name: str) -> None:
    """RenameError unless `name` can be declared: an identifier, not reserved or builtin."""
    if not IDENTIFIER.fullmatch(name):
        raise RenameError(
            f"'{name}' is not an identifier: use letters, digits and '_', not starting with a digit"
        )
    if name in KEYWORDS:
        raise RenameError(f"'{name}' is a keyword")
    if name in BUILTIN_NAMES:
        raise RenameError(f"'{name}' is {BUILTIN_NAMES[name]}")


def _references(module: CheckedModule, symbol: Symbol) -> list[Reference]:
    """Every occurrence of the symbol's own name (definition included)."""
    return [
        r
        for r in module.symbols.references_to(symbol)
        if module.source[r.span.start : r.span.end] == symbol.name
    ]


def _member_of(module: CheckedModule, symbol: Symbol) -> tuple[str, int] | None:
    """(group, index) when the symbol is a copy `head_2` of a replicated morphism."""
    if symbol.scope is not None:
        return None
    found = module.resolve_morphism(symbol.name)
    if found is None or found[1] is None:
        return None
    return found[0].name, found[1]


def _copies(module: CheckedModule, symbol: Symbol) -> list[Symbol]:
    """The symbols of a replicated morphism's copies (`head_0`...), renamed with it."""
    if symbol.scope is not None:
        return []
    info = module.morphisms.get(symbol.name)
    if info is None or not info.replicate:
        return []
    names = set(info.members)
    return [s for s in module.symbols.top_level() if s.name in names]


def _check_collisions(module: CheckedModule, symbol: Symbol, new_name: str) -> None:
    if symbol.scope is not None:
        for other in module.symbols.symbols:
            if other.scope == symbol.scope and other.name == new_name:
                line = other.span.start_line + 1
                raise RenameError(
                    f"'{new_name}' is already bound in program {symbol.scope} (line {line})"
                )
        return
    taken = {s.name: s for s in module.symbols.top_level()}
    wanted = [new_name] + [new_name + c.name[len(symbol.name) :] for c in _copies(module, symbol)]
    for name in wanted:
        group = _group_owning(module, name)
        if group is not None and group != symbol.name:
            raise RenameError(f"'{name}' is a copy of the replicated morphism '{group}'")
        holder = taken.get(name)
        if holder is not None and holder not in (symbol, *_copies(module, symbol)):
            line = holder.span.start_line + 1
            raise RenameError(f"'{name}' is already declared ({holder.kind.value}, line {line})")


def _group_owning(module: CheckedModule, name: str) -> str | None:
    found = module.resolve_morphism(name)
    if found is None or found[1] is None:
        return None
    return found[0].name
