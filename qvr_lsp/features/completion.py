"""Completion over the protocol: `qvr_core.ide.completion` finds the candidates, this converts them.

Candidates come from the newest analysis and the last good one together
(while the user types, the newest text rarely parses). The core's completion
modules are imported on the first request (see `DEFERRED`), not at start.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING

from lsprotocol import types as lsp

from qvr_core.check.module import SymbolKind
from qvr_lsp.protocol import capabilities

if TYPE_CHECKING:
    from qvr_core.ide.completion import Candidate
    from qvr_lsp.analysis.kinds import Known
    from qvr_lsp.analysis.session import Session

#: Imported on first use, or once the server is idle after its first diagnostics.
DEFERRED = ("qvr_core.ide.completion", "qvr_core.ide.completion_context")

TRIGGER_CHARACTERS = ["~", "[", "(", ",", "=", ":", "-", ">", "*", "@"]
OPTIONS = lsp.CompletionOptions(trigger_characters=TRIGGER_CHARACTERS)


@cache
def item_kinds() -> dict[object, lsp.CompletionItemKind]:
    """The protocol's kind of each kind of candidate."""
    from qvr_core.ide.completion import Word

    return {
        SymbolKind.OBJECT: lsp.CompletionItemKind.Struct,
        SymbolKind.MORPHISM: lsp.CompletionItemKind.Function,
        SymbolKind.LET: lsp.CompletionItemKind.Function,
        SymbolKind.PROGRAM: lsp.CompletionItemKind.Module,
        SymbolKind.PARAM: lsp.CompletionItemKind.Variable,
        SymbolKind.SAMPLE: lsp.CompletionItemKind.Variable,
        SymbolKind.OBSERVE: lsp.CompletionItemKind.Variable,
        SymbolKind.LOCAL: lsp.CompletionItemKind.Variable,
        SymbolKind.DATA: lsp.CompletionItemKind.Field,
        SymbolKind.DECLARATION: lsp.CompletionItemKind.Reference,
        Word.KEYWORD: lsp.CompletionItemKind.Keyword,
        Word.OPTION: lsp.CompletionItemKind.Property,
        Word.STEP_OPTION: lsp.CompletionItemKind.Property,
        Word.PARAMETER: lsp.CompletionItemKind.Property,
        Word.REDUCTION: lsp.CompletionItemKind.EnumMember,
        Word.OPTION_VALUE: lsp.CompletionItemKind.EnumMember,
        Word.FAMILY: lsp.CompletionItemKind.EnumMember,
        Word.CONSTRUCTOR: lsp.CompletionItemKind.TypeParameter,
        Word.COMBINATOR: lsp.CompletionItemKind.Operator,
        Word.FUNCTION: lsp.CompletionItemKind.Function,
        Word.ALGEBRA: lsp.CompletionItemKind.EnumMember,
        Word.TRANSFORMATION: lsp.CompletionItemKind.Function,
    }


def completion_list(found: list[Candidate], prefix: str, markdown: bool) -> lsp.CompletionList:
    """The candidates (narrowed by the prefix when there are many) as the protocol's list."""
    from qvr_core.ide.completion import narrow

    kept, cut = narrow(found, prefix)
    return lsp.CompletionList(is_incomplete=cut, items=[_item(c, markdown) for c in kept])


def _item(c: Candidate, markdown: bool) -> lsp.CompletionItem:
    doc = capabilities.markup(markdown, c.doc, c.doc) if c.doc else None
    return lsp.CompletionItem(
        c.label,
        kind=item_kinds().get(c.kind, lsp.CompletionItemKind.Text),
        detail=c.detail,
        documentation=doc,
        insert_text=c.insert,
        sort_text=f"{c.rank}{c.label}",
    )


def nothing() -> lsp.CompletionList:
    return lsp.CompletionList(is_incomplete=False, items=[])


async def completion(
    session: Session, params: lsp.CompletionParams, known: Known
) -> lsp.CompletionList:
    from qvr_core.ide.completion import candidates
    from qvr_core.ide.completion_context import classify

    offset = known.document.positions.offset(params.position)
    context = classify(known.document.text, offset)
    markdown = capabilities.markdown_completion_docs(session.server.caps)
    found = candidates(context, list(known.modules), params.position.line)
    return completion_list(found, context.prefix, markdown)
