"""Quick fixes: the checker's fixes for the diagnostics in the requested range, as code actions;
and one source action, "Migrate file to quivers 0.15+ syntax" (`qvr_core.migrate`, as
`qvr migrate`).

Each quick fix carries its diagnostic (so the client links them), is of kind
`quickfix`, is preferred when the checker marked the fix so (the one a
single keystroke applies), and edits the document at the analysed version.

The migration (kind `source.migrate`) is offered only when the client asks for
source actions by kind (VS Code's "Source Action..." menu, `only: ["source"]`):
it rewrites the whole file, so it is no lightbulb at every cursor, and it is
computed in a thread (it parses the file again), never on the event loop.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from lsprotocol import types as lsp
from pygls.capabilities import get_capability

from qvr_core.format.diff import diff_edits
from qvr_core.ide.actions import quick_fixes
from qvr_core.migrate import migrate_text
from qvr_lsp import capabilities
from qvr_lsp.convert import to_lsp_diagnostic
from qvr_lsp.features._current import current_analysis, workspace_edit
from qvr_lsp.guard import guarded

if TYPE_CHECKING:
    from qvr_lsp.analysis import Analysis
    from qvr_lsp.server import QvrLanguageServer

QUICKFIX = lsp.CodeActionKind.QuickFix
MIGRATE = f"{lsp.CodeActionKind.Source.value}.migrate"
MIGRATE_TITLE = "Migrate file to quivers 0.15+ syntax (define, ...)"


def wants(kind: str, context: lsp.CodeActionContext | None) -> bool:
    """False when the client asked only for other kinds (`only: ["refactor"]`)."""
    only = context.only if context is not None else None
    return not only or any(k == kind or kind.startswith(f"{k}.") for k in only)


def wants_quickfixes(context: lsp.CodeActionContext | None) -> bool:
    return wants(QUICKFIX, context)


def asked_for(kind: str, context: lsp.CodeActionContext | None) -> bool:
    """True when the client named `kind` (or a kind above it, `source`) in `only`."""
    return bool(context is not None and context.only) and wants(kind, context)


def literal_actions(caps: lsp.ClientCapabilities | None) -> bool:
    """Whether the client takes CodeAction literals (every client since LSP 3.8 does)."""
    path = "text_document.code_action.code_action_literal_support"
    return caps is None or get_capability(caps, path, None) is not None


def preferred_support(caps: lsp.ClientCapabilities | None) -> bool:
    path = "text_document.code_action.is_preferred_support"
    return bool(get_capability(caps, path, False)) if caps is not None else False


def register(server: QvrLanguageServer) -> None:
    options = lsp.CodeActionOptions(code_action_kinds=[QUICKFIX, MIGRATE])

    @server.feature(lsp.TEXT_DOCUMENT_CODE_ACTION, options)
    @guarded(list)
    async def code_actions(params: lsp.CodeActionParams) -> list[lsp.CodeAction]:
        caps = server.caps
        if not literal_actions(caps):
            return []
        quick, migrate = wants_quickfixes(params.context), asked_for(MIGRATE, params.context)
        if not (quick or migrate):
            return []
        analysis = await current_analysis(server, params.text_document.uri)
        if analysis is None:
            return []
        actions = []
        if migrate:
            actions += await _migration(server, analysis)
        if not quick:
            return actions
        start, end = analysis.positions.offsets(params.range)
        related = capabilities.related_information(caps)
        preferred = preferred_support(caps)
        unnecessary = capabilities.unnecessary_tag(caps)
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


async def _migration(server: QvrLanguageServer, analysis: Analysis) -> list[lsp.CodeAction]:
    """The whole file rewritten in today's syntax, when that changes it (and it parses)."""
    if analysis.large or not analysis.parsed:
        return []
    result = await asyncio.to_thread(migrate_text, analysis.text, "current")
    if not result.ok or result.text == analysis.text:
        return []
    edits = diff_edits(analysis.text, result.text)
    return [
        lsp.CodeAction(
            title=MIGRATE_TITLE,
            kind=MIGRATE,
            edit=workspace_edit(server, analysis, edits),
        )
    ]
