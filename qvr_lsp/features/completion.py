"""Completion by context: the cursor's context from the core's tokens, names from its symbols.

Candidates come from the newest analysis and the last good one together
(while the user types, the newest text rarely parses), so names declared
before the edit are offered while the edited line is broken. Builtin names
(roles, families, options, combinators, functions, constructors) are the
core's own tables.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lsprotocol import types as lsp

from qvr_core.builtins import COMBINATORS, FAMILIES, FUNCTIONS, KERNEL_FAMILIES, OBJECT_CONSTRUCTORS
from qvr_core.builtins.families import codomain_words
from qvr_core.check.context import OPTION_KEYS, OPTION_VALUES
from qvr_core.check.module import Symbol, SymbolKind
from qvr_core.check.types import Group
from qvr_core.ide.builtins_info import describe
from qvr_lsp import capabilities
from qvr_lsp.analysis import Analysis
from qvr_lsp.features._completion_context import Context, Where, classify
from qvr_lsp.guard import guarded

if TYPE_CHECKING:
    from qvr_lsp.server import QvrLanguageServer

TRIGGER_CHARACTERS = ["~", "[", "(", ",", "=", ":", "-", ">", "*", "@"]
#: Above this many candidates the list is narrowed by the typed prefix and marked
#: incomplete, so the client asks again as the prefix grows (large files).
MAX_ITEMS = 200
TOP_KEYWORDS = ("object", "morphism", "let", "program", "export")
STEP_KEYWORDS = ("sample", "observe", "let", "return")

ITEM_KIND = {
    SymbolKind.OBJECT: lsp.CompletionItemKind.Struct,
    SymbolKind.MORPHISM: lsp.CompletionItemKind.Function,
    SymbolKind.LET: lsp.CompletionItemKind.Function,
    SymbolKind.PROGRAM: lsp.CompletionItemKind.Module,
    SymbolKind.PARAM: lsp.CompletionItemKind.Variable,
    SymbolKind.SAMPLE: lsp.CompletionItemKind.Variable,
    SymbolKind.OBSERVE: lsp.CompletionItemKind.Variable,
    SymbolKind.LOCAL: lsp.CompletionItemKind.Variable,
    SymbolKind.DECLARATION: lsp.CompletionItemKind.Reference,
}
LOCAL_KINDS = frozenset({SymbolKind.PARAM, SymbolKind.SAMPLE, SymbolKind.OBSERVE, SymbolKind.LOCAL})
CALLABLE_KINDS = frozenset({SymbolKind.MORPHISM, SymbolKind.LET, SymbolKind.PROGRAM})


@dataclass(frozen=True, slots=True)
class Candidate:
    """One thing that may be written here; cheap, so large files can be narrowed first."""

    label: str
    kind: lsp.CompletionItemKind
    detail: str
    rank: str = "1"  # sorts before the label: 0 local names, 1 declarations, 2 builtins
    doc: str | None = None
    insert: str | None = None

    def item(self, markdown: bool) -> lsp.CompletionItem:
        doc = capabilities.markup(markdown, self.doc, self.doc) if self.doc else None
        return lsp.CompletionItem(
            self.label,
            kind=self.kind,
            detail=self.detail,
            documentation=doc,
            insert_text=self.insert,
            sort_text=f"{self.rank}{self.label}",
        )


def candidates(context: Context, analyses: list[Analysis], cursor_line: int) -> list[Candidate]:
    """What may be written in `context`; `cursor_line` keeps a program's names bound above it."""
    where = context.where
    symbols = _symbols(analyses)
    found: list[Candidate] = []
    if where is Where.TOP_KEYWORD:
        found += _words(TOP_KEYWORDS, lsp.CompletionItemKind.Keyword, "keyword")
    elif where is Where.STEP_KEYWORD:
        found += _words(STEP_KEYWORDS, lsp.CompletionItemKind.Keyword, "keyword")
    elif where is Where.TYPE:
        found += _from(symbols, lambda s: s.kind is SymbolKind.OBJECT)
    elif where is Where.OBJECT_BODY:
        found += _builtins(OBJECT_CONSTRUCTORS, lsp.CompletionItemKind.TypeParameter)
        found += _from(
            symbols, lambda s: s.kind is SymbolKind.OBJECT and s.name != context.declaring
        )
    elif where is Where.OPTION_KEY:
        keys = [k for k in OPTION_KEYS if k not in context.present]
        found += _words(keys, lsp.CompletionItemKind.Property, "option", insert_suffix="=")
    elif where is Where.OPTION_VALUE:
        values = OPTION_VALUES.get(context.option or "", ())
        found += _words(values, lsp.CompletionItemKind.EnumMember, context.option or "value")
    elif where is Where.FAMILY:
        found += [
            Candidate(
                f,
                lsp.CompletionItemKind.EnumMember,
                f"family: needs {codomain_words(FAMILIES[f])}",
                "2",
                _doc(f),
            )
            for f in KERNEL_FAMILIES
        ]
    elif where is Where.CALLABLE:
        found += _from(
            symbols,
            lambda s: (
                s.kind in CALLABLE_KINDS
                and not isinstance(s.type, Group)
                and s.name != context.program
            ),
        )
    elif where is Where.LET_EXPR:
        found += _builtins(COMBINATORS, lsp.CompletionItemKind.Operator)
        found += _from(symbols, lambda s: s.kind in CALLABLE_KINDS and s.name != context.declaring)
    elif where in (Where.BOUND, Where.ARITH):
        found += _from(symbols, _bound_in(context.program, cursor_line), rank="0")
        if where is Where.ARITH:
            found += _builtins(FUNCTIONS, lsp.CompletionItemKind.Function)
    elif where is Where.EXPORT:
        found += _from(symbols, lambda s: s.kind in (SymbolKind.PROGRAM, SymbolKind.LET))
    return found


