"""What an incremental check kept from the check before it, and which older facts still hold.

After an edit the tables of the new text (types at positions, symbols) take
longer to build than its diagnostics (`PendingModule`), so a request about a
position right after an edit would wait for them. Most requests are about
declarations the edit did not touch, whose facts the check kept. `Kept`
records, for one check (incremental.py): the stretch of text the edit
changed, the declarations whose frames were reused (by where they are now),
and the top-level names that may mean something else now. `Trail` strings
these records from an earlier module, whose tables are built, to a later one,
and says where a stretch of the earlier text is in the later one, if the edits
since left it whole.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace

from qvr_core.syntax.parser import common_suffix
from qvr_core.text.span import Span

#: Most checks a `Kept` remembers back (each link is a few sets of ints).
MOST_LINKS = 6
#: How far `stretch` looks back for a line start to begin the changed stretch at.
MOST_SLIDE = 1000


@dataclass(frozen=True)
class Stretch:
    """Where two texts differ: [start, old_end) of the one became [start, new_end) of the
    other; text after `after` in the first (and as much after `new_end` as after
    `old_end`) is on the same lines and columns of the second, moved by `lines` lines."""

    start: int
    old_end: int
    new_end: int
    after: int
    lines: int


def stretch(old: str, new: str, prefix: int) -> Stretch:
    """The stretch an edit changed, given the length of the start both texts share.

    Where the edit can be seen at several places (a line inserted above one that
    begins the same way: `let a...\nlet b` for `let b`), it is taken to begin at
    a line start when one is in reach, so that the lines after it only move.
    """
    suffix = common_suffix(old, new, min(len(old), len(new)) - prefix)
    start, old_end, new_end = prefix, len(old) - suffix, len(new) - suffix
    s, oe, ne = start, old_end, new_end
    while s > 0 and start - s < MOST_SLIDE and old[s - 1] != "\n":
        if (oe == s and ne == s) or old[s - 1] != (old[oe - 1] if oe > s else old[s - 1]):
            break
        if new[s - 1] != (new[ne - 1] if ne > s else new[s - 1]):
            break
        s, oe, ne = s - 1, oe - 1, ne - 1
    if s == 0 or old[s - 1] == "\n":  # a line start in reach: the stretch begins there
        start, old_end, new_end = s, oe, ne
    at_line_start = (old_end == 0 or old[old_end - 1] == "\n") and (
        new_end == 0 or new[new_end - 1] == "\n"
    )
    after = old_end - 1 if at_line_start else old.find("\n", old_end)
    lines = new.count("\n", start, new_end) - old.count("\n", start, old_end)
    return Stretch(start, old_end, new_end, len(old) if after < 0 else after, lines)


@dataclass(frozen=True)
class Kept:
    """One check, as the next ones relate to it: the edit since the check before (None
    when this check reused nothing of it), what it reused and what it changed."""

    check: int  # this check's number, unique in the process
    previous: int | None  # the number of the check before, when this one reused its work
    earlier: Kept | None = None  # that check's own record (a chain of at most MOST_LINKS)
    stretch: Stretch = Stretch(0, 0, 0, 0, 0)
    changed: frozenset[str] = frozenset()  # names whose meaning may differ, or declared twice
    frames: frozenset[int] = frozenset()  # starts of the declarations whose frames were reused
    first: int = -1  # where the first declaration starts (-1: there is none)

    def links(self) -> Iterator[Kept]:
        """This record and the earlier ones it remembers, newest first."""
        link: Kept | None = self
        while link is not None:
            yield link
            link = link.earlier

    def bounded(self, built: int | None = None) -> Kept:
        """This record with at most MOST_LINKS links, reaching back to the check numbered
        `built` (the newest whose tables were built, which answers for the later ones)
        when it can: older links go, and the oldest two of the others become one, from
        the oldest one's text before to the newer one's text."""
        chain = []
        for link in self.links():
            chain.append(link)
            if built is not None and link.previous == built:
                break
        if len(chain) <= MOST_LINKS and chain[-1].earlier is None:
            return self
        while len(chain) > MOST_LINKS:
            oldest = chain.pop()
            if oldest.previous is not None:
                chain[-1] = _merged(oldest, chain[-1])
        kept: Kept | None = None
        for link in reversed(chain):
            kept = replace(link, earlier=kept)
        assert kept is not None
        return kept


def _merged(older: Kept, newer: Kept) -> Kept:
    """Two successive checks as one: the edit from the older one's text before to the
    newer one's text (what changed in either), what both reused, what either changed."""
    a, b = older.stretch, newer.stretch
    d1, d2 = a.new_end - a.old_end, b.new_end - b.old_end
    if a.new_end >= b.old_end:  # the older edit ends later: its end bounds the change
        old_end, new_end = a.old_end, a.new_end + d2
    else:
        old_end, new_end = b.old_end - d1, b.new_end
    stretch = Stretch(
        min(a.start, b.start), old_end, new_end, max(a.after, b.after - d1), a.lines + b.lines
    )
    # those whose place in the text between (before the newer edit, or moved by it from
    # after it) holds one the older check reused (sets in C: thousands at every edit)
    before = filter(b.start.__gt__, newer.frames & older.frames)
    after = newer.frames & set(map(d2.__add__, older.frames))
    moved = filter(max(b.start - 1, b.after + d2).__lt__, after)
    frames = [*before, *moved]
    return Kept(
        newer.check,
        older.previous,
        older.earlier,
        stretch,
        older.changed | newer.changed,
        frozenset(frames),
        newer.first,
    )


