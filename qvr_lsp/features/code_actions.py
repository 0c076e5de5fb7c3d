"""Code actions: the checker's quick fixes for the diagnostics in the requested range; the
refactors extract and inline (`qvr_core.ide.refactor`); `source.fixAll`, every preferred fix;
and "Migrate file to quivers 0.15+ syntax" (`qvr_core.migrate`, as `qvr migrate`).

Each quick fix carries its diagnostic (so the client links them), is of kind
`quickfix`, is preferred when the checker marked the fix so (the one a
single keystroke applies), and edits the document at the analysed version.

The source actions (`source.fixAll`, `source.migrate`) are offered only when the client asks
for them by kind (VS Code's "Source Action..." menu, `only: ["source"]`): they rewrite the
whole file, so they are no lightbulb at every cursor. The migration is computed in a thread
(it parses the file again), never on the event loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import TYPE_CHECKING

from lsprotocol import types as lsp
from pygls.capabilities import get_capability

from qvr_lsp.protocol import capabilities
from qvr_lsp.protocol.convert import to_lsp_diagnostic, workspace_edit

if TYPE_CHECKING:
    from qvr_core.ide.actions import QuickFix
    from qvr_core.text.diagnostics import TextEdit
    from qvr_lsp.analysis.session import Session
    from qvr_lsp.analysis.snapshots import Analysis

#: Imported on first use, or once the server is idle after its first diagnostics.
DEFERRED = ("qvr_core.ide.actions", "qvr_core.ide.refactor")

QUICKFIX = lsp.CodeActionKind.QuickFix
EXTRACT = lsp.CodeActionKind.RefactorExtract
INLINE = lsp.CodeActionKind.RefactorInline
FIX_ALL = lsp.CodeActionKind.SourceFixAll
MIGRATE = f"{lsp.CodeActionKind.Source.value}.migrate"
MIGRATE_TITLE = "Migrate file to quivers 0.15+ syntax (define, ...)"
#: The kinds the capabilities advertise.
OPTIONS = lsp.CodeActionOptions(code_action_kinds=[QUICKFIX, EXTRACT, INLINE, FIX_ALL, MIGRATE])


def wants(kind: str, context: lsp.CodeActionContext | None) -> bool:
    """Whether the client asked for `kind`: it named it, or a kind it belongs to
    (`refactor` includes `refactor.extract`), or it named none."""
    only = context.only if context is not None else None
    return not only or any(kind == k or kind.startswith(f"{k}.") for k in only)


def asked_for(kind: str, context: lsp.CodeActionContext | None) -> bool:
    """Whether the client named `kind` or a kind it belongs to: source actions change the
    whole file, so they are given only when asked for (VS Code's Source Action menu, on save)."""
    only = context.only if context is not None else None
    return bool(only) and wants(kind, context)


def wants_quickfixes(context: lsp.CodeActionContext | None) -> bool:
    """False when the client asked only for other kinds (`only: ["refactor"]`)."""
    return wants(QUICKFIX, context)


def literal_actions(caps: lsp.ClientCapabilities | None) -> bool:
    """Whether the client takes CodeAction literals (every client since LSP 3.8 does)."""
    path = "text_document.code_action.code_action_literal_support"
    return caps is None or get_capability(caps, path, None) is not None


def preferred_support(caps: lsp.ClientCapabilities | None) -> bool:
    path = "text_document.code_action.is_preferred_support"
    return bool(get_capability(caps, path, False)) if caps is not None else False


async def code_actions(
    session: Session, params: lsp.CodeActionParams, analysis: Analysis
) -> list[lsp.CodeAction]:
    from qvr_core.ide.actions import fix_all, quick_fixes
    from qvr_core.ide.refactor import extract, inline

    caps = session.server.caps
    if not literal_actions(caps):
        return []
    module = analysis.checked
    start, end = analysis.positions.offsets(params.range)
    actions: list[lsp.CodeAction] = []
    if wants(QUICKFIX, params.context):
        fixes = quick_fixes(module, start, end)
        actions += [_quick_fix(caps, analysis, found) for found in fixes]
    if wants(EXTRACT, params.context):
        extracted = extract(module, start, end)
        if extracted is not None:
            edit = _edit(caps, analysis, extracted.edits)
            actions.append(lsp.CodeAction(title=extracted.title, kind=EXTRACT, edit=edit))
    if wants(INLINE, params.context):
        inlined = inline(module, start)
        if inlined is not None:
            edit = _edit(caps, analysis, inlined.edits)
            actions.append(lsp.CodeAction(title=inlined.title, kind=INLINE, edit=edit))
    if asked_for(FIX_ALL, params.context):
        every = fix_all(module)
        if every:
            edits = [e for found in every for e in found.fix.edits]
            title = f"Fix all: apply {len(every)} preferred fix{'es' if len(every) > 1 else ''}"
            actions.append(
                lsp.CodeAction(title=title, kind=FIX_ALL, edit=_edit(caps, analysis, edits))
            )
    if asked_for(MIGRATE, params.context):
        actions += await _migration(caps, analysis)
    return actions


def _edit(
    caps: lsp.ClientCapabilities | None, analysis: Analysis, edits: Iterable[TextEdit]
) -> lsp.WorkspaceEdit:
    return workspace_edit(caps, analysis.uri, analysis.version, analysis.positions, edits)


def _quick_fix(
    caps: lsp.ClientCapabilities | None, analysis: Analysis, found: QuickFix
) -> lsp.CodeAction:
    diagnostic = to_lsp_diagnostic(
        found.diagnostic,
        analysis.positions,
        analysis.uri,
        related_information=capabilities.related_information(caps),
        unnecessary_tag=capabilities.unnecessary_tag(caps),
    )
    return lsp.CodeAction(
        title=found.fix.title,
        kind=QUICKFIX,
        diagnostics=[diagnostic],
        is_preferred=(found.fix.preferred and preferred_support(caps)) or None,
        edit=_edit(caps, analysis, found.fix.edits),
    )


async def _migration(
    caps: lsp.ClientCapabilities | None, analysis: Analysis
) -> list[lsp.CodeAction]:
    """The whole file rewritten in today's syntax, when that changes it (and it parses)."""
    from qvr_core.format.diff import diff_edits
    from qvr_core.migrate import migrate_text

    if analysis.large or not analysis.parsed:
        return []
    result = await asyncio.to_thread(migrate_text, analysis.text, "current")
    if not result.ok or result.text == analysis.text:
        return []
    edits = diff_edits(analysis.text, result.text)
    return [lsp.CodeAction(title=MIGRATE_TITLE, kind=MIGRATE, edit=_edit(caps, analysis, edits))]
