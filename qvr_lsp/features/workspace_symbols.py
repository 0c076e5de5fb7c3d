"""Workspace symbols: top-level declarations of the open documents and the workspace's `.qvr` files.

Files that are not open are found and parsed only when the client asks,
in a thread, and their symbols are cached by modification time and size; an
open document answers from its own analysis (its unsaved text).
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lsprotocol import types as lsp
from pygls.uris import from_fs_path, to_fs_path

from qvr_core import files
from qvr_core.ide.outline import DECL_KIND
from qvr_core.syntax import ast
from qvr_lsp.analysis import LARGE_DOCUMENT_CHARS
from qvr_lsp.convert import TextPositions
from qvr_lsp.features.symbols import SYMBOL_KIND
from qvr_lsp.guard import guarded

if TYPE_CHECKING:
    from lsprotocol.types import PositionEncodingKind

    from qvr_lsp.server import QvrLanguageServer

log = logging.getLogger(__name__)

MAX_FILES = 5000
MAX_RESULTS = 1000
#: A scan of the workspace answers with what it found by then.
SCAN_SECONDS = 5.0
SKIPPED_DIRS = frozenset({"node_modules", "__pycache__", "venv", "build", "dist", "site-packages"})


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


class FileIndex:
    """Declarations of `.qvr` files on disk, parsed on demand and cached by (mtime, size).

    Files are read with `qvr_core.files`: a FIFO, a device, a link out of the
    workspace or an oversized file is skipped (logged once), never read.
    """

    def __init__(self) -> None:
        self._cache: dict[str, tuple[tuple[int, int], list[Entry]]] = {}
        self._skipped: dict[str, str] = {}

    def files(self, roots: list[str], deadline: float = float("inf")) -> list[str]:
        found: list[str] = []
        for root in roots:
            for folder, dirs, names in os.walk(root):
                dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in SKIPPED_DIRS)
                found += [os.path.join(folder, n) for n in sorted(names) if n.endswith(".qvr")]
                if len(found) >= MAX_FILES or time.monotonic() > deadline:
                    return found[:MAX_FILES]
        return found

    def entries(self, path: str, roots: list[str], encoding: PositionEncodingKind) -> list[Entry]:
        try:
            _real, st = files.regular_file(path, roots)
            stamp = (st.st_mtime_ns, st.st_size)
            cached = self._cache.get(path)
            if cached is not None and cached[0] == stamp:
                return cached[1]
            if st.st_size > LARGE_DOCUMENT_CHARS:
                return []  # a large file is not parsed for its names (see analysis.py)
            text = files.read_text(path, roots)
        except files.UnreadableFile as exc:
            self._skip(path, exc.reason)
            return []
        self._skipped.pop(path, None)
        from qvr_core.syntax.parser import parse

        entries = declarations(parse(text).module, TextPositions(text, encoding))
        self._cache[path] = (stamp, entries)
        return entries

    def _skip(self, path: str, reason: str) -> None:
        self._cache.pop(path, None)
        if self._skipped.get(path) != reason:  # once per file and reason: Ctrl+T asks per key
            self._skipped[path] = reason
            log.warning("workspace symbols: skipped %s: %s", path, reason)


def _roots(server: QvrLanguageServer) -> list[str]:
    uris = [f.uri for f in server.workspace.folders.values()] or [server.workspace.root_uri]
    paths = [to_fs_path(u) for u in uris if u]
    return [p for p in dict.fromkeys(paths) if p and os.path.isdir(p)]


def register(server: QvrLanguageServer) -> None:
    index = FileIndex()

    def on_disk(roots: list[str], open_paths: set[str]) -> list[tuple[str, Entry]]:
        """The files' symbols; what is found within `SCAN_SECONDS` when the tree is huge."""
        deadline = time.monotonic() + SCAN_SECONDS
        out = []
        for path in index.files(roots, deadline):
            if time.monotonic() > deadline:
                log.warning(
                    "workspace symbols: stopped after %g s; results are partial", SCAN_SECONDS
                )
                break
            if os.path.realpath(path) in open_paths:
                continue
            uri = from_fs_path(path) or path
            out += [(uri, e) for e in index.entries(path, roots, server.encoding)]
        return out

    @server.feature(lsp.WORKSPACE_SYMBOL)
    @guarded(list)
    async def workspace_symbol(params: lsp.WorkspaceSymbolParams) -> list[lsp.SymbolInformation]:
        found: list[tuple[str, Entry]] = []
        open_paths: set[str] = set()
        for doc in server.documents:
            path = to_fs_path(doc.uri)
            if path:
                open_paths.add(os.path.realpath(path))
            snap = await server.available(doc.uri)
            analysis = snap.structural() if snap is not None else None
            if analysis is not None and analysis.module is not None:
                entries = declarations(analysis.module.ast, analysis.positions)
                found += [(doc.uri, e) for e in entries]
        found += await asyncio.to_thread(on_disk, _roots(server), open_paths)
        query = params.query or ""
        return [
            lsp.SymbolInformation(name=e.name, kind=e.kind, location=lsp.Location(uri, e.range))
            for uri, e in found
            if matches(query, e.name)
        ][:MAX_RESULTS]
