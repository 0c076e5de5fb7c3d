"""For the editing features: the analysis of the current text; edits as the client takes them.

Features that return positions into the text (rename, quick fixes, inlay
hints, tokens, folding, selection) answer only from an analysis of the
text the client has now, so a range never lands on shifted text.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from lsprotocol import types as lsp
from pygls.capabilities import get_capability

from qvr_core.text.diagnostics import TextEdit
from qvr_lsp.analysis import Analysis
from qvr_lsp.convert import TextPositions

if TYPE_CHECKING:
    from qvr_lsp.server import QvrLanguageServer


async def current_analysis(server: QvrLanguageServer, uri: str) -> Analysis | None:
    """The analysis of the document's current text (waiting, bounded, for it), or None."""
    snap = await server.settled(uri)
    if snap is None or not snap.current or snap.newest is None or snap.newest.module is None:
        return None
    return snap.newest


def text_edits(edits: Iterable[TextEdit], positions: TextPositions) -> list[lsp.TextEdit]:
    return [lsp.TextEdit(positions.range(e.span), e.new_text) for e in edits]


def workspace_edit(
    server: QvrLanguageServer, analysis: Analysis, edits: Iterable[TextEdit]
) -> lsp.WorkspaceEdit:
    """Edits of one document, versioned when the client takes `documentChanges`."""
    changes = text_edits(edits, analysis.positions)
    caps = server.caps
    versioned = caps is not None and get_capability(
        caps, "workspace.workspace_edit.document_changes", False
    )
    if versioned:
        document = lsp.OptionalVersionedTextDocumentIdentifier(analysis.uri, analysis.version)
        return lsp.WorkspaceEdit(document_changes=[lsp.TextDocumentEdit(document, changes)])
    return lsp.WorkspaceEdit(changes={analysis.uri: changes})
