"""Pull diagnostics (LSP 3.17): `textDocument/diagnostic` for a document, and
`workspace/diagnostic` for the workspace's `.qvr` files that are not open.

They complement the pushed diagnostics (features/diagnostics.py): a client that
pulls (it says so in `textDocument.diagnostic`) is not also pushed to, since
VS Code keeps pulled and pushed diagnostics apart and would list each twice.

A document's report is the diagnostics of the analysis of its current text;
its result id names that analysis (version, edit sequence, settings
generation), so a client asking again about an unchanged text is told
"unchanged". A file on disk is read through `qvr_core.host.files` (regular files
only, no link out of the workspace, at most `LARGE_DOCUMENT_CHARS`) and
checked in a thread; its result id is its modification time and size with
the settings generation, and its diagnostics are cached under it (both are
made by `analysis.analyze`, so with `qvr.export.target` set a file on disk
gets that target's QVR701 warnings too). When an
open document's diagnostics change after the client pulled them (new
settings, a first check that outlasted the pull's wait), the server sends
`workspace/diagnostic/refresh`, and the client asks again. The scan
is bounded (`scans.MAX_FILES`, `SCAN_SECONDS`). When nothing
changed since the client's last pull, the answer is held (the protocol's
long poll) until a file changes, or `HOLD_SECONDS` pass.

Listing and checking the files on disk runs in the server's scan thread
(`qvr_lsp.scans`), never in the default thread pool: a listing is shared by
the requests that want it while it runs, and a scan stops between two files
once its request is cancelled (a client that pulls again cancels the held
pull); the files it checked stay cached for the next one.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

from lsprotocol import types as lsp
from pygls.capabilities import get_capability
from pygls.uris import from_fs_path, to_fs_path

from qvr_core.host import files
from qvr_lsp.analysis import LARGE_DOCUMENT_CHARS, Analysis, analyze
from qvr_lsp.documents import Document
from qvr_lsp.features.diagnostics import client_pulls, lsp_diagnostics
from qvr_lsp.features.workspace_symbols import _roots
from qvr_lsp.guard import guarded
from qvr_lsp.scans import Cancel, list_files

if TYPE_CHECKING:
    from qvr_lsp.server import QvrLanguageServer

log = logging.getLogger(__name__)

IDENTIFIER = "qvr"
#: The result id of an open document whose first check has not finished.
PENDING = "pending"
#: One scan of the workspace checks files for at most this long, and reports what it has.
SCAN_SECONDS = 10.0
#: An unchanged workspace is looked at again this often while its answer is held ...
POLL_SECONDS = 2.0
#: ... for at most this long.
HOLD_SECONDS = 30.0
#: A document whose diagnostics changed after they were pulled is refreshed this much later.
REFRESH_DELAY_SECONDS = 0.25


@dataclass(frozen=True)
class FileReport:
    result_id: str
    items: list[lsp.Diagnostic]


class DiskDiagnostics:
    """Diagnostics of `.qvr` files on disk, cached by (mtime, size, settings generation)."""

    def __init__(self, server: QvrLanguageServer) -> None:
        self.server = server
        self._cache: dict[str, FileReport] = {}
        self._skipped: dict[str, str] = {}
        self.checked = 0  # files checked so far (a cached report is not checked again)

    def stamps(
        self, roots: list[str], open_paths: set[str], generation: int, cancel: Cancel
    ) -> dict[str, tuple[str, str]]:
        """{uri: (path, result id)} of the workspace's closed `.qvr` files (stat only).

        In the scan thread; stops between two files when `cancel` is set.
        """
        out: dict[str, tuple[str, str]] = {}
        open_names = {os.path.basename(p) for p in open_paths}
        for path in list_files(roots, cancel, time.monotonic() + SCAN_SECONDS):
            cancel.check()
            if os.path.basename(path) in open_names and os.path.realpath(path) in open_paths:
                continue
            result_id = self.stamp(path, roots, generation)
            if result_id is not None:
                out[from_fs_path(path) or path] = (path, result_id)
        return out

    def stamp(self, path: str, roots: list[str], generation: int | None = None) -> str | None:
        """The file's result id, or None when it may not be read (logged once)."""
        try:
            _real, st = files.regular_file(path, roots)
        except files.UnreadableFile as exc:
            self._skip(path, exc.reason)
            return None
        if generation is None:
            generation = self.server.analyzer.generation
        return f"{st.st_mtime_ns}:{st.st_size}:{generation}"

    def report(
        self, uri: str, path: str, result_id: str, roots: list[str] | None = None
    ) -> FileReport | None:
        """The file's diagnostics (checked now unless cached); None when it is skipped."""
        cached = self._cache.get(uri)
        if cached is not None and cached.result_id == result_id:
            return cached
        if roots is None:
            roots = _roots(self.server)
        try:
            _real, st = files.regular_file(path, roots)
            if st.st_size > LARGE_DOCUMENT_CHARS:
                raise files.UnreadableFile(path, "too large to check unopened")
            text = files.read_text(path, roots)
        except files.UnreadableFile as exc:
            self._skip(path, exc.reason)
            return None
        analyzer = self.server.analyzer
        doc = Document(uri, 0, text, 0, encoding=self.server.encoding)
        analysis = analyze(
            doc,
            analyzer.strict,
            analyzer.generation,
            None,
            analyzer.memory_budget,
            analyzer.export_target,
        )
        report = FileReport(result_id, lsp_diagnostics(self.server, analysis))
        self._cache[uri] = report
        self.checked += 1
        return report

    def forget_missing(self, present: set[str]) -> None:
        for uri in list(self._cache):  # a copy: the scan thread may be adding to it
            if uri not in present:
                self._cache.pop(uri, None)

    def _skip(self, path: str, reason: str) -> None:
        if self._skipped.get(path) != reason:
            self._skipped[path] = reason
            log.warning("workspace diagnostics: skipped %s: %s", path, reason)


