"""Source positions shared by every stage.

Lines and columns are 0-based and count Unicode code points, which is what
Python string indexing gives; the language server converts columns to the
client's position encoding (UTF-16 by default) at its edge, nowhere else.

A line ends where the language server protocol says: at `\\n`, `\\r\\n` or a
lone `\\r`, and nowhere else (not at form feeds or U+2028). The core reads
text through `unify_line_ends`, which turns each lone `\\r` into `\\n`: the same
length, so every offset stays valid in the caller's text, and the lines are
the protocol's.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass
from itertools import accumulate

_LONE_CR = re.compile(r"\r(?!\n)")
_PLUS_ONE = (1).__add__


def unify_line_ends(text: str) -> str:
    """`text` with each lone `\\r` (an old Mac line end) made `\\n`; offsets unchanged.

    After it, a line ends at `\\n` (a `\\r\\n` keeps its `\\r`, which the layout
    treats as a blank at the end of a line), so code that splits at `\\n` sees
    the lines an editor shows.
    """
    return _LONE_CR.sub("\n", text) if "\r" in text else text


def line_end_style(text: str) -> str:
    """The line end most lines of `text` use (`\\n` on a tie or with none), for output
    that keeps the file's own style."""
    crlf = text.count("\r\n")
    cr = text.count("\r") - crlf
    lf = text.count("\n") - crlf
    return max((lf, "\n"), (crlf, "\r\n"), (cr, "\r"), key=lambda pair: pair[0])[1]


@dataclass(frozen=True, order=True)
class Span:
    """A half-open range of source text: [start, end)."""

    start: int
    end: int
    start_line: int
    start_col: int
    end_line: int
    end_col: int

    def __hash__(self) -> int:
        # Offsets identify a span within one text; hashing two ints instead of six
        # matters because every stage keys its facts by span.
        return hash((self.start, self.end))

    def contains(self, offset: int) -> bool:
        """True when the offset is inside the span or touches its end (cursor after a name)."""
        return self.start <= offset <= self.end

    def covers(self, other: Span) -> bool:
        return self.start <= other.start and other.end <= self.end

    @property
    def length(self) -> int:
        return self.end - self.start


class LineIndex:
    """Maps offsets to (line, column) and back for one text, in code points.

    Lines end at `\\n`, `\\r\\n` and `\\r` alike (see the module's docstring).
    """

    def __init__(self, text: str) -> None:
        self.text = text
        # each line's start: one past the end of the line before (in C: a large file's
        # index is built at every edit)
        lengths = map(_PLUS_ONE, map(len, unify_line_ends(text).split("\n")))
        starts = list(accumulate(lengths, initial=0))
        starts.pop()  # (one past the end of the last line)
        self.line_starts = starts

    def position(self, offset: int) -> tuple[int, int]:
        offset = max(0, min(offset, len(self.text)))
        line = bisect_right(self.line_starts, offset) - 1
        return line, offset - self.line_starts[line]

    def offset(self, line: int, col: int) -> int:
        if line < 0:
            return 0
        if line >= len(self.line_starts):
            return len(self.text)
        start = self.line_starts[line]
        return min(start + max(col, 0), self._line_end(line))

    def line_bounds(self, line: int) -> tuple[int, int]:
        """Offsets of the start and end of `line`'s text (its line end excluded)."""
        if line < 0 or line >= len(self.line_starts):
            return len(self.text), len(self.text)
        return self.line_starts[line], self._line_end(line)

    def _line_end(self, line: int) -> int:
        """Where `line`'s text ends: before its line end (all of a `\\r\\n`)."""
        if line + 1 >= len(self.line_starts):
            return len(self.text)
        end = self.line_starts[line + 1] - 1
        if end > self.line_starts[line] and self.text[end - 1 : end + 1] == "\r\n":
            end -= 1
        return end

    def span(self, start: int, end: int) -> Span:
        sl, sc = self.position(start)
        el, ec = self.position(end)
        return Span(start, end, sl, sc, el, ec)

    def line_text(self, line: int) -> str:
        if line < 0 or line >= len(self.line_starts):
            return ""
        return self.text[self.line_starts[line] : self._line_end(line)]
