"""Workspace symbols: top-level declarations of the open documents and the workspace's `.qvr` files.

Files that are not open are found and parsed only when the client asks, in
the server's scan thread (`qvr_lsp.analysis.scans`), and their symbols are cached by
modification time and size; an open document answers from its own analysis
(its unsaved text). An editor sends a request per keystroke in Ctrl+T and
cancels the one before: the scan is shared by the requests that come while
it runs, stops between two files once none waits for it, and the next one
reads only what it had not. Matching the query against the symbols found
is done in that thread too.
"""

from __future__ import annotations

import logging
import os
import re
import time
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

from lsprotocol import types as lsp
from pygls.uris import from_fs_path, to_fs_path

from qvr_core.host import files
from qvr_core.ide.outline import DECL_KIND
from qvr_core.syntax import ast
from qvr_lsp.analysis.analyzer import LARGE_DOCUMENT_CHARS
from qvr_lsp.analysis.scans import MAX_FILES, SKIPPED_DIRS, Cancel, list_files
from qvr_lsp.features.symbols import SYMBOL_KIND
from qvr_lsp.protocol.convert import TextPositions

if TYPE_CHECKING:
    from lsprotocol.types import PositionEncodingKind

    from qvr_lsp.analysis.kinds import Open
    from qvr_lsp.analysis.session import Session
    from qvr_lsp.protocol.server import QvrLanguageServer

log = logging.getLogger(__name__)

__all__ = ["MAX_FILES", "SKIPPED_DIRS", "Entry", "FileIndex", "declarations", "matches"]

MAX_RESULTS = 1000
#: A scan of the workspace answers with what it found by then.
SCAN_SECONDS = 5.0


@dataclass(frozen=True)
class Entry:
    name: str
    kind: lsp.SymbolKind
    range: lsp.Range


def declarations(module: ast.Module, positions: TextPositions) -> list[Entry]:
    """The top-level names a syntax tree declares."""
    out = []
    for decl in module.decls:
        kind = DECL_KIND.get(type(decl))
        if kind is not None:
            name = decl.name
            out.append(Entry(name.text, SYMBOL_KIND[kind], positions.range(name.span)))
    return out


def matches(query: str, name: str) -> bool:
    """Case-insensitive subsequence match, the way editors filter symbol lists."""
    it = iter(name.lower())
    return all(ch in it for ch in query.lower())


def matcher(query: str) -> re.Pattern[str]:
    """`matches(query, name)` as a compiled search (ten thousand files have many names),
    linear in the name whatever the query (`completion.subsequence`)."""
    from qvr_core.ide.completion import subsequence  # completion loads after the start

    return subsequence(query)


class FileIndex:
    """Declarations of `.qvr` files on disk, parsed on demand and cached by (mtime, size).

    Files are read with `qvr_core.host.files`: a FIFO, a device, a link out of the
    workspace or an oversized file is skipped (logged once), never read.
    """

    def __init__(self) -> None:
        self._cache: dict[str, tuple[tuple[int, int], list[Entry]]] = {}
        self._skipped: dict[str, str] = {}
        self.parsed = 0  # files parsed so far (a cached file is not parsed again)

    def files(
        self, roots: list[str], deadline: float = float("inf"), cancel: Cancel | None = None
    ) -> list[str]:
        return list_files(roots, cancel or Cancel(), deadline)

    def entries(self, path: str, roots: list[str], encoding: PositionEncodingKind) -> list[Entry]:
        try:
            _real, st = files.regular_file(path, roots)
            stamp = (st.st_mtime_ns, st.st_size)
            cached = self._cache.get(path)
            if cached is not None and cached[0] == stamp:
                return cached[1]
            if st.st_size > LARGE_DOCUMENT_CHARS:
                return []  # a large file is not parsed for its names (see analysis/analyzer.py)
            text = files.read_text(path, roots)
        except files.UnreadableFile as exc:
            self._skip(path, exc.reason)
            return []
        self._skipped.pop(path, None)
        from qvr_core.syntax.parser import parse

        entries = declarations(parse(text).module, TextPositions(text, encoding))
        self._cache[path] = (stamp, entries)
        self.parsed += 1
        return entries

    def _skip(self, path: str, reason: str) -> None:
        self._cache.pop(path, None)
        if self._skipped.get(path) != reason:  # once per file and reason: Ctrl+T asks per key
            self._skipped[path] = reason
            log.warning("workspace symbols: skipped %s: %s", path, reason)


