"""The snapshot kinds: how fresh the analysis a request is answered from must be.

Every entry of the handler table (`qvr_lsp/app.py`) names one kind, and the kind
alone decides which analyses of the document its handler sees and how long the
request waits for them; no handler asks the analyzer itself. An editor's requests
differ in what a stale answer costs: a range computed on an older text lands on the
wrong characters (rename, quick fixes, tokens), a hover may come from tables built
before the last keystroke when they give the same answer, a completion list must not
wait for the text being typed. Written once here, that rule is the same for every
request of a kind, and a new request picks a kind instead of writing its own.

- `CURRENT_TEXT`: the analysis of the text the client has now (`Analysis`), waiting
  (bounded) for that text's check and tables;
- `SENT_TEXT`: the analyses to ask at the request's position, newest first (`Lookup`),
  once the text the request was sent for (or a newer one) is checked and built;
- `CARRIED`: as `SENT_TEXT`, but answered at once from the last built tables where they
  carry that text's very answer (`Carrying`);
- `STRUCTURE`: the newest analysis whose text parsed (`Analysis`), waiting as `SENT_TEXT`;
- `LAST_TABLES`: the document now and the modules known, their tables built (`Known`),
  never waiting for a newer check;
- `DOCUMENT`: the document's text now (`Document`), no analysis;
- `DIAGNOSED`: the newest analysis (its diagnostics) once the sent text is checked, or
  why there is none (`Diagnosed`);
- `WORKSPACE`: no one document: reads of the open documents and the commands' sources
  (`Open`), each saying what it waits for.

`after_pause()` makes a document kind first wait (briefly) for a pause in typing,
for requests that walk the whole file and that an editor sends after every edit.

A handler whose kind cannot give it a snapshot (the document is closed, its check
failed, the wait ran out) is not called: the dispatcher answers its empty answer.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from lsprotocol import types as lsp

from qvr_core.check import CheckedModule
from qvr_core.text.span import Span
from qvr_lsp.analysis.snapshots import Analysis, Snapshot
from qvr_lsp.protocol.documents import Document

if TYPE_CHECKING:
    from qvr_core.check.kept import Kept
    from qvr_core.ide.carried import Unknown
    from qvr_lsp.analysis.analyzer import Analyzer
    from qvr_lsp.analysis.command_sources import Source
    from qvr_lsp.analysis.session import Session


class InDocument(Protocol):
    """The params of a request about one document."""

    @property
    def text_document(self) -> lsp.TextDocumentIdentifier: ...


class AtPosition(InDocument, Protocol):
    """The params of a request about one position of a document."""

    @property
    def position(self) -> lsp.Position: ...


class Spanned(Protocol):
    """An answer located in the text (a hover's)."""

    @property
    def span(self) -> Span: ...


P = TypeVar("P", contravariant=True)
V = TypeVar("V", covariant=True)
T = TypeVar("T")
S = TypeVar("S", bound=Spanned)


class Kind(ABC, Generic[P, V]):
    """A snapshot kind: from a request's params, the view of the document its handler
    answers from, or None when there is none to answer from."""

    def __init__(self, name: str) -> None:
        self.name = name

    @abstractmethod
    async def take(self, session: Session, params: P) -> V | None:
        """The view for this request (awaiting what the kind waits for)."""

    def __repr__(self) -> str:
        return f"<snapshot kind {self.name}>"


class _OfDocument(Kind[InDocument, V]):
    """A kind about the document the params name; `after_pause()` waits for typing to
    pause first (`Analyzer.quiet`)."""

    def __init__(self, name: str, paused: bool = False) -> None:
        super().__init__(f"{name}, after a pause" if paused else name)
        self.paused = paused

    async def take(self, session: Session, params: InDocument) -> V | None:
        uri = params.text_document.uri
        if self.paused:
            await session.analyzer.quiet(uri)
        return await self._view(session.analyzer, uri)

    @abstractmethod
    async def _view(self, analyzer: Analyzer, uri: str) -> V | None: ...

    def after_pause(self) -> _OfDocument[V]:
        """This kind, once typing in the document pauses (at most `QUIET_MOST_SECONDS`)."""
        return type(self)(self.name, paused=True)


# ------------------------------------------------------------- the current text


async def current_text(analyzer: Analyzer, uri: str) -> Analysis | None:
    """The analysis of the document's current text, its tables built (waiting, bounded,
    for it), or None: a range into an older text would land on the wrong characters."""
    snap = await analyzer.settled(uri)
    if snap is None or not snap.current or snap.newest is None or snap.newest.module is None:
        return None
    return snap.newest


class _CurrentText(_OfDocument[Analysis]):
    async def _view(self, analyzer: Analyzer, uri: str) -> Analysis | None:
        return await current_text(analyzer, uri)


#: Requests that return positions into the text (rename, quick fixes, inlay hints,
#: tokens, folding, selection): the analysis of the text the client has now.
CURRENT_TEXT: _OfDocument[Analysis] = _CurrentText("current text")


# ---------------------------------------------------------- the text it was sent for


@dataclass(frozen=True)
class Lookup:
    """The analyses that may know what is at `position`, newest first: a name on a line
    that no longer parses is still found in the last analysis that parsed."""

    position: lsp.Position
    analyses: tuple[Analysis, ...]

    def first(self, find: Callable[[CheckedModule, int], T | None]) -> tuple[Analysis, T] | None:
        """The first analysis for which `find(module, offset)` finds something, and that."""
        for analysis in self.analyses:
            found = find(analysis.checked, analysis.positions.offset(self.position))
            if found is not None:
                return analysis, found
        return None


class _SentText(Kind[AtPosition, Lookup]):
    async def take(self, session: Session, params: AtPosition) -> Lookup | None:
        snap = await session.analyzer.settled(params.text_document.uri)
        return None if snap is None else Lookup(params.position, tuple(snap.for_queries()))


#: Requests whose positions must agree with the text they were sent for (definition,
#: references, highlights): its analysis once built (or a newer one), then the last
#: that parsed.
SENT_TEXT: Kind[AtPosition, Lookup] = _SentText("sent text")


# ------------------------------------------------------------ carried answers


@dataclass(frozen=True)
class Carrying:
    """A position of the text a request was sent for, answered from the last built
    tables where they carry that text's very answer, else as `SENT_TEXT` answers.

    After an edit the new text's tables are still being built; a hover on a declaration
    the edit left alone has the same answer in the last tables built, moved. Edits that
    came after the request do not matter: under a flood of edits the document has
    always moved on by the time the request's text is checked, and waiting for that
    text's tables cost a build (some 0.3 s of a 5,000-line file)."""

    analyzer: Analyzer
    uri: str
    position: lsp.Position
    sent_for: int  # the `Document.seq` of the text the request was sent for
    checked: Snapshot  # once that text (or a newer one) is checked, tables or not

    async def answer(
        self,
        find: Callable[[CheckedModule, int], S | None],
        carry: Callable[[CheckedModule, Kept | None, int], S | Unknown | None],
    ) -> tuple[S, lsp.Range] | None:
        """The answer `find(module, offset)` gives, with its range; `carry(earlier module,
        the newest check's kept facts, offset)` says whether the last built tables give it
        (`qvr_core.ide.carried`), or UNKNOWN when the new tables are needed."""
        from qvr_core.ide.carried import UNKNOWN

        carried = self._carried(carry)
        if carried is not UNKNOWN:
            return carried
        snap = await self.analyzer.settled(self.uri)
        if snap is None:
            return None
        for analysis in snap.for_queries():
            found = find(analysis.checked, analysis.positions.offset(self.position))
            if found is not None:
                return found, analysis.positions.range(found.span)
        return None

    def _carried(
        self, carry: Callable[[CheckedModule, Kept | None, int], S | Unknown | None]
    ) -> tuple[S, lsp.Range] | Unknown | None:
        """From the last built tables while the sent text's are pending, or UNKNOWN."""
        from qvr_core.ide.carried import UNKNOWN, Unknown

        newest, earlier = self.checked.newest, self.checked.ready
        if (
            newest is None
            or newest.seq < self.sent_for
            or newest.module is None
            or newest.ready
            or earlier is None
            or earlier.module is None
            or earlier.generation != newest.generation
        ):
            return UNKNOWN
        found = carry(earlier.module, newest.module.kept, newest.positions.offset(self.position))
        if found is None and not newest.parsed:
            return UNKNOWN  # the last text that parsed may know more (`for_queries`)
        if found is None or found is UNKNOWN:
            return found
        assert not isinstance(found, Unknown)
        return found, newest.positions.range(found.span)


class _Carried(Kind[AtPosition, Carrying]):
    async def take(self, session: Session, params: AtPosition) -> Carrying | None:
        analyzer = session.analyzer
        uri = params.text_document.uri
        sent_for = analyzer.snapshot(uri)  # the text the position is in
        checked = await analyzer.checked(uri)
        if checked is None or sent_for is None:
            return None
        return Carrying(analyzer, uri, params.position, sent_for.document.seq, checked)


#: Hover: answered at once from the last built tables where an edit left the answer
#: alone (`qvr_core.ide.carried`), else as `SENT_TEXT`.
CARRIED: Kind[AtPosition, Carrying] = _Carried("carried")


# ----------------------------------------------------------------- structure


async def structure(analyzer: Analyzer, uri: str) -> Analysis | None:
    """The analysis to list declarations from: the newest if it parsed, else the last
    that did (an outline should not go blank while a line is half typed)."""
    snap = await analyzer.settled(uri)
    analysis = snap.structural() if snap is not None else None
    return analysis if analysis is not None and analysis.module is not None else None


class _Structure(_OfDocument[Analysis]):
    async def _view(self, analyzer: Analyzer, uri: str) -> Analysis | None:
        return await structure(analyzer, uri)


#: The outline and the code lenses: the declarations of the newest text that parsed.
STRUCTURE: _OfDocument[Analysis] = _Structure("structure")


# --------------------------------------------------------------- last tables


@dataclass(frozen=True)
class Known:
    """The document now, and the modules whose tables are built (newest first), without
    waiting for the text being typed: the cursor's context comes from the current text,
    what the names are from the last analyses."""

    document: Document
    modules: tuple[CheckedModule, ...]
    structure: CheckedModule | None  # of the newest text that parsed


class _LastTables(_OfDocument[Known]):
    async def _view(self, analyzer: Analyzer, uri: str) -> Known | None:
        snap = await analyzer.available(uri)
        if snap is None:
            return None
        structural = snap.structural()
        modules = tuple(a.module for a in snap.for_queries() if a.module is not None)
        return Known(snap.document, modules, structural.module if structural else None)


#: Completion and signature help: answered at once, from what is known.
LAST_TABLES: _OfDocument[Known] = _LastTables("last tables")


# ------------------------------------------------------------------ document


class _Document(_OfDocument[Document]):
    async def _view(self, analyzer: Analyzer, uri: str) -> Document | None:
        snap = analyzer.snapshot(uri)
        return None if snap is None else snap.document


#: Formatting: the text now, no analysis.
DOCUMENT: _OfDocument[Document] = _Document("document")


# --------------------------------------------------------------- diagnostics


@dataclass(frozen=True)
class Diagnosed:
    """What a pull of a document's diagnostics answers from: the newest analysis once
    the text the request was sent for is analysed, None while the document's first check
    runs; `opened` False for a document the client never opened (read from disk)."""

    opened: bool
    newest: Analysis | None


class _Diagnosed(_OfDocument[Diagnosed]):
    async def _view(self, analyzer: Analyzer, uri: str) -> Diagnosed:
        snap = await analyzer.settled(uri)
        opened = snap is not None or analyzer.documents.get(uri) is not None
        return Diagnosed(opened, snap.newest if snap is not None else None)


#: `textDocument/diagnostic`.
DIAGNOSED: _OfDocument[Diagnosed] = _Diagnosed("diagnosed")


# ----------------------------------------------------------------- workspace


def newest_now(analyzer: Analyzer, uri: str) -> Analysis | None:
    """The newest analysis of `uri` now, without waiting (None when the document is not
    open or not yet analysed): what a listener compares with what it last answered."""
    snap = analyzer.snapshot(uri)
    return snap.newest if snap is not None else None


class Open:
    """Reads of the open documents for requests and commands about no one document."""

    def __init__(self, session: Session) -> None:
        self._session = session

    def newest(self, uri: str) -> Analysis | None:
        """The newest analysis of `uri` now, without waiting (None when not open or not
        yet analysed)."""
        return newest_now(self._session.analyzer, uri)

    async def structures(self) -> list[tuple[Document, Analysis]]:
        """Each open document's declarations as `STRUCTURE` gives them, from what is known
        now (its tables built, no newer check awaited)."""
        found: list[tuple[Document, Analysis]] = []
        analyzer = self._session.analyzer
        for doc in self._session.server.documents:
            snap = await analyzer.available(doc.uri)
            analysis = snap.structural() if snap is not None else None
            if analysis is not None and analysis.module is not None:
                found.append((doc, analysis))
        return found

    def current_source(self, uri: str) -> Awaitable[Source]:
        """The document's current text, checked (open or on disk): what a run or an
        export works on (`command_sources.current_source`)."""
        from qvr_lsp.analysis.command_sources import current_source

        return current_source(self._session, uri)

    def drawable_source(self, uri: str) -> Awaitable[Source]:
        """The newest text that parsed, else the current one (`command_sources`): a live
        diagram does not go blank while a line is half typed."""
        from qvr_lsp.analysis.command_sources import drawable_source

        return drawable_source(self._session, uri)


class _Workspace(Kind[Any, Open]):
    async def take(self, session: Session, params: Any) -> Open:
        return Open(session)  # never suspends: a command reads its request id first


#: Workspace requests, the server's status and the `qvr.*` commands.
WORKSPACE: Kind[Any, Open] = _Workspace("workspace")
