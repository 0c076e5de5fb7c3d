"""Formatting as text edits: the changed lines only, so an editor keeps cursor and folds.

A whole-document replacement would be correct too, but editors move the
cursor to its end and lose folds. Lines are first aligned ignoring
whitespace (what formatting mostly changes), so each reformatted line is
its own edit; what differs beyond whitespace (a blank line added, brackets
dropped) becomes a block edit. Range formatting keeps the edits that touch
the requested lines; each edit is self-contained, so any subset applies.
"""

from __future__ import annotations

import difflib

from qvr_core.diagnostics import TextEdit
from qvr_core.format.formatter import format_text
from qvr_core.syntax.span import LineIndex


def format_edits(text: str, lines: tuple[int, int] | None = None) -> list[TextEdit]:
    """Edits that turn `text` into its canonical layout (none when it does not parse).

    With `lines` (first, last; 0-based, inclusive), only the edits that touch them.
    """
    result = format_text(text)
    if not result.ok or result.text == text:
        return []
    return diff_edits(text, result.text, lines)


def diff_edits(old: str, new: str, lines: tuple[int, int] | None = None) -> list[TextEdit]:
    """Line edits from `old` to `new`, optionally only those touching `lines`."""
    a = old.splitlines(keepends=True)
    b = new.splitlines(keepends=True)
    starts = [0]
    for line in a:
        starts.append(starts[-1] + len(line))
    index = LineIndex(old)
    keys_a = ["".join(line.split()) for line in a]
    keys_b = ["".join(line.split()) for line in b]
    hunks: list[tuple[int, int, int, int]] = []
    matcher = difflib.SequenceMatcher(None, keys_a, keys_b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            hunks.append((i1, i2, j1, j2))
            continue
        hunks.extend((i1 + k, i1 + k + 1, j1 + k, j1 + k + 1) for k in range(i2 - i1))
    edits = []
    for i1, i2, j1, j2 in hunks:
        if a[i1:i2] == b[j1:j2] or (lines is not None and not _touches(i1, i2, lines)):
            continue
        edits.append(TextEdit(index.span(starts[i1], starts[i2]), "".join(b[j1:j2])))
    return edits


def _touches(i1: int, i2: int, lines: tuple[int, int]) -> bool:
    """Whether old lines [i1, i2) (or the insertion point i1 when empty) meet `lines`."""
    first, last = lines
    if i1 == i2:
        return first <= i1 <= last
    return i1 <= last and first < i2