#: One file's symbols: its real path, its URI and its declarations.
Scanned = tuple[str, str, list[Entry]]


def scan(
    index: FileIndex, roots: list[str], encoding: PositionEncodingKind, cancel: Cancel
) -> list[Scanned]:
    """In the scan thread: every file's symbols; what is found within `SCAN_SECONDS` when
    the tree is huge. Stops between two files when `cancel` is set."""
    deadline = time.monotonic() + SCAN_SECONDS
    out: list[Scanned] = []
    for path in index.files(roots, deadline, cancel):
        cancel.check()
        if time.monotonic() > deadline:
            log.warning("workspace symbols: stopped after %g s; results are partial", SCAN_SECONDS)
            break
        uri = from_fs_path(path) or path
        out.append((path, uri, index.entries(path, roots, encoding)))
    return out


def select(
    scanned: list[Scanned], open_paths: set[str], query: str, most: int, cancel: Cancel
) -> list[lsp.SymbolInformation]:
    """In the scan thread: the symbols of the files that are not open matching `query`."""
    wanted = matcher(query)
    open_names = {os.path.basename(p) for p in open_paths}
    out: list[lsp.SymbolInformation] = []
    for path, uri, entries in scanned:
        cancel.check()
        if os.path.basename(path) in open_names and os.path.realpath(path) in open_paths:
            continue  # open: its own text answered
        for e in entries:
            if wanted.search(e.name):
                location = lsp.Location(uri, e.range)
                out.append(lsp.SymbolInformation(name=e.name, kind=e.kind, location=location))
                if len(out) >= most:
                    return out
    return out


def file_index(_: Session) -> FileIndex:
    """The session's index of the workspace's files (kept between requests)."""
    return FileIndex()


async def workspace_symbol(
    session: Session, params: lsp.WorkspaceSymbolParams, open_documents: Open
) -> list[lsp.SymbolInformation]:
    server = session.server
    index = session.own(file_index)
    query = params.query or ""
    answer: list[lsp.SymbolInformation] = []
    open_paths: set[str] = set()
    for doc in server.documents:
        path = to_fs_path(doc.uri)
        if path:
            open_paths.add(os.path.realpath(path))
    for doc, analysis in await open_documents.structures():
        for e in declarations(analysis.checked.ast, analysis.positions):
            if matches(query, e.name):
                location = lsp.Location(doc.uri, e.range)
                answer.append(lsp.SymbolInformation(name=e.name, kind=e.kind, location=location))
    roots = _roots(server)
    if not roots or len(answer) >= MAX_RESULTS:
        return answer[:MAX_RESULTS]
    encoding = server.encoding
    # one scan for every request that comes while it runs (each keystroke in Ctrl+T)
    scanned = await session.scans.run(
        ("workspace symbols", tuple(roots), encoding), partial(scan, index, roots, encoding)
    )
    most = MAX_RESULTS - len(answer)
    answer += await session.scans.run(None, partial(select, scanned, open_paths, query, most))
    return answer


def _roots(server: QvrLanguageServer) -> list[str]:
    uris = [f.uri for f in server.workspace.folders.values()] or [server.workspace.root_uri]
    paths = [to_fs_path(u) for u in uris if u]
    return [p for p in dict.fromkeys(paths) if p and os.path.isdir(p)]
