"""Positions and diagnostics at the protocol's edge.

The core speaks code-point offsets (`Span.start`/`end`); the protocol speaks
(line, character) in the negotiated encoding (UTF-16 unless the client offers
UTF-8 or UTF-32) with `\\n`, `\\r\\n` and `\\r` all ending a line. This module
is the only place that converts between the two, always from offsets, so a
non-ASCII character in a comment never shifts a range.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterable
from itertools import accumulate
from typing import Any

from lsprotocol import types as lsp
from pygls.capabilities import get_capability

from qvr_core.text.diagnostics import Diagnostic, Severity, TextEdit
from qvr_core.text.span import Span

UTF8 = lsp.PositionEncodingKind.Utf8
UTF16 = lsp.PositionEncodingKind.Utf16
UTF32 = lsp.PositionEncodingKind.Utf32

_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_PLUS_ONE = (1).__add__
_ASCII = re.compile(r"[\x00-\x7f]*")


def encoding_of(value: object) -> lsp.PositionEncodingKind:
    """The encoding pygls negotiated (a str or enum); UTF-16 for anything unknown."""
    for kind in (UTF8, UTF16, UTF32):
        if value == kind or value == kind.value:
            return kind
    return UTF16


def _units(text: str, encoding: lsp.PositionEncodingKind) -> int:
    """Length of `text` in the encoding's code units."""
    if encoding is UTF32 or _ASCII.fullmatch(text):
        return len(text)
    if encoding is UTF8:
        return len(text.encode("utf-8", "surrogatepass"))
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


def _char_units(ch: str, encoding: lsp.PositionEncodingKind) -> int:
    if encoding is UTF32:
        return 1
    code = ord(ch)
    if encoding is UTF8:
        return 1 if code < 0x80 else 2 if code < 0x800 else 3 if code < 0x10000 else 4
    return 2 if code > 0xFFFF else 1


class TextPositions:
    """Offsets of one text <-> protocol positions, by the protocol's line rules."""

    def __init__(self, text: str, encoding: lsp.PositionEncodingKind = UTF16) -> None:
        self.text = text
        self.encoding = encoding
        self.line_starts: list[int]
        self.line_ends: list[int]  # offset of each line's terminator (or the end of the text)
        if "\r" in text:
            self.line_starts, self.line_ends = [0], []
            for m in _LINE_BREAK.finditer(text):
                self.line_ends.append(m.start())
                self.line_starts.append(m.end())
            self.line_ends.append(len(text))
        else:
            # only `\n`: the same tables, built in C (a 5,000-line text is edited on the
            # event loop, and this ran as a Python loop over its lines at every edit)
            ends = list(accumulate(map(_PLUS_ONE, map(len, text.split("\n"))), initial=-1))
            self.line_starts = list(map(_PLUS_ONE, ends[:-1]))
            self.line_ends = ends[1:]
            self.line_ends[-1] = len(text)
        self._plain_lines: dict[int, bool] = {}

    @property
    def line_count(self) -> int:
        return len(self.line_starts)

    def line_of(self, offset: int) -> int:
        return bisect_right(self.line_starts, max(0, min(offset, len(self.text)))) - 1

    def line_text(self, line: int) -> str:
        if not 0 <= line < self.line_count:
            return ""
        return self.text[self.line_starts[line] : self.line_ends[line]]

    def position(self, offset: int) -> lsp.Position:
        return lsp.Position(*self.line_character(offset))

    def line_character(self, offset: int) -> tuple[int, int]:
        """`position(offset)` as a plain pair (for the many positions of semantic tokens)."""
        offset = max(0, min(offset, len(self.text)))
        line = bisect_right(self.line_starts, offset) - 1
        start = self.line_starts[line]
        offset = min(offset, self.line_ends[line])  # inside a `\r\n`: the line's end
        if self._plain(line):
            return line, offset - start
        return line, _units(self.text[start:offset], self.encoding)

    def _plain(self, line: int) -> bool:
        """True when code points are code units on `line` (ASCII, or UTF-32)."""
        known = self._plain_lines.get(line)
        if known is None:
            segment = self.text[self.line_starts[line] : self.line_ends[line]]
            known = self.encoding is UTF32 or segment.isascii()
            self._plain_lines[line] = known
        return known

    def offset(self, position: lsp.Position) -> int:
        """The code-point offset of a client position, clamped to the text (never raises)."""
        line = position.line
        if line < 0:
            return 0
        if line >= self.line_count:
            return len(self.text)
        start, end = self.line_starts[line], self.line_ends[line]
        wanted = max(0, position.character)
        segment = self.text[start:end]
        if self.encoding is UTF32 or _ASCII.fullmatch(segment):
            return start + min(wanted, len(segment))
        units = 0
        for i, ch in enumerate(segment):
            if units >= wanted:
                return start + i
            units += _char_units(ch, self.encoding)
        return end

    def range(self, span: Span) -> lsp.Range:
        return lsp.Range(self.position(span.start), self.position(span.end))

    def offsets(self, rng: lsp.Range) -> tuple[int, int]:
        start, end = self.offset(rng.start), self.offset(rng.end)
        return (start, end) if start <= end else (end, start)


