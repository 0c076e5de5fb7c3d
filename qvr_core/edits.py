"""Applying text edits: how fixes and formatting change a source text."""

from __future__ import annotations

from collections.abc import Iterable

from qvr_core.diagnostics import TextEdit


def apply_edits(text: str, edits: Iterable[TextEdit]) -> str:
    """Apply non-overlapping edits given against the original text (as LSP does)."""
    ordered = sorted(edits, key=lambda e: (e.span.start, e.span.end), reverse=True)
    for e in ordered:
        text = text[: e.span.start] + e.new_text + text[e.span.end :]
    return text
