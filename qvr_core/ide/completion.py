"""Completion candidates: what may be written at the cursor, from its context and the symbols.

The context comes from `completion_context.classify` (tokens of the text
before the cursor, which rarely parses while the user types). Candidates come
from the given checked modules together, newest first (the server passes its
newest analysis and the last good one), so names declared before an edit are
offered while the edited line is broken. Builtin names (keywords, roles,
families, options, combinators, functions, constructors) are the core's own
tables.
Plain values; `qvr_lsp/features/completion.py` converts them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import StrEnum

from qvr_core.builtins import (
    ALGEBRAS,
    COMBINATORS,
    FAMILIES,
    FUNCTIONS,
    KERNEL_FAMILIES,
    OBJECT_CONSTRUCTORS,
    STEP_KEYWORDS,
    TOP_KEYWORDS,
    Keyword,
)
from qvr_core.builtins.bijectors import BIJECTORS
from qvr_core.builtins.constraints import Constraint
from qvr_core.builtins.families import codomain_words
from qvr_core.builtins.functions import LIFTED
from qvr_core.builtins.schemas import PARSER, PARSER_KEYWORDS, SCHEMAS
from qvr_core.builtins.transformations import TRANSFORMATIONS
from qvr_core.check.context import OPTION_KEYS, OPTION_VALUES
from qvr_core.check.model import CONSTRAINT_OPTION, REDUCTIONS, STEP_OPTIONS
from qvr_core.check.module import CheckedModule, Symbol, SymbolKind
from qvr_core.check.qiec_declarations import Family, HandlerInfo
from qvr_core.check.step_constraints import CONSTRAINT_VALUES
from qvr_core.check.types import Group
from qvr_core.ide.builtins_info import PARAM_SOURCE_OPTION, describe, describe_param_source
from qvr_core.ide.completion_context import Context, Where

#: Above this many candidates the list is narrowed by the typed prefix and marked
#: incomplete, so the client asks again as the prefix grows (large files).
MAX_ITEMS = 200
LOCAL_KINDS = frozenset(
    {SymbolKind.PARAM, SymbolKind.SAMPLE, SymbolKind.OBSERVE, SymbolKind.LOCAL, SymbolKind.DATA}
)
CALLABLE_KINDS = frozenset({SymbolKind.MORPHISM, SymbolKind.LET, SymbolKind.PROGRAM})


class Word(StrEnum):
    """What a candidate that is not a declared name is."""

    KEYWORD = "keyword"
    OPTION = "option"
    STEP_OPTION = "step option"
    PARAMETER = "family parameter"
    REDUCTION = "reduction"
    OPTION_VALUE = "option value"
    FAMILY = "family"
    CONSTRUCTOR = "constructor"
    COMBINATOR = "combinator"
    FUNCTION = "function"
    ALGEBRA = "composition rule"
    TRANSFORMATION = "transformation"
    HANDLER = "handler"


@dataclass(frozen=True, slots=True)
class Candidate:
    """One thing that may be written here; cheap, so large files can be narrowed first."""

    label: str
    kind: SymbolKind | Word
    detail: str
    rank: str = "1"  # sorts before the label: 0 local names, 1 declarations, 2 builtins
    doc: str | None = None
    insert: str | None = None


def candidates(context: Context, modules: list[CheckedModule], cursor_line: int) -> list[Candidate]:
    """What may be written in `context`; `cursor_line` keeps a program's names bound above it."""
    where = context.where
    symbols = _symbols(modules)
    found: list[Candidate] = []
    if where is Where.TOP_KEYWORD:
        found += _keywords(TOP_KEYWORDS)
    elif where is Where.STEP_KEYWORD:
        found += _keywords(STEP_KEYWORDS)
    elif where is Where.TYPE:
        found += _from(symbols, lambda s: s.kind is SymbolKind.OBJECT)
    elif where is Where.OBJECT_BODY:
        found += _builtins(OBJECT_CONSTRUCTORS, Word.CONSTRUCTOR)
        found += _from(
            symbols, lambda s: s.kind is SymbolKind.OBJECT and s.name != context.declaring
        )
    elif where is Where.OPTION_KEY:
        keys = [k for k in OPTION_KEYS if k not in context.present]
        found += _words(keys, Word.OPTION, "option", insert_suffix="=")
    elif where is Where.OPTION_VALUE:
        values = OPTION_VALUES.get(context.option or "", ())
        if context.option == PARAM_SOURCE_OPTION:  # the registry's param sources, documented
            found += _param_sources(values)
        else:
            found += _words(values, Word.OPTION_VALUE, context.option or "value")
    elif where is Where.FAMILY:
        found += [
            Candidate(f, Word.FAMILY, f"family: needs {codomain_words(FAMILIES[f])}", "2", _doc(f))
            for f in KERNEL_FAMILIES
        ]
    elif where is Where.STEP_OPTION_KEY:
        keys = [k for k in STEP_OPTIONS if k not in context.present]
        found += _words(keys, Word.STEP_OPTION, "step option", insert_suffix="=")
    elif where is Where.STEP_OPTION_VALUE:
        if context.option == "reduction":
            found += _words(REDUCTIONS, Word.REDUCTION, "reduction")
        elif context.option in ("over", "iid_over"):
            found += _from(symbols, lambda s: s.kind is SymbolKind.OBJECT)
        elif context.option == "via":
            found += _from(symbols, _bound_in(context.program, cursor_line), rank="0")
        elif context.option == CONSTRAINT_OPTION:
            found += [
                Candidate(w, Word.OPTION_VALUE, f"constraint: {Constraint(w).describe()}", "2")
                for w in CONSTRAINT_VALUES
            ]
    elif where is Where.CALLABLE:
        found += [
            Candidate(f, Word.FAMILY, f"family {FAMILIES[f].signature()}", "2", _doc(f))
            for f in FAMILIES
            if FAMILIES[f].stochastic
        ]
        found += _from(
            symbols,
            lambda s: (
                s.kind in CALLABLE_KINDS
                and not isinstance(s.type, Group)
                and s.name != context.program
            ),
        )
    elif where is Where.LET_EXPR:
        # a chart parser is a let's whole expression: it composes with nothing
        found += _builtins((*COMBINATORS, *([PARSER] if context.whole else [])), Word.COMBINATOR)
        found += _from(symbols, lambda s: s.kind in CALLABLE_KINDS and s.name != context.declaring)
    elif where is Where.PARSER_KEY:
        found += [
            Candidate(k, Word.PARAMETER, "parser keyword", "1", doc, insert=f"{k}=")
            for k, doc in PARSER_KEYWORDS.items()
            if k not in context.present
        ]
    elif where is Where.PARSER_RULE:
        found += _from(
            symbols,
            lambda s: (
                s.kind is SymbolKind.DECLARATION
                and s.detail.startswith(("rule", "schema", "bundle"))
            ),
        )
        found += _builtins(SCHEMAS, Word.COMBINATOR)
    elif where in (Where.BOUND, Where.ARITH):
        found += _from(symbols, _bound_in(context.program, cursor_line), rank="0")
        family = FAMILIES.get(context.callee or "")
        if family is not None:  # the family's parameters, by keyword
            found += [
                Candidate(
                    f"{p.name}=",
                    Word.PARAMETER,
                    f"{family.name} parameter: {p.constraint.describe()}",
                    "1",
                    p.doc or None,
                    insert=f"{p.name}=",
                )
                for p in dict.fromkeys(q for schema in family.schemas for q in schema)
            ]
        if family is not None and family.measure is not None:  # its arguments: distributions
            found += [
                Candidate(f, Word.FAMILY, f"family {FAMILIES[f].signature()}", "2", _doc(f))
                for f in FAMILIES
                if FAMILIES[f].has_distribution or FAMILIES[f].measure is not None
            ]
            if family.measure == "pushforward":
                found += _builtins(BIJECTORS, Word.FUNCTION)
        if where is Where.ARITH:
            found += _builtins((*FUNCTIONS, *LIFTED), Word.FUNCTION)
    elif where is Where.EXPORT:
        found += _from(symbols, lambda s: s.kind in (SymbolKind.PROGRAM, SymbolKind.LET))
    elif where is Where.TRANSFORMATION:
        found += [
            Candidate(
                t.name,
                Word.TRANSFORMATION,
                f"transformation {t.call}: {t.source} -> {t.target}",
                "2",
                t.describe(),
                insert=f"{t.name}(" if t.constructor else None,
            )
            for t in TRANSFORMATIONS.values()
        ]
        found += [
            Candidate(n, SymbolKind.LET, "transformation", "1")
            for m in modules
            for n, let in m.lets.items()
            if let.transformation is not None and n != context.declaring
        ]
    elif where in (Where.CONSTRUCTOR, Where.HANDLER, Where.INSTANCE):
        found += _qiec_names(where, modules)
    elif where is Where.ALGEBRA:
        found += [
            Candidate(
                a.name, Word.ALGEBRA, f"{a.level}: {a.tensor}, join {a.join}", "2", a.describe()
            )
            for a in ALGEBRAS.values()
        ]
    return found


