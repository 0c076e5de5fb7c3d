"""The canonical layout of QVR source: one formatter for `qvr fmt` and the language server.

`format_source(text) -> str` (unchanged when the text does not parse),
`format_text(text) -> FormatResult` (with the reason when it refuses) and
`format_edits(text, lines=None)` (line edits, for editors). The printer
spells each node; the formatter lays out lines, comments and blank lines;
`equivalence` is the self-check every result passes.
"""

from __future__ import annotations

from qvr_core.format.diff import format_edits
from qvr_core.format.formatter import FormatResult, format_source, format_text

__all__ = ["FormatResult", "format_edits", "format_source", "format_text"]
