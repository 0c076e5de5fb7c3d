"""`workspace/executeCommand`: `qvr.diagram` and `qvr.exportProgram` (the run is the runs').

Both answer with JSON any client can use. Failures the user can act on (an unknown
program, a file with errors) are protocol errors whose message says what happened
and `data.kind` says which; an unexpected failure is one internal error, logged, and
the server goes on (`analysis.handlers.dispatch`). `qvr.exportProgram` answers a
refusal as a result instead, `{"ok": false, "message", "diagnostics"}`, since where a
target cannot follow is part of its answer; only arguments of the wrong shape are
errors there. Their work is in `diagrams.py` and `exports.py`, imported on the first
command: this module is imported at the server's start, they are not.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from qvr_lsp.analysis.kinds import Open
    from qvr_lsp.analysis.session import Session
    from qvr_lsp.protocol.contract import DiagramResult, ExportRefused, ExportWritten

#: Imported on first use, or once the server is idle after its first diagnostics.
DEFERRED = (
    "qvr_lsp.analysis.command_sources",
    "qvr_lsp.features.diagrams",
    "qvr_lsp.features.exports",
    "qvr_core.export",
)


async def diagram(session: Session, args: tuple[Any, ...], open_documents: Open) -> DiagramResult:
    from qvr_lsp.features.diagrams import diagram_result

    return await diagram_result(open_documents, args)


async def export_program(
    session: Session, args: tuple[Any, ...], open_documents: Open
) -> ExportWritten | ExportRefused:
    from qvr_lsp.features.exports import export_result

    return await export_result(session, open_documents, args)
