"""Asking lark for the parser's tables: only when tables.py has none kept for the grammar.

Lark builds the LALR(1) tables of grammar.lark with its callbacks around the
builder's (builder.py). Here they are rekeyed by plain strings, and each
callback is described by the wrappers lark put around it (`_spec`), so that
tables.py can keep them in a file and make the same callbacks without lark.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from lark import Lark
from lark.lexer import Lexer
from lark.parse_tree_builder import ChildFilterLALR_NoPlaceholders, ExpandSingleChild
from lark.parsers.lalr_parser_state import ParseConf

from qvr_core.syntax.builder import TreeBuilder
from qvr_core.syntax.table_spec import FORMAT, STARTS, Spec


class NoLexer(Lexer):
    """Placeholder: layout.py tokenizes, and the tables are driven with its tokens."""

    def __init__(self, conf: object) -> None:
        pass

    def lex(self, lexer_state: object, parser_state: object) -> Any:  # pragma: no cover
        raise NotImplementedError("tokens come from qvr_core.syntax.layout")


def from_lark(grammar: str, lark_cache: str | None) -> tuple[dict[str, Any], list[list[Any]]]:
    """What lark makes of `grammar`, in the form a cache file holds it (its `specs` false
    where a callback is of a kind `_spec` does not know), and lark's own callbacks (per
    table, per rule). `lark_cache`: where lark keeps its analysed grammar (it checks
    the grammar's hash)."""
    lark = Lark(
        grammar,
        parser="lalr",
        lexer=NoLexer,
        transformer=TreeBuilder(),
        start=list(STARTS),
        maybe_placeholders=False,
        cache=lark_cache or False,
    )
    confs = {start: lark.parse_interactive(start=start).parser_state.parse_conf for start in STARTS}
    indices: dict[int, int] = {}  # every start symbol reads the one table: rekeyed once
    tables: list[tuple[list[dict[str, int]], list[tuple[int, Spec | tuple[()] | None, str]]]] = []
    callbacks: list[list[Any]] = []
    specs_ok = True
    starts_at = {}
    for start, conf in confs.items():
        index = indices.get(id(conf.states))
        if index is None:
            index = indices[id(conf.states)] = len(tables)
            actions, rules, made = _rekey(conf)
            tables.append((actions, rules))
            callbacks.append(made)
            specs_ok = specs_ok and all(spec != () for _, spec, _ in rules)
        starts_at[start] = (index, conf.start_state, conf.end_state)
    kept = {
        "format": FORMAT,
        "grammar": grammar,
        "starts": STARTS,
        "tables": [(a, [(n, s or None, g) for n, s, g in r]) for a, r in tables],
        "starts_at": starts_at,
        "specs": specs_ok,
    }
    return kept, callbacks


def _rekey(
    conf: ParseConf[int],
) -> tuple[list[dict[str, int]], list[tuple[int, Spec | tuple[()] | None, str]], list[Any]]:
    """Lark's tables (keyed by grammar objects and lark tokens) keyed by plain strings,
    each rule with its callback's spec (`()` where `_spec` cannot describe it) and
    lark's callback itself."""
    rule_index: dict[object, int] = {}
    rules: list[tuple[int, Spec | tuple[()] | None, str]] = []
    made: list[Any] = []
    actions: list[dict[str, int]] = [{} for _ in range(max(conf.states) + 1)]
    for state, row in conf.states.items():
        for symbol, (_action, arg) in row.items():
            if isinstance(arg, int):  # shift or goto
                actions[state][str(symbol)] = arg
                continue
            if arg not in rule_index:
                rule_index[arg] = len(rules)
                passes_child = arg.options.expand1 and arg.alias is None and len(arg.expansion) == 1
                callback = None if passes_child else conf.callbacks[arg]
                spec = None if passes_child else _spec(arg, callback)
                rules.append((len(arg.expansion), spec, str(arg.origin.name)))
                made.append(callback)
            actions[state][str(symbol)] = ~rule_index[arg]
    return actions, rules, made


def _spec(rule: Any, callback: Any) -> Spec | tuple[()]:
    """The spec of lark's callback for `rule`, or `()` when it is not of the kinds
    `_callback` makes (another lark, another transformer): then lark's are used."""
    include = None
    f = callback
    if type(f) is ChildFilterLALR_NoPlaceholders:
        include = tuple((int(i), bool(x)) for i, x in f.to_include)
        f = f.node_builder
    single = type(f) is ExpandSingleChild
    if single:
        f = f.node_builder
    if getattr(f, "visit_wrapper", None) is not None or not callable(f):
        return ()
    name = rule.alias or rule.options.template_source or rule.origin.name
    if not isinstance(name, str):
        return ()
    found = getattr(TreeBuilder(), str(name), None)
    if found is None and not (type(f) is partial and len(f.args) == 1 and f.args[0] == name):
        return ()  # not lark's default callback either
    inlined = str(rule.origin.name).startswith("_")  # lark's `_should_expand`
    return (str(name), inlined, single, include)
