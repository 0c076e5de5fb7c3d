"""Rename and prepareRename over the protocol: `qvr_core.ide.rename` with positions converted.

A refusal (not a name, a keyword, a collision, a file with syntax errors)
is answered with a RequestFailed error whose message says why, which VS
Code and Neovim both show; it is not a server failure.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException

from qvr_core.ide.rename import RenameError, prepare_rename, rename
from qvr_lsp.features._current import current_analysis, workspace_edit
from qvr_lsp.guard import guarded

if TYPE_CHECKING:
    from qvr_lsp.server import QvrLanguageServer

REQUEST_FAILED = -32803
NOT_READY = "the file is still being analysed: try again"


class RenameRefused(JsonRpcException):
    """The reason a rename cannot be done, for the user."""

    def __init__(self, message: str) -> None:
        super().__init__(message=message, code=REQUEST_FAILED)


def register(server: QvrLanguageServer) -> None:
    @guarded()
    async def answer_prepare(
        params: lsp.PrepareRenameParams,
    ) -> lsp.PrepareRenamePlaceholder | str | None:
        analysis = await current_analysis(server, params.text_document.uri)
        if analysis is None:
            return NOT_READY
        offset = analysis.positions.offset(params.position)
        try:
            target = prepare_rename(analysis.checked, offset)
        except RenameError as refusal:
            return str(refusal)
        return lsp.PrepareRenamePlaceholder(
            range=analysis.positions.range(target.span), placeholder=target.placeholder
        )

    @guarded()
    async def answer_rename(params: lsp.RenameParams) -> lsp.WorkspaceEdit | str | None:
        analysis = await current_analysis(server, params.text_document.uri)
        if analysis is None:
            return NOT_READY
        offset = analysis.positions.offset(params.position)
        try:
            edits = rename(analysis.checked, offset, params.new_name)
        except RenameError as refusal:
            return str(refusal)
        return workspace_edit(server, analysis, edits)

    @server.feature(lsp.TEXT_DOCUMENT_PREPARE_RENAME)
    async def prepare(params: lsp.PrepareRenameParams) -> lsp.PrepareRenamePlaceholder | None:
        answer = await answer_prepare(params)
        if isinstance(answer, str):
            raise RenameRefused(answer)
        return answer

    @server.feature(lsp.TEXT_DOCUMENT_RENAME)
    async def rename_symbol(params: lsp.RenameParams) -> lsp.WorkspaceEdit | None:
        answer = await answer_rename(params)
        if isinstance(answer, str):
            raise RenameRefused(answer)
        return answer
