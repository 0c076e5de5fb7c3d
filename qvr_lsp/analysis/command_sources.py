"""The checked text a command works on: the open document, or the file on disk.

These are the snapshot kinds of the commands, which name their document in their
arguments rather than in `textDocument` (they reach them through the `WORKSPACE`
kind's view, `kinds.Open`). A diagram may come from the last text that parsed (a
live diagram should not go blank while the user types a half-finished line); an
inference run or an export needs the current text exactly.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pygls.uris import to_fs_path

from qvr_core.check.module import CheckedModule
from qvr_core.host import files
from qvr_lsp.analysis.analyzer import LARGE_DOCUMENT_CHARS, is_large
from qvr_lsp.protocol.command_errors import CommandError, invalid
from qvr_lsp.protocol.convert import TextPositions

if TYPE_CHECKING:
    from qvr_lsp.analysis.session import Session
    from qvr_lsp.protocol.server import QvrLanguageServer


@dataclass(frozen=True)
class Source:
    uri: str
    text: str
    module: CheckedModule
    positions: TextPositions


async def drawable_source(session: Session, uri: str) -> Source:
    """The newest analysis whose text parsed (or the newest at all), as `kinds.STRUCTURE`."""
    snap = await session.analyzer.settled(uri)
    analysis = snap.structural() if snap is not None else None
    if analysis is not None and analysis.module is not None:
        return Source(uri, analysis.text, analysis.module, analysis.positions)
    return await current_source(session, uri)


async def current_source(session: Session, uri: str) -> Source:
    """The current text of the document, checked: the analysis of the text the client has
    now when it is there in time, else that text (or the file's) checked here."""
    server = session.server
    snap = await session.analyzer.settled(uri)
    if snap is not None:
        newest = snap.newest
        if snap.current and newest is not None and newest.module is not None:
            return Source(uri, newest.text, newest.module, newest.positions)
        text = snap.document.text
    else:
        text = await _read_file(uri, _workspace_roots(server))
    if is_large(text):
        raise invalid(
            f"{uri} is too large for the editor's diagrams and runs ({len(text):,} characters,"
            f" over {LARGE_DOCUMENT_CHARS:,}); use `qvr diagram` or `qvr run` in a terminal"
        )
    module = await asyncio.to_thread(_check, text, server.settings.strict)
    return Source(uri, text, module, TextPositions(text, server.encoding))


def _check(text: str, strict: bool) -> CheckedModule:
    from qvr_core.check import check

    return check(text, strict=strict)


def _workspace_roots(server: QvrLanguageServer) -> list[str]:
    uris = [f.uri for f in server.workspace.folders.values()]
    if server.workspace.root_uri:
        uris.append(server.workspace.root_uri)
    return [p for p in dict.fromkeys(to_fs_path(u) for u in uris) if p]


async def _read_file(uri: str, roots: list[str]) -> str:
    """A file that is not open: a regular `.qvr` file inside the workspace, read off the loop."""
    path = to_fs_path(uri) if uri.startswith("file:") else None
    if path is None:
        raise invalid(f"{uri} is neither open in the editor nor a file on disk")
    if Path(path).suffix != ".qvr":
        raise invalid(f"{uri} is not a .qvr file")
    if not roots:
        raise invalid(
            f"{path} is not open, and without a workspace folder only open files are read"
        )
    try:
        return await asyncio.wait_for(
            asyncio.to_thread(files.read_text, path, roots), files.READ_TIMEOUT_SECONDS + 1
        )
    except files.UnreadableFile as exc:
        raise CommandError(f"cannot read {path}: {exc.reason}", "source") from None
    except TimeoutError:
        raise CommandError(f"cannot read {path}: reading it did not finish", "source") from None