def _open_paths(server: QvrLanguageServer) -> set[str]:
    paths = (to_fs_path(doc.uri) for doc in server.documents)
    return {os.path.realpath(p) for p in paths if p}


def refresh_support(caps: lsp.ClientCapabilities | None) -> bool:
    path = "workspace.diagnostics.refresh_support"
    return caps is not None and bool(get_capability(caps, path, False))


def result_id(analysis: Analysis) -> str:
    """Names one analysis: the document's version and edit sequence, the settings generation
    (and `~` while the export target's warnings are still to come: `Analysis.export_pending`)."""
    pending = "~" if analysis.export_pending else ""
    return f"{analysis.version}:{analysis.seq}:{analysis.generation}{pending}"


def register(server: QvrLanguageServer) -> None:
    disk = DiskDiagnostics(server)
    #: uri -> the result id last answered for it: an analysis that lands later (new
    #: settings, a first check slower than a pull waits) makes the client ask again.
    answered: dict[str, str] = {}
    refresh_pending = False

    def stale() -> bool:
        for uri, given in answered.items():
            snap = server.snapshot(uri)
            if snap is not None and snap.newest is not None and result_id(snap.newest) != given:
                return True
        return False

    def refresh() -> None:
        nonlocal refresh_pending
        refresh_pending = False
        if stale():
            server.workspace_diagnostic_refresh(None)

    def on_analysis(analysis: Analysis) -> None:
        nonlocal refresh_pending
        caps = server.caps
        if not (client_pulls(caps) and refresh_support(caps)) or refresh_pending:
            return
        given = answered.get(analysis.uri)
        if given is not None and given != result_id(analysis):
            # Soon, not at once: the pull that is waiting for this analysis may answer it.
            refresh_pending = True
            asyncio.get_running_loop().call_later(REFRESH_DELAY_SECONDS, refresh)

    server.analyzer.on_analysis(on_analysis)

    def forget(uri: str) -> None:
        answered.pop(uri, None)

    server.analyzer.on_close(forget)
    options = lsp.DiagnosticOptions(
        identifier=IDENTIFIER, inter_file_dependencies=False, workspace_diagnostics=True
    )

    @server.feature(lsp.TEXT_DOCUMENT_DIAGNOSTIC, options)
    @guarded()
    async def document_diagnostic(
        params: lsp.DocumentDiagnosticParams,
    ) -> lsp.DocumentDiagnosticReport:
        uri = params.text_document.uri
        snap = await server.settled(uri)
        if snap is None and server.documents.get(uri) is None:
            previous = params.previous_result_id
            roots = _roots(server)
            return await server.scans.run(
                ("unopened", uri, previous, server.analyzer.generation),
                partial(_unopened, disk, uri, previous, roots),
            )
        if snap is None or snap.newest is None:
            # Open but not checked yet: nothing to say now; its check will refresh.
            answered[uri] = PENDING
            return lsp.RelatedFullDocumentDiagnosticReport(items=[], result_id=PENDING)
        analysis = snap.newest
        given = answered[uri] = result_id(analysis)
        if params.previous_result_id == given:
            return lsp.RelatedUnchangedDocumentDiagnosticReport(result_id=given)
        return lsp.RelatedFullDocumentDiagnosticReport(
            items=lsp_diagnostics(server, analysis), result_id=given
        )

    @server.feature(lsp.WORKSPACE_DIAGNOSTIC)
    @guarded()
    async def workspace_diagnostic(
        params: lsp.WorkspaceDiagnosticParams,
    ) -> lsp.WorkspaceDiagnosticReport:
        previous = {p.uri: p.value for p in params.previous_result_ids}
        held_until = time.monotonic() + HOLD_SECONDS
        while True:
            roots = _roots(server)
            open_paths = _open_paths(server)
            generation = server.analyzer.generation
            # shared with any other pull that wants the same listing now
            key = ("workspace stamps", tuple(roots), frozenset(open_paths), generation)
            work = partial(disk.stamps, roots, open_paths, generation)
            stamps = await server.scans.run(key, work)
            changed = {u: s for u, s in stamps.items() if previous.get(u) != s[1]}
            if changed or time.monotonic() >= held_until:
                break
            await asyncio.sleep(POLL_SECONDS)
        disk.forget_missing(set(stamps))
        items = await server.scans.run(None, partial(_reports, disk, roots, stamps, previous))
        return lsp.WorkspaceDiagnosticReport(items=items)