def _qiec_names(where: Where, modules: list[CheckedModule]) -> list[Candidate]:
    """The constructors of the module's families, its handlers, or its instances, as
    the checker recorded them."""
    out: list[Candidate] = []
    for m in modules:
        for name, record in m.qiec.items():
            if where is Where.CONSTRUCTOR and isinstance(record, Family):
                out += [
                    Candidate(c.name, Word.CONSTRUCTOR, f"constructor of {name}", "1", None)
                    for c in record.constructors
                ]
            elif where is Where.HANDLER and isinstance(record, HandlerInfo):
                out.append(Candidate(name, Word.HANDLER, record.summary(), "1", None))
        if where is Where.INSTANCE:
            out += [
                Candidate(s.name, SymbolKind.DECLARATION, s.detail, "1", None)
                for s in m.symbols.top_level()
                if s.detail.startswith("instance ")
            ]
    return out


def narrow(found: list[Candidate], prefix: str) -> tuple[list[Candidate], bool]:
    """All candidates, or (above MAX_ITEMS) those matching the prefix as a subsequence in
    any case; the flag says the list was cut (the client asks again as the prefix grows)."""
    if len(found) <= MAX_ITEMS:
        return found, False
    pattern = subsequence(prefix)
    return [c for c in found if pattern.search(c.label)][:MAX_ITEMS], True


