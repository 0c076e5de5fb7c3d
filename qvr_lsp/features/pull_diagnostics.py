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
made by `analysis.analyzer.analyze`, so with `qvr.export.target` set a file on disk
gets that target's QVR701 warnings too). When an
open document's diagnostics change after the client pulled them (new
settings, a first check that outlasted the pull's wait), the server sends
`workspace/diagnostic/refresh`, and the client asks again. The scan
is bounded (`scans.MAX_FILES`, `SCAN_SECONDS`). When nothing
changed since the client's last pull, the answer is held (the protocol's
long poll) until a file changes, or `HOLD_SECONDS` pass.

Listing and checking the files on disk runs in the server's scan thread
(`qvr_lsp.analysis.scans`), never in the default thread pool: a listing is shared by
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
from qvr_lsp.analysis.analyzer import LARGE_DOCUMENT_CHARS, analyze
from qvr_lsp.analysis.kinds import newest_now
from qvr_lsp.analysis.scans import Cancel, list_files
from qvr_lsp.features.diagnostics import client_pulls, lsp_diagnostics
from qvr_lsp.features.workspace_symbols import _roots
from qvr_lsp.protocol.documents import Document

if TYPE_CHECKING:
    from qvr_lsp.analysis.kinds import Diagnosed, Open
    from qvr_lsp.analysis.session import Session
    from qvr_lsp.analysis.snapshots import Analysis

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

    def __init__(self, session: Session) -> None:
        self.session = session
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
            generation = self.session.analyzer.generation
        return f"{st.st_mtime_ns}:{st.st_size}:{generation}"

    def report(
        self, uri: str, path: str, result_id: str, roots: list[str] | None = None
    ) -> FileReport | None:
        """The file's diagnostics (checked now unless cached); None when it is skipped."""
        cached = self._cache.get(uri)
        if cached is not None and cached.result_id == result_id:
            return cached
        if roots is None:
            roots = _roots(self.session.server)
        try:
            _real, st = files.regular_file(path, roots)
            if st.st_size > LARGE_DOCUMENT_CHARS:
                raise files.UnreadableFile(path, "too large to check unopened")
            text = files.read_text(path, roots)
        except files.UnreadableFile as exc:
            self._skip(path, exc.reason)
            return None
        analyzer, server = self.session.analyzer, self.session.server
        doc = Document(uri, 0, text, 0, encoding=server.encoding)
        analysis = analyze(
            doc,
            analyzer.strict,
            analyzer.generation,
            None,
            analyzer.memory_budget,
            analyzer.export_target,
        )
        report = FileReport(result_id, lsp_diagnostics(server.caps, analysis))
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


def _open_paths(session: Session) -> set[str]:
    paths = (to_fs_path(doc.uri) for doc in session.server.documents)
    return {os.path.realpath(p) for p in paths if p}


def refresh_support(caps: lsp.ClientCapabilities | None) -> bool:
    path = "workspace.diagnostics.refresh_support"
    return caps is not None and bool(get_capability(caps, path, False))


def result_id(analysis: Analysis) -> str:
    """Names one analysis: the document's version and edit sequence, the settings generation
    (and `~` while the export target's warnings are still to come: `Analysis.export_pending`)."""
    pending = "~" if analysis.export_pending else ""
    return f"{analysis.version}:{analysis.seq}:{analysis.generation}{pending}"


class Pulls:
    """What the session's pulls answered, and the files on disk they checked.

    `answered` maps a document to the result id last answered for it: an analysis that
    lands later (new settings, a first check slower than a pull waits) makes the client
    ask again (`workspace/diagnostic/refresh`)."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.disk = DiskDiagnostics(session)
        self.answered: dict[str, str] = {}
        self.refresh_pending = False

    def stale(self) -> bool:
        for uri, given in self.answered.items():
            newest = newest_now(self.session.analyzer, uri)
            if newest is not None and result_id(newest) != given:
                return True
        return False

    def refresh(self) -> None:
        self.refresh_pending = False
        if self.stale():
            self.session.server.workspace_diagnostic_refresh(None)


def refresh_later(session: Session, analysis: Analysis) -> None:
    """An analysis was announced: a client that pulled another of its document is asked
    to pull again."""
    pulls = session.own(Pulls)
    caps = session.server.caps
    if not (client_pulls(caps) and refresh_support(caps)) or pulls.refresh_pending:
        return
    given = pulls.answered.get(analysis.uri)
    if given is not None and given != result_id(analysis):
        # Soon, not at once: the pull that is waiting for this analysis may answer it.
        pulls.refresh_pending = True
        asyncio.get_running_loop().call_later(REFRESH_DELAY_SECONDS, pulls.refresh)


def forget(session: Session, uri: str) -> None:
    """A document closed: nothing more to refresh for it."""
    session.own(Pulls).answered.pop(uri, None)


OPTIONS = lsp.DiagnosticOptions(
    identifier=IDENTIFIER, inter_file_dependencies=False, workspace_diagnostics=True
)


async def document_diagnostic(
    session: Session, params: lsp.DocumentDiagnosticParams, diagnosed: Diagnosed
) -> lsp.DocumentDiagnosticReport:
    pulls = session.own(Pulls)
    uri = params.text_document.uri
    if not diagnosed.opened:
        previous = params.previous_result_id
        roots = _roots(session.server)
        return await session.scans.run(
            ("unopened", uri, previous, session.analyzer.generation),
            partial(_unopened, pulls.disk, uri, previous, roots),
        )
    analysis = diagnosed.newest
    if analysis is None:
        # Open but not checked yet: nothing to say now; its check will refresh.
        pulls.answered[uri] = PENDING
        return lsp.RelatedFullDocumentDiagnosticReport(items=[], result_id=PENDING)
    given = pulls.answered[uri] = result_id(analysis)
    if params.previous_result_id == given:
        return lsp.RelatedUnchangedDocumentDiagnosticReport(result_id=given)
    return lsp.RelatedFullDocumentDiagnosticReport(
        items=lsp_diagnostics(session.server.caps, analysis), result_id=given
    )


async def workspace_diagnostic(
    session: Session, params: lsp.WorkspaceDiagnosticParams, _: Open
) -> lsp.WorkspaceDiagnosticReport:
    disk = session.own(Pulls).disk
    previous = {p.uri: p.value for p in params.previous_result_ids}
    held_until = time.monotonic() + HOLD_SECONDS
    while True:
        roots = _roots(session.server)
        open_paths = _open_paths(session)
        generation = session.analyzer.generation
        # shared with any other pull that wants the same listing now
        key = ("workspace stamps", tuple(roots), frozenset(open_paths), generation)
        work = partial(disk.stamps, roots, open_paths, generation)
        stamps = await session.scans.run(key, work)
        changed = {u: s for u, s in stamps.items() if previous.get(u) != s[1]}
        if changed or time.monotonic() >= held_until:
            break
        await asyncio.sleep(POLL_SECONDS)
    disk.forget_missing(set(stamps))
    items = await session.scans.run(None, partial(_reports, disk, roots, stamps, previous))
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
