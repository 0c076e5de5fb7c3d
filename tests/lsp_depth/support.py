"""Helpers for the editing features over the protocol: open, apply edits, wait for diagnostics."""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types as lsp

from tests.lsp.support import diagnostics_for, fresh_uri, open_document

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.qvr"))
ERROR_EXAMPLES = sorted((ROOT / "examples" / "errors").glob("*.qvr"))


def doc(uri: str) -> lsp.TextDocumentIdentifier:
    return lsp.TextDocumentIdentifier(uri)


async def opened(client, text: str, label: str) -> tuple[str, lsp.PublishDiagnosticsParams]:
    """Open `text` under a fresh URI; its URI and first diagnostics."""
    uri = fresh_uri(label)
    open_document(client, uri, text)
    return uri, await diagnostics_for(client, uri, 1)


def offset_of(text: str, position: lsp.Position) -> int:
    """A UTF-16 protocol position as a code-point offset (both clients negotiate UTF-16)."""
    lines = text.split("\n")
    start = sum(len(line) + 1 for line in lines[: position.line])
    line = lines[position.line] if position.line < len(lines) else ""
    units = 0
    for i, ch in enumerate(line):
        if units >= position.character:
            return start + i
        units += 2 if ord(ch) > 0xFFFF else 1
    return start + len(line)


def apply_text_edits(text: str, edits: list[lsp.TextEdit]) -> str:
    spans = [
        (offset_of(text, e.range.start), offset_of(text, e.range.end), i, e.new_text)
        for i, e in enumerate(edits)
    ]
    for start, end, _, new in sorted(spans, reverse=True):
        text = text[:start] + new + text[end:]
    return text


def edits_of(edit: lsp.WorkspaceEdit, uri: str) -> list[lsp.TextEdit]:
    """The edits a WorkspaceEdit makes to `uri`, whichever form the server chose."""
    found: list[lsp.TextEdit] = []
    if edit.changes:
        found.extend(edit.changes.get(uri, []))
    for change in edit.document_changes or []:
        assert isinstance(change, lsp.TextDocumentEdit)
        if change.text_document.uri == uri:
            found.extend(e for e in change.edits if isinstance(e, lsp.TextEdit))
    return found


def touched(edit: lsp.WorkspaceEdit) -> set[str]:
    uris = set(edit.changes or {})
    uris.update(c.text_document.uri for c in edit.document_changes or [])  # type: ignore[union-attr]
    return uris


def errors(params: lsp.PublishDiagnosticsParams) -> list[tuple[str, str]]:
    return [
        (str(d.code), d.message)
        for d in params.diagnostics
        if d.severity == lsp.DiagnosticSeverity.Error
    ]