# ------------------------------------------------------------- diagnostics

SEVERITY = {
    Severity.ERROR: lsp.DiagnosticSeverity.Error,
    Severity.WARNING: lsp.DiagnosticSeverity.Warning,
    Severity.INFORMATION: lsp.DiagnosticSeverity.Information,
    Severity.HINT: lsp.DiagnosticSeverity.Hint,
}
SOURCE = "qvr"


def to_lsp_diagnostic(
    diagnostic: Diagnostic,
    positions: TextPositions,
    uri: str,
    *,
    related_information: bool = True,
    unnecessary_tag: bool = True,
) -> lsp.Diagnostic:
    """One core diagnostic as the protocol's, with its fixes kept in `data`.

    `data["fixes"]` holds each fix with its edits already in protocol ranges of
    the analysed text, so a code-action feature can turn it into a WorkspaceEdit
    without re-analysing (clients send `data` back with the diagnostic).
    """
    related = None
    if related_information and diagnostic.related:
        related = [
            lsp.DiagnosticRelatedInformation(
                location=lsp.Location(uri, positions.range(r.span)), message=r.message
            )
            for r in diagnostic.related
        ]
    tags = [lsp.DiagnosticTag.Unnecessary] if diagnostic.unnecessary and unnecessary_tag else None
    return lsp.Diagnostic(
        range=positions.range(diagnostic.span),
        message=diagnostic.message,
        severity=SEVERITY.get(diagnostic.severity, lsp.DiagnosticSeverity.Error),
        code=diagnostic.code,
        source=SOURCE,
        related_information=related,
        tags=tags,
        data=diagnostic_data(diagnostic, positions),
    )


def diagnostic_data(diagnostic: Diagnostic, positions: TextPositions) -> dict[str, Any] | None:
    """The machine-readable part of a diagnostic: its fixes and the core's extra facts."""
    data: dict[str, Any] = {}
    if diagnostic.fixes:
        data["fixes"] = [
            {
                "title": fix.title,
                "preferred": fix.preferred,
                "edits": [
                    {"range": _range_json(positions.range(e.span)), "newText": e.new_text}
                    for e in fix.edits
                ],
            }
            for fix in diagnostic.fixes
        ]
    if diagnostic.data:
        data["facts"] = dict(diagnostic.data)
    return data or None


def _range_json(rng: lsp.Range) -> dict[str, dict[str, int]]:
    return {
        "start": {"line": rng.start.line, "character": rng.start.character},
        "end": {"line": rng.end.line, "character": rng.end.character},
    }


# ------------------------------------------------------------------- edits


def text_edits(edits: Iterable[TextEdit], positions: TextPositions) -> list[lsp.TextEdit]:
    """The core's edits of the text `positions` converts, as the protocol's."""
    return [lsp.TextEdit(positions.range(e.span), e.new_text) for e in edits]


def workspace_edit(
    caps: lsp.ClientCapabilities | None,
    uri: str,
    version: int,
    positions: TextPositions,
    edits: Iterable[TextEdit],
) -> lsp.WorkspaceEdit:
    """Edits of one document (at `version`, whose text `positions` converts), versioned
    when the client takes `documentChanges`, so a client applies them only to that text."""
    changes = text_edits(edits, positions)
    versioned = caps is not None and get_capability(
        caps, "workspace.workspace_edit.document_changes", False
    )
    if versioned:
        document = lsp.OptionalVersionedTextDocumentIdentifier(uri, version)
        return lsp.WorkspaceEdit(document_changes=[lsp.TextDocumentEdit(document, changes)])
    return lsp.WorkspaceEdit(changes={uri: changes})
