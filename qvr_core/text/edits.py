"""Applying text edits: how fixes and formatting change a source text."""

from __future__ import annotations

from collections.abc import Iterable

from qvr_core.text.diagnostics import TextEdit


def apply_edits(text: str, edits: Iterable[TextEdit]) -> str:
    """Apply non-overlapping edits given against the original text (as LSP does).

    One pass over the text (pieces joined once), so a thousand formatting
    edits cost no more than one. Insertions at the same offset end up in
    the reverse of their order in `edits`.
    """
    listed = list(edits)
    order = sorted(
        range(len(listed)),
        key=lambda k: (listed[k].span.start, listed[k].span.end, -k),
    )
    pieces: list[str] = []
    at = 0
    for k in order:
        edit = listed[k]
        pieces.append(text[at : edit.span.start])
        pieces.append(edit.new_text)
        at = max(at, edit.span.end)
    pieces.append(text[at:])
    return "".join(pieces)
