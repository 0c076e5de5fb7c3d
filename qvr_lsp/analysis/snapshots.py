"""What is known about an open document: its analyses, and a snapshot of them for a request.

An `Analysis` is what the core said about one text; a `Snapshot` is the document
with the analyses kept for it when a request looks (the newest, the last whose text
parsed, the last whose tables were built). Both are immutable, so a handler that
awaits holds a consistent picture however many edits arrive meanwhile. Which of them
a request may answer from is not decided here but by the snapshot kind its entry in
the handler table names (`analysis/kinds.py`).
"""

from __future__ import annotations

from dataclasses import dataclass

from qvr_core.check import CheckedModule
from qvr_core.text import rules
from qvr_core.text.diagnostics import Diagnostic
from qvr_lsp.protocol.convert import TextPositions
from qvr_lsp.protocol.documents import Document


@dataclass(frozen=True)
class Analysis:
    """What the core said about one text of one document."""

    uri: str
    version: int
    seq: int
    text: str
    module: CheckedModule | None  # None when the core itself failed
    diagnostics: tuple[Diagnostic, ...]
    positions: TextPositions
    generation: int  # settings generation it was made under
    seconds: float = 0.0
    large: bool = False  # diagnostics only (see LARGE_DOCUMENT_CHARS); module is None
    # the `qvr.export.target` warnings are still to come: they need the module's tables,
    # so they are added (and the analysis announced again) once those are built
    export_pending: bool = False

    @property
    def checked(self) -> CheckedModule:
        """The module, for the analyses queries are given (`ready` or current ones have one)."""
        assert self.module is not None, "a query was given an analysis the core failed on"
        return self.module

    @property
    def ready(self) -> bool:
        """True when the module's tables are built, so that queries do not wait."""
        return self.module is not None and self.module.ready

    @property
    def parsed(self) -> bool:
        """True when the whole text parsed: its symbols describe the file."""
        return self.module is not None and not any(
            d.code in rules.UNPARSED_CODES for d in self.diagnostics
        )


@dataclass(frozen=True)
class Snapshot:
    """A document and the analyses available for it when a request is answered.

    Queries read only analyses whose tables are built (`Analysis.ready`): one
    whose tables are still pending is skipped for the last that was ready.
    """

    document: Document
    newest: Analysis | None
    good: Analysis | None  # the last analysis whose text parsed
    ready: Analysis | None = None  # the last analysis whose tables were built

    @property
    def current(self) -> bool:
        """True when the newest analysis is of the document's current text."""
        return self.newest is not None and self.newest.seq == self.document.seq

    def for_queries(self) -> list[Analysis]:
        """Analyses to ask in order: the newest, then the last good one if different."""
        found = [a for a in (self.newest, self.good) if a is not None and a.ready]
        if not found and self.ready is not None:
            found = [self.ready]
        return found[:1] if len(found) == 2 and found[0] is found[1] else found

    def structural(self) -> Analysis | None:
        """The analysis to list symbols and candidates from: the newest if it parsed."""
        if self.newest is not None and self.newest.parsed and self.newest.ready:
            return self.newest
        if self.good is not None and self.good.ready:
            return self.good
        if self.newest is not None and self.newest.ready:
            return self.newest
        return self.ready
