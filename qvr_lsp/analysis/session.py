"""One connection: the server, the analyses of its documents, and the state its handlers keep.

The protocol's server (`qvr_lsp.protocol.server`) knows documents and settings but no
analysis; the composition root (`qvr_lsp.app`) makes a `Session` over it, hands its
document events to the analyzer, and gives the session to every handler of the table.
Handlers keep no module-level state: what must outlive one request (a formatter's
thread, the workspace's file index, the answered pulls, the inference runs) is owned by
the session (`own`), made on first use and gone with the server.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar, cast

from qvr_lsp.analysis.analyzer import Analyzer
from qvr_lsp.analysis.scans import Scans
from qvr_lsp.analysis.warmup import Warmup
from qvr_lsp.protocol.server import QvrLanguageServer, loop_running
from qvr_lsp.protocol.settings import Settings

T = TypeVar("T")


def _no_run(_: Session) -> None:
    """Nothing prepares a run until the composition root plugs the runs in."""


class Session:
    """What every handler is given: the server, its analyzer and scans, and owned state."""

    def __init__(self, server: QvrLanguageServer, analyzer: Analyzer, scans: Scans) -> None:
        self.server = server
        self.analyzer = analyzer
        #: workspace scans (workspace symbols and diagnostics): one thread, shared, cancellable
        self.scans = scans
        #: imports what the handlers left for later, once the first diagnostics are out
        self.warmup = Warmup(())
        #: the modules whose handlers the table registered (`qvr/serverStatus` lists them)
        self.feature_modules: tuple[str, ...] = ()
        #: what `prepare_run` calls: the runs sit beside the features, not below them, so
        #: the composition root connects the two
        self.preparer: Callable[[Session], None] = _no_run
        self._owned: dict[Callable[[Session], object], object] = {}

    def prepare_run(self) -> None:
        """A Run lens is shown: have an inference worker loaded before it is clicked."""
        self.preparer(self)

    def own(self, make: Callable[[Session], T]) -> T:
        """This session's one `make(session)`, made on first use (a handler's lasting state)."""
        found = self._owned.get(make)
        if found is None:
            found = self._owned[make] = make(self)
        return cast(T, found)

    def owned(self, make: Callable[[Session], T]) -> T | None:
        """This session's `make(session)` if one was made, else None (never making one)."""
        return cast("T | None", self._owned.get(make))

    def configure(self, settings: Settings) -> None:
        """New settings for the analyses: every open document is analysed again at once when
        they change what a check says (strictness, the memory budget, the export target)."""
        analyzer = self.analyzer
        if loop_running():
            analyzer.configure(
                strict=settings.strict,
                memory_budget=settings.memory_budget,
                export_target=settings.export_target,
            )
        else:  # before the loop (a test): nothing is open to analyse again
            analyzer.strict = settings.strict
            analyzer.memory_budget = settings.memory_budget
            analyzer.export_target = settings.export_target
