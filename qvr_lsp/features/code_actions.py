"""Quick fixes: the checker's fixes for the diagnostics in the requested range, as code actions.

Each action carries its diagnostic (so the client links them), is of kind
`quickfix`, is preferred when the checker marked the fix so (the one a
single keystroke applies), and edits the document at the analysed version.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types as lsp
from pygls.capabilities import get_capability

from qvr_core.ide.actions import quick_fixes
from qvr_lsp import capabilities
from qvr_lsp.convert import to_lsp_diagnostic
from qvr_lsp.features._current import current_analysis, workspace_edit
from qvr_lsp.guard import guarded

if TYPE_CHECKING:
    from qvr_lsp.server import QvrLanguageServer

QUICKFIX = lsp.CodeActionKind.QuickFix


def wants_quickfixes(context: lsp.CodeActionContext | None) -> bool:
    """False when the client asked only for other kinds (`only: ["refactor"]`)."""
    only = context.only if context is not None else None
    return not only or any(k == QUICKFIX or QUICKFIX.startswith(f"{k}.") for k in only)


def literal_actions(caps: lsp.ClientCapabilities | None) -> bool:
    """Whether the client takes CodeAction literals (every client since LSP 3.8 does)."""
    path = "text_document.code_action.code_action_literal_support"
    return caps is None or get_capability(caps, path, None) is not None


def preferred_support(caps: lsp.ClientCapabilities | None) -> bool:
    path = "text_document.code_action.is_preferred_support"
    return bool(get_capability(caps, path, False)) if caps is not None else False


def register(server: QvrLanguageServer) -> None:
    options = lsp.CodeActionOptions(code_action_kinds=[QUICKFIX])

    @server.feature(lsp.TEXT_DOCUMENT_CODE_ACTION, options)
    @guarded(list)
    async def code_actions(params: lsp.CodeActionParams) -> list[lsp.CodeAction]:
        caps = server.caps
        if not wants_quickfixes(params.context) or not literal_actions(caps):
            return []
        analysis = await current_analysis(server, params.text_document.uri)
        if analysis is None:
            return []
        start, end = analysis.positions.offsets(params.range)
        related = capabilities.related_information(caps)
        preferred = preferred_support(caps)
        unnecessary = capabilities.unnecessary_tag(caps)
        actions = []
        for found in quick_fixes(analysis.checked, start, end):
            diagnostic = to_lsp_diagnostic(
                found.diagnostic,
                analysis.positions,
                analysis.uri,
                related_information=related,
                unnecessary_tag=unnecessary,
            )
            actions.append(
                lsp.CodeAction(
                    title=found.fix.title,
                    kind=QUICKFIX,
                    diagnostics=[diagnostic],
                    is_preferred=(found.fix.preferred and preferred) or None,
                    edit=workspace_edit(server, analysis, found.fix.edits),
                )
            )
        return actions
