"""Source positions shared by every stage.

Lines and columns are 0-based and count Unicode code points, which is what
Python string indexing gives; the language server converts columns to the
client's position encoding (UTF-16 by default) at its edge, nowhere else.
"""

from __future__ import annotations

from dataclasses import dataclass


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
    """Maps offsets to (line, column) and back for one text, in code points."""

    def __init__(self, text: str) -> None:
        self.text = text
        starts = [0]
        find = text.find
        i = find("\n")
        while i >= 0:
            starts.append(i + 1)
            i = find("\n", i + 1)
        self.line_starts = starts

    def position(self, offset: int) -> tuple[int, int]:
        from bisect import bisect_right

        offset = max(0, min(offset, len(self.text)))
        line = bisect_right(self.line_starts, offset) - 1
        return line, offset - self.line_starts[line]

    def offset(self, line: int, col: int) -> int:
        if line < 0:
            return 0
        if line >= len(self.line_starts):
            return len(self.text)
        start = self.line_starts[line]
        end = self.line_starts[line + 1] - 1 if line + 1 < len(self.line_starts) else len(self.text)
        return min(start + max(col, 0), end)

    def span(self, start: int, end: int) -> Span:
        sl, sc = self.position(start)
        el, ec = self.position(end)
        return Span(start, end, sl, sc, el, ec)

    def line_text(self, line: int) -> str:
        if line < 0 or line >= len(self.line_starts):
            return ""
        start = self.line_starts[line]
        end = self.line_starts[line + 1] - 1 if line + 1 < len(self.line_starts) else len(self.text)
        return self.text[start:end]
