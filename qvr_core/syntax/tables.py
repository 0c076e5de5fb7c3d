"""The LALR(1) tables the parser drives, kept between runs so that starting needs no lark.

Lark compiles grammar.lark into tables and wraps the tree-building callbacks
(builder.py) in its own: one keeps a rule's children but its anonymous
tokens, one passes a `?rule`'s single child up, and a rule without a
callback builds a lark `Tree`. Importing lark and loading even its cached
grammar took a third of the language server's start. So the first run that
parses asks lark, and writes its tables, with each rule's callback described
by those wrappers, to the user's cache (`marshal`: plain values, read in a
few milliseconds); later runs rebuild the same callbacks from that file
without importing lark. A file made for another grammar, another table
format or another Python, or one that cannot be read, is made again; where
the cache folder cannot be written, lark builds the tables every run, as
before.
"""

from __future__ import annotations

import contextlib
import marshal
import os
import sys
from dataclasses import dataclass
from functools import cache, partial
from pathlib import Path
from typing import Any

from qvr_core.syntax.builder import TreeBuilder
from qvr_core.syntax.table_spec import FORMAT as FORMAT
from qvr_core.syntax.table_spec import STARTS as STARTS
from qvr_core.syntax.table_spec import Callback, Spec

GRAMMAR = Path(__file__).with_name("grammar.lark")


@dataclass(frozen=True)
class Tables:
    """The LALR(1) tables of one start symbol, keyed by plain strings for a tight loop.

    `actions[state][symbol]` is the next state (>= 0) for a shift or a goto, or
    `~rule` (< 0) for a reduction by `rules[rule] = (length, callback, goal)`;
    the callback is None for a `?rule` alternative that just passes its child up.
    """

    actions: tuple[dict[str, int], ...]
    rules: tuple[tuple[int, Callback | None, str], ...]
    start: int
    end: int


@cache
def tables() -> dict[str, Tables]:
    """The tables for each start symbol (built once, shared by all threads)."""
    grammar = GRAMMAR.read_text(encoding="utf-8")
    path = cache_path()
    kept = _read(path, grammar) if path is not None else None
    if kept is not None:
        try:
            return made(kept, TreeBuilder())
        except (ValueError, TypeError, KeyError, IndexError):  # a file damaged some other way
            pass
    from qvr_core.syntax.lark_tables import from_lark  # the one import of lark

    kept, callbacks = from_lark(grammar, cache_path("lark", "lark-grammar") if path else None)
    if not kept["specs"]:  # lark's own callbacks then, every run
        return made(kept, TreeBuilder(), callbacks)
    if path is not None:
        _write(path, kept)
    return made(kept, TreeBuilder())


def cache_path(suffix: str = "marshal", name: str = "tables") -> str | None:
    """Where the tables are kept between runs: the user's cache directory (the file is
    Python's `marshal` format, so one per Python version). None when it cannot be created."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    folder = os.path.join(base, "qvr")
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError:
        return None
    return os.path.join(folder, f"{name}-py{sys.version_info[0]}{sys.version_info[1]}.{suffix}")


def _read(path: str, grammar: str) -> dict[str, Any] | None:
    """The kept tables of `grammar`, or None when the file is missing, unreadable or
    made for something else."""
    try:
        with open(path, "rb") as f:
            kept = marshal.loads(f.read())  # (`marshal.load` reads a file in small pieces)
    except (OSError, EOFError, ValueError, TypeError):
        return None
    if not isinstance(kept, dict) or kept.get("format") != FORMAT:
        return None
    if kept.get("grammar") != grammar or kept.get("starts") != STARTS:
        return None
    return kept


def _write(path: str, kept: dict[str, Any]) -> None:
    """Write the file whole or not at all (another process may be reading it)."""
    temporary = f"{path}.{os.getpid()}.tmp"
    try:
        with open(temporary, "wb") as f:
            marshal.dump(kept, f)
        os.replace(temporary, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.remove(temporary)


def made(
    kept: dict[str, Any], builder: TreeBuilder, callbacks: list[list[Any]] | None = None
) -> dict[str, Tables]:
    """`Tables` from what `lark_tables.from_lark` gave (or a cache file held), with the
    callbacks made from their specs, or `callbacks` (lark's own) when given."""
    built: list[tuple[tuple[dict[str, int], ...], tuple[tuple[int, Callback | None, str], ...]]]
    built = []
    for index, (actions, rules) in enumerate(kept["tables"]):
        given = callbacks[index] if callbacks is not None else None
        built.append(
            (
                tuple(actions),
                tuple(
                    (length, _callback(spec, builder) if given is None else given[i], goal)
                    for i, (length, spec, goal) in enumerate(rules)
                ),
            )
        )
    found = {}
    for start, (index, start_state, end_state) in kept["starts_at"].items():
        actions, rules = built[index]
        found[start] = Tables(actions, rules, start_state, end_state)
    return found


def _callback(spec: Spec | None, builder: TreeBuilder) -> Callback | None:
    """The callback `spec` describes, as lark's `ParseTreeBuilder.create_callback` makes it."""
    if spec is None:
        return None
    name, inlined, single, include = spec
    try:
        f: Callback = getattr(builder, name)
    except AttributeError:
        f = _Inlined if inlined else partial(_tree, name)
    if single:
        f = partial(_single_child, f)
    if include is not None:
        f = partial(_kept_children, include, f)
    return f


def _single_child(node_builder: Callback, children: list[Any]) -> object:
    """lark's `ExpandSingleChild`."""
    if len(children) == 1:
        return children[0]
    return node_builder(children)


def _kept_children(
    include: tuple[tuple[int, bool], ...], node_builder: Callback, children: list[Any]
) -> object:
    """lark's `ChildFilterLALR_NoPlaceholders` (an inlined rule's children spliced in)."""
    filtered: list[Any] = []
    for i, to_expand in include:
        if to_expand:
            if filtered:
                filtered += children[i].children
            else:  # (lark's own shortcut for left recursion: the list itself)
                filtered = children[i].children
        else:
            filtered.append(children[i])
    return node_builder(filtered)


class _Inlined:
    """What a `_rule` without a callback gives (lark's default is a `Tree`): the rules
    that use it splice its children in (none is a start symbol), so they are all that
    is ever read of it."""

    __slots__ = ("children",)

    def __init__(self, children: list[Any]) -> None:
        self.children = children


def _tree(name: str, children: list[Any]) -> object:
    """What lark gives for a rule without a callback: its `Tree` (lark is imported then,
    and only then; lark's own name is a `Token` or a plain string, equal either way,
    as it built the grammar or read it from its cache)."""
    from lark import Tree

    return Tree(name, children)