def _unopened(
    disk: DiskDiagnostics, uri: str, previous: str | None, roots: list[str], cancel: Cancel
) -> lsp.DocumentDiagnosticReport:
    """A document the client asks about without opening it: read from disk if it may be."""
    path = to_fs_path(uri)
    report = None
    result_id = disk.stamp(path, roots) if path and path.endswith(".qvr") and roots else None
    if path and result_id is not None:
        if previous == result_id:
            return lsp.RelatedUnchangedDocumentDiagnosticReport(result_id=result_id)
        cancel.check()
        report = disk.report(uri, path, result_id, roots)
    if report is None:
        return lsp.RelatedFullDocumentDiagnosticReport(items=[])
    return lsp.RelatedFullDocumentDiagnosticReport(items=report.items, result_id=report.result_id)


def _reports(
    disk: DiskDiagnostics,
    roots: list[str],
    stamps: dict[str, tuple[str, str]],
    previous: dict[str, str],
    cancel: Cancel,
) -> list[lsp.WorkspaceDocumentDiagnosticReport]:
    """In the scan thread: a report per file, checking those not cached; stops between two
    files when `cancel` is set (what it checked stays cached)."""
    deadline = time.monotonic() + SCAN_SECONDS
    items: list[lsp.WorkspaceDocumentDiagnosticReport] = []
    for uri, (path, result_id) in stamps.items():
        if previous.get(uri) == result_id:
            items.append(
                lsp.WorkspaceUnchangedDocumentDiagnosticReport(
                    uri=uri, result_id=result_id, version=None
                )
            )
            continue
        cancel.check()
        if time.monotonic() > deadline:
            log.warning(
                "workspace diagnostics: stopped after %g s; the rest next time", SCAN_SECONDS
            )
            break
        report = disk.report(uri, path, result_id, roots)
        if report is not None:
            items.append(
                lsp.WorkspaceFullDocumentDiagnosticReport(
                    uri=uri, items=report.items, result_id=report.result_id, version=None
                )
            )
    return items
