"""Rename and prepareRename over the protocol: `qvr_core.ide.rename` with positions converted.

A refusal (not a name, a keyword, a collision, a file with syntax errors)
is answered with a RequestFailed error whose message says why, which VS
Code and Neovim both show; it is not a server failure. Both name the
`CURRENT_TEXT` kind: an edit is computed on the text the client has now, and
while that text is still being analysed the refusal says so (`not_ready`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NoReturn

from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException

from qvr_core.ide.rename import RenameError, prepare_rename, rename
from qvr_lsp.protocol.convert import workspace_edit

if TYPE_CHECKING:
    from qvr_lsp.analysis.session import Session
    from qvr_lsp.analysis.snapshots import Analysis

REQUEST_FAILED = -32803
NOT_READY = "the file is still being analysed: try again"


class RenameRefused(JsonRpcException):
    """The reason a rename cannot be done, for the user."""

    def __init__(self, message: str) -> None:
        super().__init__(message=message, code=REQUEST_FAILED)


def not_ready() -> NoReturn:
    """No analysis of the current text in time: a refusal the user can act on (again)."""
    raise RenameRefused(NOT_READY)


async def prepare(
    session: Session, params: lsp.PrepareRenameParams, analysis: Analysis
) -> lsp.PrepareRenamePlaceholder | None:
    offset = analysis.positions.offset(params.position)
    try:
        target = prepare_rename(analysis.checked, offset)
    except RenameError as refusal:
        raise RenameRefused(str(refusal)) from None
    return lsp.PrepareRenamePlaceholder(
        range=analysis.positions.range(target.span), placeholder=target.placeholder
    )


async def rename_symbol(
    session: Session, params: lsp.RenameParams, analysis: Analysis
) -> lsp.WorkspaceEdit | None:
    offset = analysis.positions.offset(params.position)
    try:
        edits = rename(analysis.checked, offset, params.new_name)
    except RenameError as refusal:
        raise RenameRefused(str(refusal)) from None
    caps = session.server.caps
    return workspace_edit(caps, analysis.uri, analysis.version, analysis.positions, edits)
