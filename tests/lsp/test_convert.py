"""Positions and diagnostics at the protocol's edge, at library level."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from lsprotocol import types as lsp

from qvr_core.check import check
from qvr_lsp.protocol.convert import (
    UTF8,
    UTF16,
    UTF32,
    TextPositions,
    _units,
    encoding_of,
    to_lsp_diagnostic,
)
from qvr_lsp.protocol.documents import DocumentStore, apply_change


def pos(line: int, character: int) -> lsp.Position:
    return lsp.Position(line, character)


@pytest.mark.parametrize(
    ("encoding", "column"),
    [(UTF16, 6), (UTF8, 9), (UTF32, 5)],  # "# é😀 ": é is 1/2/1 units, 😀 2/4/1
)
def test_columns_count_the_encodings_units(encoding, column):
    text = "# é😀 x\n"
    p = TextPositions(text, encoding)
    offset = text.index("x")
    assert p.position(offset) == pos(0, column)
    assert p.offset(pos(0, column)) == offset


def test_protocol_line_breaks_only():
    text = "a\r\nb\rc\u2028d\x0ce\nf"
    p = TextPositions(text)
    assert p.line_count == 4
    assert p.position(text.index("c")) == pos(2, 0)
    assert p.position(text.index("e")) == pos(2, 4)  # U+2028 and form feed are not breaks
    assert p.offset(pos(0, 99)) == 1  # clamped before the \r\n
    assert p.offset(pos(99, 0)) == len(text)
    assert p.position(2) == pos(0, 1)  # inside \r\n: the end of the line


def test_encoding_of_accepts_strings_and_enums():
    assert encoding_of("utf-8") is UTF8
    assert encoding_of(lsp.PositionEncodingKind.Utf32) is UTF32
    assert encoding_of(None) is UTF16


@given(st.text(max_size=40), st.data())
def test_offset_and_position_round_trip(text, data):
    for encoding in (UTF8, UTF16, UTF32):
        p = TextPositions(text, encoding)
        offset = data.draw(st.integers(0, len(text)))
        back = p.offset(p.position(offset))
        # Offsets inside a \r\n collapse to the line's end; all others round-trip.
        assert back == offset or text[back : offset + 1].startswith("\r\n")


def test_incremental_changes_in_utf16():
    store = DocumentStore(UTF16)
    store.open("file:///a.qvr", "# 😀 x\nlet y = z\n", 1)
    change = lsp.TextDocumentContentChangePartial(range=lsp.Range(pos(0, 5), pos(0, 6)), text="w")
    doc = store.change("file:///a.qvr", 2, [change])
    assert doc is not None and doc.text == "# 😀 w\nlet y = z\n" and doc.version == 2
    whole = lsp.TextDocumentContentChangeWholeDocument(text="new")
    assert apply_change(doc.text, whole, UTF16) == "new"
    assert store.change("file:///missing.qvr", 2, [whole]) is None


def test_diagnostic_conversion_keeps_code_related_tags_and_fixes():
    text = "object A : Real 2\nobject A : Real 3\nobject Spare : Real 1\nlet m = cel\n"
    module = check(text)
    p = TextPositions(text)
    by_code = {d.code: to_lsp_diagnostic(d, p, "file:///t.qvr") for d in module.diagnostics}
    dup = by_code["QVR102"]
    assert dup.related_information[0].location.range.start == pos(0, 7)
    unused = by_code["QVR103"]
    assert unused.tags == [lsp.DiagnosticTag.Unnecessary]
    assert unused.severity == lsp.DiagnosticSeverity.Hint
    bare = to_lsp_diagnostic(
        module.diagnostics[0], p, "file:///t.qvr", related_information=False, unnecessary_tag=False
    )
    assert bare.related_information is None and bare.tags is None


@pytest.mark.parametrize("encoding", [UTF8, UTF16, UTF32])
def test_line_character_is_position_without_the_object(encoding) -> None:
    text = "a\u00e9b\r\nx\U0001f600y\n\nz\rw plain ascii line\n" * 3
    positions = TextPositions(text, encoding)
    for offset in range(-1, len(text) + 2):
        p = positions.position(offset)
        assert positions.line_character(offset) == (p.line, p.character)
        start = positions.line_starts[p.line]
        end = min(max(0, min(offset, len(text))), positions.line_ends[p.line])
        assert p.character == _units(text[start:end], encoding)