class Trail:
    """The checks from one module to a later one of the same document, oldest first."""

    def __init__(self, steps: list[Kept]) -> None:
        self.steps = steps

    @classmethod
    def between(cls, earlier: Kept | None, later: Kept | None) -> Trail | None:
        """The trail from `earlier` to `later`, or None when the later one's records do
        not reach back to it (a check that reused nothing breaks the chain)."""
        if earlier is None or later is None:
            return None
        steps: list[Kept] = []
        for link in later.links():
            if link.check == earlier.check:
                return cls(steps[::-1])
            if link.previous is None:
                return None
            steps.append(link)
            if link.previous == earlier.check:
                return cls(steps[::-1])
        return None

    def back(self, offset: int) -> int | None:
        """Where an offset of the later text was in the earlier one (None: in a changed stretch)."""
        for step in reversed(self.steps):
            edit = step.stretch
            if offset <= edit.start:
                continue
            if offset < edit.new_end:
                return None
            offset -= edit.new_end - edit.old_end
        return offset

    def forward(self, span: Span) -> Span | None:
        """Where a span of the earlier text is in the later one, or None when an edit
        touched it, or touched the line it starts on."""
        for step in self.steps:
            found = _moved(step, span)
            if found is None:
                return None
            span = found
        return span

    def whole(self, start: int, end: int) -> bool:
        """Whether the stretch [start, end) of the earlier text is in the later one unchanged
        (and on lines of its own where it moved)."""
        return self.forward(Span(start, end, 0, 0, 0, 0)) is not None

    def kept(self, decl: Span) -> bool:
        """Whether every check since reused the frame of the declaration at `decl` (in the
        earlier text): its facts are the earlier ones, moved."""
        for step in self.steps:
            found = _moved(step, decl)
            if found is None or found.start not in step.frames:
                return False
            decl = found
        return True

    def stable(self, name: str) -> bool:
        """Whether no check since changed what the top-level `name` is or means."""
        return not any(name in step.changed for step in self.steps)

    def first(self, start: int) -> bool:
        """Whether the declaration at `start` (in the later text) is the later text's first."""
        return bool(self.steps) and self.steps[-1].first == start


def _moved(step: Kept, span: Span) -> Span | None:
    """Where a span of the text before `step` is after it (None: the edit touched it)."""
    edit = step.stretch
    if span.end <= edit.start:
        return span
    if span.start <= edit.after:
        return None
    chars = edit.new_end - edit.old_end
    return Span(
        span.start + chars,
        span.end + chars,
        span.start_line + edit.lines,
        span.start_col,
        span.end_line + edit.lines,
        span.end_col,
    )