def subsequence(query: str) -> re.Pattern[str]:
    """A pattern whose `search` finds whether a text holds `query`'s characters in order,
    in any case (how editors filter names).

    Each character is the first of its kind after the one before (`[^b]*b`), and
    only from the text's start: linear in the text. `a.*?b.*?c` says the same, but
    where it fails it tries every placement of the characters from every start:
    a 4-letter query took 30 s on a name of 400 letters.
    """
    steps = (f"[^{re.escape(ch)}]*{re.escape(ch)}" for ch in query)
    return re.compile(r"\A" + "".join(steps), re.IGNORECASE)


def _symbols(modules: list[CheckedModule]) -> list[Symbol]:
    """Every symbol of the modules, newest first, one per (name, scope)."""
    if len(modules) == 1:
        return list(modules[0].symbols.symbols)
    seen: set[tuple[str, str | None]] = set()
    out: list[Symbol] = []
    for module in modules:
        for s in module.symbols.symbols:
            key = (s.name, s.scope)
            if key not in seen:
                seen.add(key)
                out.append(s)
    return out


def _bound_in(program: str | None, cursor_line: int) -> Callable[[Symbol], bool]:
    def predicate(s: Symbol) -> bool:
        if program is None or s.scope != program or s.kind not in LOCAL_KINDS:
            return False
        return s.kind in (SymbolKind.PARAM, SymbolKind.DATA) or s.span.start_line < cursor_line

    return predicate


def _from(
    symbols: Iterable[Symbol], keep: Callable[[Symbol], bool], rank: str = "1"
) -> list[Candidate]:
    return [
        Candidate(s.name, s.kind, s.detail or s.kind.value, rank, s.doc) for s in symbols if keep(s)
    ]


def _doc(name: str) -> str | None:
    info = describe(name)
    return f"`{info.signature}`\n\n{info.doc}" if info is not None else None


def _builtins(names: Iterable[str], kind: Word) -> list[Candidate]:
    """Builtin names with their registry signature as detail and documentation."""
    found = []
    for name in names:
        info = describe(name)
        assert info is not None, name  # the registry describes every name it lists
        found.append(Candidate(name, kind, f"{info.kind}: {info.signature}", "2", info.doc))
    return found


def _param_sources(names: Iterable[str]) -> list[Candidate]:
    """`param_source=` values with their registry doc (what network each builds)."""
    found = []
    for name in names:
        info = describe_param_source(name)
        assert info is not None, name  # the option's values are the registry's
        found.append(Candidate(name, Word.OPTION_VALUE, info.kind, "2", info.doc))
    return found


def _keywords(keywords: Iterable[Keyword]) -> list[Candidate]:
    """The registry's keywords with their one-line doc."""
    return [Candidate(k.word, Word.KEYWORD, "keyword", "2", k.doc) for k in keywords]


def _words(
    words: Iterable[str], kind: Word, detail: str, insert_suffix: str = ""
) -> list[Candidate]:
    return [
        Candidate(w, kind, detail, "2", insert=f"{w}{insert_suffix}" if insert_suffix else None)
        for w in words
    ]