def completion_list(found: list[Candidate], prefix: str, markdown: bool) -> lsp.CompletionList:
    """All candidates, or (above MAX_ITEMS) those matching the prefix, marked incomplete."""
    if len(found) <= MAX_ITEMS:
        return lsp.CompletionList(is_incomplete=False, items=[c.item(markdown) for c in found])
    pattern = re.compile(".*?".join(map(re.escape, prefix)), re.IGNORECASE)
    narrowed = [c for c in found if pattern.search(c.label)][:MAX_ITEMS]
    return lsp.CompletionList(is_incomplete=True, items=[c.item(markdown) for c in narrowed])


def _symbols(analyses: list[Analysis]) -> list[Symbol]:
    """Every symbol of the analyses, newest first, one per (name, scope)."""
    modules = [a.module for a in analyses if a.module is not None]
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
        return s.kind is SymbolKind.PARAM or s.span.start_line < cursor_line

    return predicate


def _from(
    symbols: Iterable[Symbol], keep: Callable[[Symbol], bool], rank: str = "1"
) -> list[Candidate]:
    return [
        Candidate(
            s.name,
            ITEM_KIND.get(s.kind, lsp.CompletionItemKind.Text),
            s.detail or s.kind.value,
            rank,
            s.doc,
        )
        for s in symbols
        if keep(s)
    ]


def _doc(name: str) -> str | None:
    info = describe(name)
    return f"`{info.signature}`\n\n{info.doc}" if info is not None else None


def _builtins(names: Iterable[str], kind: lsp.CompletionItemKind) -> list[Candidate]:
    """Builtin names with their registry signature as detail and documentation."""
    found = []
    for name in names:
        info = describe(name)
        assert info is not None, name
        found.append(Candidate(name, kind, f"{info.kind}: {info.signature}", "2", info.doc))
    return found


def _words(
    words: Iterable[str], kind: lsp.CompletionItemKind, detail: str, insert_suffix: str = ""
) -> list[Candidate]:
    return [
        Candidate(w, kind, detail, "2", insert=f"{w}{insert_suffix}" if insert_suffix else None)
        for w in words
    ]


def register(server: QvrLanguageServer) -> None:
    options = lsp.CompletionOptions(trigger_characters=TRIGGER_CHARACTERS)

    @server.feature(lsp.TEXT_DOCUMENT_COMPLETION, options)
    @guarded(lambda: lsp.CompletionList(is_incomplete=False, items=[]))
    async def completion(params: lsp.CompletionParams) -> lsp.CompletionList:
        snap = await server.available(params.text_document.uri)
        if snap is None:
            return lsp.CompletionList(is_incomplete=False, items=[])
        offset = snap.document.positions.offset(params.position)
        context = classify(snap.document.text, offset)
        markdown = capabilities.markdown_completion_docs(server.caps)
        found = candidates(context, snap.for_queries(), params.position.line)
        return completion_list(found, context.prefix, markdown)
