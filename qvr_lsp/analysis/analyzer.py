"""Analysis of open documents off the event loop: debounced, superseded, never stale.

Each open document has at most one worker task. Edits in quick succession
are coalesced (each restarts the debounce; a lone edit does not wait); the
worker then re-checks the newest text in a thread with the document's
`IncrementalChecker` (which reuses the last check) and keeps the result.
Listeners (the diagnostics publisher, later anything that refreshes on
change) hear only about an analysis of the text that is current when it
finishes, so an older version is never announced after a newer one.

An analysis is announced as soon as its diagnostics are known; the rest of
its module (types at positions, symbols) is built once typing pauses or a
request needs it, and dropped if a newer text comes first. With the
`qvr.export.target` setting, whose warnings need those tables, the analysis
is announced again once they are built, with the warnings (`_add_exports`). A request that
needs positions to agree with the text calls `settled()`, which skips the
debounce and waits (bounded) for the analysis of the text the document had
when the request came (or a newer one) and its tables; `available()` builds
the tables of what is known without waiting.

Under a flood of edits (a paste replayed, a macro, a formatter on save in
another tool) the goal of a request never moves: edits that arrive while it
waits do not make it wait for their analyses too, so it waits for at most one
check (besides one already running) and one build of the tables. Checks of a
flooded document are coalesced: only the newest text is checked, when the
edits pause or a request asks, and the texts in between never are (a check
made while edits keep coming would be superseded before it could be
announced; the CPU goes to the requests instead).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from functools import partial

from qvr_core.check import CheckedModule
from qvr_core.check.incremental import IncrementalChecker
from qvr_core.text import rules
from qvr_core.text.diagnostics import Diagnostic, make
from qvr_core.text.span import Span
from qvr_lsp.analysis.memory import Collector
from qvr_lsp.analysis.snapshots import Analysis, Snapshot
from qvr_lsp.protocol.documents import Document, DocumentStore

log = logging.getLogger(__name__)

DEBOUNCE_SECONDS = 0.05
#: Typing pause after which the tables of the newest analysis are built unasked.
BUILD_DELAY_SECONDS = 0.3
#: A request that waits for a pause in typing (`Analyzer.quiet`) waits at most this long:
#: under edits that never pause, the outline of a 5,000-line file then still answers
#: within a second (one check and one build of the tables follow the wait;
#: `bench/server_flood.py flood`), and a request an editor cancels at its next keystroke
#: has usually not started any work.
QUIET_MOST_SECONDS = 0.1
SETTLE_TIMEOUT_SECONDS = 2.0
#: While a request waits for a check or a build, a check nobody asked for (edits paused
#: for the debounce) waits for it to end, at most this long (see `Analyzer._after_requests`).
YIELD_MOST_SECONDS = 1.0
ANALYSIS_TIMEOUT_SECONDS = 20.0
#: Above this many characters a document is large: its diagnostics come from a check in a
#: child process (`large_check`), and the features that need the checked module decline it
#: (hover, tokens, inlay hints, folding, outline, formatting...). A 10 MB file would
#: otherwise take some 1 GB and many seconds of the server. Documented in docs/lsp.md.
LARGE_DOCUMENT_CHARS = 1_000_000
_YIELD_POLL_SECONDS = 0.01


def analyze(
    doc: Document,
    strict: bool,
    generation: int,
    checker: IncrementalChecker | None = None,
    memory_budget: int | None = None,
    export_target: str = "",
    export_now: bool = True,
) -> Analysis:
    """Check one text, reusing `checker`'s last check of the document; never raises
    (a core failure becomes a QVR000 diagnostic).

    The module's diagnostics are final; its other tables may still be
    pending (`CheckedModule.materialize`), which the analyzer does next.
    With an `export_target` (the `qvr.export.target` setting) the diagnostics
    of a module without errors also carry that target's QVR701 warnings
    (`export_diagnostics`). They read the module's tables: `export_now` builds
    them here; otherwise, unless they are built already, the analysis says the
    warnings are pending and the analyzer adds them once it has built the
    tables (an editor's diagnostics come first, as without the setting).
    """
    started = time.perf_counter()
    module: CheckedModule | None
    pending = False
    try:
        module = (checker or IncrementalChecker()).check(
            doc.text, strict=strict, memory_budget=memory_budget
        )
        diagnostics = module.diagnostics
        if export_target and module.ok:
            if export_now or module.ready:
                diagnostics += export_diagnostics(module, export_target)
            else:
                pending = True
    except Exception as exc:  # a bug in the core must not cost the user their diagnostics
        log.exception("qvr_core.check failed on %s version %s", doc.uri, doc.version)
        module = None
        diagnostics = (_internal_error(f"the checker failed ({type(exc).__name__}: {exc})"),)
    return Analysis(
        uri=doc.uri,
        version=doc.version,
        seq=doc.seq,
        text=doc.text,
        module=module,
        diagnostics=diagnostics,
        positions=doc.positions,
        generation=generation,
        seconds=time.perf_counter() - started,
        export_pending=pending,
    )


#: (target, what failed) already logged by `export_diagnostics`: once each, not per edit
_export_failures: set[tuple[str, str]] = set()


def export_diagnostics(module: CheckedModule, target: str) -> tuple[Diagnostic, ...]:
    """What the export target named `target` cannot express of `module`'s exportable
    programs (QVR701 warnings), for a module without errors; () otherwise.

    Text generation only (no torch, no target library). Never raises: a failing
    emitter (or one that is not there) costs these warnings, logged once.
    """
    if not module.ok:
        return ()  # an export needs a checked module; the errors come first
    try:
        from qvr_core.export import TARGETS, target_diagnostics

        return target_diagnostics(module, TARGETS[target])
    except Exception as exc:
        what = (target, f"{type(exc).__name__}: {exc}")
        if what not in _export_failures:
            _export_failures.add(what)
            log.exception("the %s export's diagnostics failed; shown without them", target)
        return ()


def is_large(text: str) -> bool:
    """Whether a document gets diagnostics only (see LARGE_DOCUMENT_CHARS)."""
    return len(text) > LARGE_DOCUMENT_CHARS


def _internal_error(what: str) -> Diagnostic:
    message = f"internal error: {what}; please report it with this file"
    return make(rules.INTERNAL_ERROR, message, Span(0, 0, 0, 0, 0, 0))


def _abandoned(doc: Document, generation: int, why: str, large: bool = False) -> Analysis:
    note = _internal_error(why)
    return Analysis(
        doc.uri,
        doc.version,
        doc.seq,
        doc.text,
        None,
        (note,),
        doc.positions,
        generation,
        large=large,
    )


@dataclass
class _Entry:
    """Per-document scheduling state (event-loop side only)."""

    newest: Analysis | None = None
    good: Analysis | None = None
    ready: Analysis | None = None  # the newest analysis whose tables are built
    task: asyncio.Task[None] | None = None
    builder: asyncio.Task[None] | None = None  # builds the tables once typing pauses
    last_edit: float = float("-inf")
    burst: bool = False  # the last edit came within the debounce of the one before
    kick: asyncio.Event = field(default_factory=asyncio.Event)  # skip the debounce
    stored: asyncio.Event = field(default_factory=asyncio.Event)  # replaced per result
    announced_seq: int = -1
    checker: IncrementalChecker = field(default_factory=IncrementalChecker)

    def store(self, analysis: Analysis) -> None:
        if self.newest is None or analysis.seq >= self.newest.seq:
            self.newest = analysis
        if analysis.parsed and (self.good is None or analysis.seq >= self.good.seq):
            self.good = analysis
        self.built(analysis)
        done, self.stored = self.stored, asyncio.Event()
        done.set()

    def built(self, analysis: Analysis) -> None:
        if analysis.ready and (self.ready is None or analysis.seq >= self.ready.seq):
            self.ready = analysis

    def release(self) -> None:
        """The document closed: stop its tasks and let go of everything it holds.

        A task cancelled mid-analysis keeps its CancelledError, whose traceback
        holds the task's frames, which hold this entry, which held the task: a
        cycle only the cycle collector frees (which the server runs rarely), and
        with it the analyses, some 28 MB for a 5,000-line file. Dropping the
        references here lets reference counting free them at once.
        """
        for task in (self.task, self.builder):
            if task is not None:
                task.cancel()
        self.task = self.builder = None
        self.newest = self.good = self.ready = None
        self.checker = IncrementalChecker()


@dataclass
class _Build:
    """The tables of one analysis being built in a thread, and how many requests wait."""

    waiters: int = 0
    job: asyncio.Future[bool] = field(init=False)  # set once the thread has it


Listener = Callable[[Analysis], None]
CloseListener = Callable[[str], None]


class Analyzer:
    """Schedules analyses of the documents in a `DocumentStore` and announces them."""

    def __init__(
        self,
        documents: DocumentStore,
        *,
        debounce: float = DEBOUNCE_SECONDS,
        executor: Executor | None = None,
        collector: Collector | None = None,
        build_delay: float = BUILD_DELAY_SECONDS,
    ) -> None:
        self.documents = documents
        self.collector = collector
        self._building: dict[int, _Build] = {}  # by Analysis.seq
        self.build_delay = build_delay
        self.debounce = debounce
        self.strict = False
        self.memory_budget: int | None = None  # bytes, for QVR601; None: the default
        #: `qvr.export.target` ("" off): its QVR701 warnings join the diagnostics
        self.export_target = ""
        self.generation = 0
        self._executor = executor or ThreadPoolExecutor(2, thread_name_prefix="qvr-analysis")
        self._entries: dict[str, _Entry] = {}
        #: requests now waiting for a check or a build (`_for_a_request`)
        self._serving = 0
        self.yield_most = YIELD_MOST_SECONDS
        self._listeners: list[Listener] = []
        self._close_listeners: list[CloseListener] = []

    # ----------------------------------------------------------- listeners

    def on_analysis(self, listener: Listener) -> None:
        """Call `listener` (on the event loop) with each analysis of a current text."""
        self._listeners.append(listener)

    def on_close(self, listener: CloseListener) -> None:
        self._close_listeners.append(listener)

    # ------------------------------------------------------------ schedule

    def schedule(self, uri: str, *, immediate: bool = False) -> None:
        """Analyse `uri` after the debounce (at once when `immediate`)."""
        entry = self._entries.setdefault(uri, _Entry())
        now = asyncio.get_running_loop().time()
        entry.burst = now - entry.last_edit < self.debounce
        entry.last_edit = now
        if immediate:
            entry.kick.set()
        if entry.task is None or entry.task.done():
            entry.task = asyncio.get_running_loop().create_task(self._work(uri, entry))

    def configure(
        self, *, strict: bool, memory_budget: int | None = None, export_target: str = ""
    ) -> None:
        """New settings: every open document is analysed again at once."""
        now = (strict, memory_budget, export_target)
        if now == (self.strict, self.memory_budget, self.export_target):
            return
        self.strict = strict
        self.memory_budget = memory_budget
        self.export_target = export_target
        self.generation += 1
        for doc in self.documents:
            self.schedule(doc.uri, immediate=True)

    def close(self, uri: str) -> None:
        entry = self._entries.pop(uri, None)
        if entry is not None:
            entry.release()
        for listener in self._close_listeners:
            _call_safely(listener, uri)

    def shutdown(self) -> None:
        if self.collector is not None:
            self.collector.close()
        for entry in self._entries.values():
            for task in (entry.task, entry.builder):
                if task is not None:
                    task.cancel()
        self._executor.shutdown(wait=False, cancel_futures=True)

    # ------------------------------------------------------------- queries

    def snapshot(self, uri: str) -> Snapshot | None:
        """What is known now, without waiting (None when the document is not open)."""
        doc = self.documents.get(uri)
        if doc is None:
            return None
        entry = self._entries.get(uri) or _Entry()
        return Snapshot(doc, entry.newest, entry.good, entry.ready)

    async def settled(self, uri: str, timeout: float = SETTLE_TIMEOUT_SECONDS) -> Snapshot | None:
        """A snapshot whose newest analysis is of the text `uri` has now (or of a newer one),
        with its tables built, if that is ready in time.

        The goal is the text of this moment: edits that arrive while the request
        waits do not move it (under a flood of edits the request would otherwise
        wait for analyses of texts newer than its own, and time out).
        """
        snap, reached = await self._checked(uri, timeout)
        return await self._built(uri, snap) if snap is not None and reached else snap

    async def checked(self, uri: str, timeout: float = SETTLE_TIMEOUT_SECONDS) -> Snapshot | None:
        """Like `settled`, without waiting for the tables: the newest analysis may still
        be building them (a request that the last built tables can answer needs no more)."""
        return (await self._checked(uri, timeout))[0]

    async def _checked(self, uri: str, timeout: float) -> tuple[Snapshot | None, bool]:
        """The snapshot, and whether its newest analysis is of the text `uri` has now."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        doc = self.documents.get(uri)
        if doc is None:
            return None, False
        target = doc.seq
        while True:
            snap = self.snapshot(uri)
            if snap is None:
                return snap, False
            if snap.newest is not None and snap.newest.seq >= target:
                return snap, True
            entry = self._entries.get(uri)
            if entry is None:
                self.schedule(uri, immediate=True)
                entry = self._entries[uri]
            else:
                entry.kick.set()
                if entry.task is None or entry.task.done():
                    self.schedule(uri, immediate=True)
            remaining = deadline - loop.time()
            if remaining <= 0:
                return snap, False
            try:
                with self._for_a_request():
                    await asyncio.wait_for(entry.stored.wait(), remaining)
            except TimeoutError:
                return self.snapshot(uri), False

    async def quiet(
        self, uri: str, seconds: float = BUILD_DELAY_SECONDS, most: float = QUIET_MOST_SECONDS
    ) -> None:
        """Wait until `uri` has not been edited for `seconds`, or `most` seconds have passed.

        Requests that walk the whole file (semantic tokens, the outline) wait
        for a pause in typing: an editor sends them after every edit and
        cancels the stale ones, so during a burst they would only take the
        CPU the next edit's diagnostics need. Under edits that never pause the
        wait ends after `most`: the request is then answered for its own text.
        """
        loop = asyncio.get_running_loop()
        give_up = loop.time() + max(most, 0.0)
        while (entry := self._entries.get(uri)) is not None:
            remaining = min(entry.last_edit + seconds, give_up) - loop.time()
            if remaining <= 0:
                return
            await asyncio.sleep(remaining)

    async def available(self, uri: str) -> Snapshot | None:
        """What is known now, with its tables built, without waiting for the current
        text's analysis (completion answers from the last analysis at once)."""
        snap = self.snapshot(uri)
        return None if snap is None else await self._built(uri, snap)

    async def _built(self, uri: str, snap: Snapshot) -> Snapshot | None:
        """`snap` once the tables of its analyses are built (a request waits for them)."""
        entry = self._entries.get(uri)
        if entry is None:
            return snap
        newest, good = snap.newest, snap.good
        if newest is not None and (not newest.ready or newest.export_pending):
            await self._materialize(entry, newest, requested=True)
        if good is not None and good is not newest and not good.ready:
            await self._materialize(entry, good, requested=True)  # asked for while broken
        return self.snapshot(uri)

    # -------------------------------------------------------------- worker

    def _is_current(self, entry: _Entry, doc: Document) -> bool:
        a = entry.newest
        return a is not None and a.seq == doc.seq and a.generation == self.generation

    async def _work(self, uri: str, entry: _Entry) -> None:
        try:
            while True:
                doc = self.documents.get(uri)
                if doc is None or self._is_current(entry, doc):
                    return
                await self._debounce(entry)
                if not entry.kick.is_set():  # nobody asked for this check: requests first
                    await self._after_requests(entry)
                entry.kick.clear()
                doc = self.documents.get(uri)
                if doc is None:
                    return
                if is_large(doc.text):
                    analysis = await self._run_large(doc, entry)
                    if analysis is None:
                        continue  # superseded: check the newest text
                else:
                    analysis = await self._run(doc, entry.checker)
                entry.store(analysis)
                # what asked for a check has it now; a request that waits for a newer text
                # wakes on the store and asks again (`_checked`)
                entry.kick.clear()
                self._announce(entry, analysis)
                self._build_when_idle(entry, analysis)
                if self.collector is not None:
                    self.collector.analysed()
        except asyncio.CancelledError:
            raise
        except Exception:  # the worker must survive anything, or the file loses diagnostics
            log.exception("analysis worker failed for %s", uri)
            doc = self.documents.get(uri)
            if doc is not None and self._entries.get(uri) is entry:
                failed = _abandoned(doc, self.generation, "the analysis worker failed")
                entry.store(failed)
                self._announce(entry, failed)

    async def _debounce(self, entry: _Entry) -> None:
        """Wait until edits pause for `debounce` seconds; a lone edit does not wait.

        An edit after a quiet spell is analysed at once (its diagnostics come
        as fast as the checker allows); edits in quick succession are
        coalesced and analysed when the typing pauses.
        """
        loop = asyncio.get_running_loop()
        while not entry.kick.is_set() and entry.burst:
            remaining = entry.last_edit + self.debounce - loop.time()
            if remaining <= 0:
                break
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(entry.kick.wait(), remaining)

    @contextlib.contextmanager
    def _for_a_request(self) -> Iterator[None]:
        """While a request waits for a check or a build (`_after_requests` yields to it)."""
        self._serving += 1
        try:
            yield
        finally:
            self._serving -= 1

    async def _after_requests(self, entry: _Entry | None) -> None:
        """Wait while requests wait for checks or builds (of any document), at most
        `yield_most` seconds, or until a request asks for `entry`'s newest text.

        Checks and builds run in threads that share one interpreter lock: under a
        flood of edits a check of the newest text started every time the edits
        paused for the debounce (a loaded machine delivers them in bunches), and
        the build a hover or the outline waited for took three times as long
        beside it. That check's text is superseded by the next edit anyway.
        """
        loop = asyncio.get_running_loop()
        give_up = loop.time() + self.yield_most
        while self._serving > 0 and loop.time() < give_up:
            if entry is not None and entry.kick.is_set():
                return
            await asyncio.sleep(_YIELD_POLL_SECONDS)

    def _is_current_text(self, analysis: Analysis) -> bool:
        doc = self.documents.get(analysis.uri)
        return doc is not None and doc.seq == analysis.seq

    def _build_when_idle(self, entry: _Entry, analysis: Analysis) -> None:
        """Build the tables of `analysis` once edits pause (requests build them sooner)."""
        if entry.builder is not None:
            entry.builder.cancel()
        if analysis.module is not None and not analysis.ready:
            entry.builder = asyncio.get_running_loop().create_task(
                self._build_after_pause(entry, analysis)
            )

    async def _build_after_pause(self, entry: _Entry, analysis: Analysis) -> None:
        await asyncio.sleep(self.build_delay)
        await self._after_requests(None)
        await self._materialize(entry, analysis, requested=False)

    async def _materialize(self, entry: _Entry, analysis: Analysis, *, requested: bool) -> None:
        """Build the module's tables off the event loop, for the requests to come; then
        add the export target's warnings the analysis waited for (`_add_exports`)."""
        await self._build_tables(entry, analysis, requested=requested)
        if analysis.export_pending and analysis.ready:
            await self._add_exports(entry, analysis)

    async def _add_exports(self, entry: _Entry, analysis: Analysis) -> None:
        """`analysis` with the `qvr.export.target` warnings, stored and announced in its place
        while it is the newest of the current text (its tables are built: this is text
        generation from them, in a thread)."""
        if entry.newest is not analysis or not self._is_current_text(analysis):
            return
        if analysis.generation != self.generation:
            return
        loop = asyncio.get_running_loop()
        found = await loop.run_in_executor(
            self._executor, export_diagnostics, analysis.checked, self.export_target
        )
        if entry.newest is not analysis or not self._is_current_text(analysis):
            return  # a newer text, or another build's call got there first
        if analysis.generation != self.generation:
            return
        diagnostics = analysis.diagnostics + found
        exported = replace(analysis, diagnostics=diagnostics, export_pending=False)
        entry.store(exported)
        self._announce(entry, exported)

    async def _build_tables(self, entry: _Entry, analysis: Analysis, *, requested: bool) -> None:
        """Build the module's tables off the event loop, for the requests to come.

        Unasked (after a pause in typing), the build is given up as soon as a
        newer text arrives: its analysis comes first. A request's build goes on
        while a request waits for it, whatever is typed meanwhile (the request
        is about that text); once no request waits and the text is no longer
        current, it is given up too. Requests that come together share one build.
        """
        if analysis.module is None or analysis.ready:
            if analysis.ready:
                entry.built(analysis)
            return
        if not requested and not self._is_current_text(analysis):
            return
        waiting = self._for_a_request() if requested else contextlib.nullcontext()
        running = self._building.get(analysis.seq)
        if running is not None:  # requests come in bursts: one build, one thread, for all
            running.waiters += requested
            try:
                with waiting, contextlib.suppress(Exception):
                    await asyncio.shield(running.job)
            finally:
                running.waiters -= requested
            if analysis.ready:
                entry.built(analysis)
                return
            if not requested and not self._is_current_text(analysis):
                return  # it was given up for a newer text
        loop = asyncio.get_running_loop()
        build = _Build(waiters=int(requested))
        stale = partial(self._abandoned, analysis, build)
        job = loop.run_in_executor(self._executor, analysis.module.materialize, stale)
        build.job = job
        seq = analysis.seq
        self._building[seq] = build

        def forget(_: object) -> None:
            if self._building.get(seq) is build:
                del self._building[seq]

        job.add_done_callback(forget)
        waiting = self._for_a_request() if requested else contextlib.nullcontext()
        try:
            with waiting:
                built = await asyncio.shield(job)
        except Exception:  # materialize falls back on its own; this is belt and braces
            log.exception("building the tables of %s failed", analysis.uri)
            return
        finally:
            build.waiters -= requested
        if built:
            entry.built(analysis)
            if self.collector is not None:
                self.collector.analysed()

    def _abandoned(self, analysis: Analysis, build: _Build) -> bool:
        """Whether a build may stop: no request waits for it and a newer text came."""
        return build.waiters <= 0 and not self._is_current_text(analysis)

    async def _run_large(self, doc: Document, entry: _Entry) -> Analysis | None:
        """Diagnostics only, from a child process; None when a newer text came first."""
        from qvr_lsp.analysis.large_check import check_in_child  # only large documents need it

        # what was kept for a smaller text of this document goes: nothing here answers from it
        entry.checker = IncrementalChecker()
        entry.good = entry.ready = None
        generation = self.generation
        started = time.perf_counter()

        def stale() -> bool:
            now = self.documents.get(doc.uri)
            return now is None or now.seq != doc.seq or generation != self.generation

        try:
            diagnostics = await asyncio.wait_for(
                check_in_child(doc.text, self.strict, stale, memory_budget=self.memory_budget),
                ANALYSIS_TIMEOUT_SECONDS * 3,
            )
        except TimeoutError:
            why = "the check of this large file took too long"
            return _abandoned(doc, generation, why, large=True)
        except Exception as exc:
            log.exception("checking large %s version %s failed", doc.uri, doc.version)
            why = f"the check of this large file failed ({exc})"
            return _abandoned(doc, generation, why, large=True)
        if diagnostics is None:
            return None
        positions = await asyncio.to_thread(lambda: doc.positions)  # 0.1 s for 10 MB
        return Analysis(
            doc.uri,
            doc.version,
            doc.seq,
            doc.text,
            None,
            diagnostics,
            positions,
            generation,
            seconds=time.perf_counter() - started,
            large=True,
        )

    async def _run(self, doc: Document, checker: IncrementalChecker) -> Analysis:
        loop = asyncio.get_running_loop()
        generation = self.generation
        job = loop.run_in_executor(
            self._executor,
            analyze,
            doc,
            self.strict,
            generation,
            checker,
            self.memory_budget,
            self.export_target,
            False,  # the export target's warnings once the tables are built (_add_exports)
        )
        try:
            return await asyncio.wait_for(job, ANALYSIS_TIMEOUT_SECONDS)
        except TimeoutError:
            log.error("analysis of %s version %s timed out", doc.uri, doc.version)
            why = f"analysis did not finish within {ANALYSIS_TIMEOUT_SECONDS:.0f} s"
            return _abandoned(doc, generation, why)

    def _announce(self, entry: _Entry, analysis: Analysis) -> None:
        doc = self.documents.get(analysis.uri)
        if doc is None or doc.seq != analysis.seq or analysis.generation != self.generation:
            return  # superseded: a newer analysis is on its way
        if analysis.seq < entry.announced_seq:
            return
        entry.announced_seq = analysis.seq
        for listener in self._listeners:
            _call_safely(listener, analysis)


def _call_safely(listener: Callable[..., None], *args: object) -> None:
    try:
        listener(*args)
    except Exception:
        log.exception("analysis listener %r failed", listener)
