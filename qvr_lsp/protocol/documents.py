"""The open documents: text and version, edited by the client's changes.

The server keeps its own copy instead of pygls's `Workspace` text because
the latter splits lines with `str.splitlines`, which also breaks at form
feeds, `\\x1c` and U+2028 and so disagrees with the client about line numbers;
here lines end only where the protocol says (`\\n`, `\\r\\n`, `\\r`), and
positions are read in the negotiated encoding by `convert.TextPositions`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cached_property

from lsprotocol import types as lsp

from qvr_lsp.protocol.convert import UTF16, TextPositions


@dataclass(frozen=True)
class Document:
    """One state of an open document.

    `seq` increases with every open and change, so "is this analysis about the
    current text" never depends on the client numbering its versions well.
    """

    uri: str
    version: int
    text: str
    seq: int
    language_id: str = "qvr"
    encoding: lsp.PositionEncodingKind = UTF16

    @cached_property
    def positions(self) -> TextPositions:
        """Position conversion for this text (built once, on first use)."""
        return TextPositions(self.text, self.encoding)

    def built_positions(self) -> TextPositions | None:
        """`positions` if built already, else None (never building them, never waiting for
        the thread that may be building them: `cached_property` holds a lock meanwhile)."""
        found = self.__dict__.get("positions")
        return found if isinstance(found, TextPositions) else None


def is_qvr_document(uri: str, language_id: str) -> bool:
    """Whether an opened document is QVR: its languageId is `qvr` (VS Code's language,
    Neovim's filetype), or its path ends in `.qvr` (a client that sends every buffer with
    a generic id such as `plaintext`). Anything else, a Markdown file say, is not ours."""
    return language_id.lower() == "qvr" or uri.split("?", 1)[0].lower().endswith(".qvr")


class DocumentStore:
    """Open documents by URI; every change produces a new immutable `Document`."""

    def __init__(self, encoding: lsp.PositionEncodingKind = UTF16) -> None:
        self.encoding = encoding
        self._docs: dict[str, Document] = {}
        self._seq = 0
        #: open documents of another language: no text, no analysis, changes ignored
        self.ignored: set[str] = set()

    def _next(self) -> int:
        self._seq += 1
        return self._seq

    def open(self, uri: str, text: str, version: int, language_id: str = "qvr") -> Document:
        doc = Document(uri, version, text, self._next(), language_id or "qvr", self.encoding)
        self._docs[uri] = doc
        return doc

    def change(
        self,
        uri: str,
        version: int,
        changes: Iterable[lsp.TextDocumentContentChangeEvent],
    ) -> Document | None:
        """Apply the changes in order; None when the document is not open."""
        doc = self._docs.get(uri)
        if doc is None:
            return None
        text = doc.text
        for i, change in enumerate(changes):
            # the first change reads the positions the document built already, if it did
            # (an analysis in a thread builds them): one pass over a large text fewer
            positions = doc.built_positions() if i == 0 and doc.encoding == self.encoding else None
            text = apply_change(text, change, self.encoding, positions)
        new = Document(uri, version, text, self._next(), doc.language_id, self.encoding)
        self._docs[uri] = new
        return new

    def close(self, uri: str) -> None:
        self._docs.pop(uri, None)
        self.ignored.discard(uri)

    def get(self, uri: str) -> Document | None:
        return self._docs.get(uri)

    def __iter__(self) -> Iterator[Document]:
        return iter(list(self._docs.values()))

    def __len__(self) -> int:
        return len(self._docs)


def apply_change(
    text: str,
    change: lsp.TextDocumentContentChangeEvent,
    encoding: lsp.PositionEncodingKind,
    positions: TextPositions | None = None,
) -> str:
    """One content change: a range replacement, or the whole text when it has no range.

    `positions`, when given, are those of `text` (built already, or kept for later).
    """
    if isinstance(change, lsp.TextDocumentContentChangePartial):
        start, end = (positions or TextPositions(text, encoding)).offsets(change.range)
        return text[:start] + change.text + text[end:]
    return change.text
