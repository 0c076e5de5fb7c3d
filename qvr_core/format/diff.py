"""Formatting as text edits: the changed lines only, so an editor keeps cursor and folds.

A whole-document replacement would be correct too, but editors move the
cursor to its end and lose folds. Lines are first aligned ignoring
whitespace (what formatting mostly changes), then each aligned pair that
differs becomes one edit of the part of the line that changed; what differs
beyond whitespace (a blank line added, brackets dropped) becomes a block
edit. Range formatting keeps the edits that touch the requested lines; each
edit is self-contained, so any subset applies.

The alignment is a patience diff (`align`), linear in practice and bounded
in the worst case: formatting a pasted file of thousands of lines must not
take longer than formatting it did.
"""

from __future__ import annotations

import difflib
from bisect import bisect_left
from collections import Counter
from collections.abc import Callable, Sequence
from itertools import pairwise

from qvr_core.format.formatter import Cancelled, format_text
from qvr_core.text.diagnostics import TextEdit
from qvr_core.text.span import LineIndex

#: A gap without unique lines at most this large (lines x lines) is aligned by difflib.
_SMALL_GAP = 4096
#: Work (lines visited) allowed per line of input before the rest becomes block edits.
_WORK_PER_LINE = 64

Hunk = tuple[int, int, int, int]  # old lines [i1, i2) become new lines [j1, j2)


def format_edits(
    text: str,
    lines: tuple[int, int] | None = None,
    cancelled: Callable[[], bool] | None = None,
) -> list[TextEdit]:
    """Edits that turn `text` into its canonical layout (none when it does not parse).

    With `lines` (first, last; 0-based, inclusive), only the edits that touch them.
    `cancelled` is polled between stages; when it turns true, `Cancelled` is raised.
    """
    result = format_text(text, cancelled)
    if not result.ok or result.text == text:
        return []
    if cancelled is not None and cancelled():
        raise Cancelled
    return diff_edits(text, result.text, lines)


def diff_edits(old: str, new: str, lines: tuple[int, int] | None = None) -> list[TextEdit]:
    """Edits from `old` to `new` by lines, optionally only those touching `lines`."""
    a = old.splitlines(keepends=True)
    b = new.splitlines(keepends=True)
    starts = [0]
    for line in a:
        starts.append(starts[-1] + len(line))
    index = LineIndex(old)
    keys_a = ["".join(line.split()) for line in a]
    keys_b = ["".join(line.split()) for line in b]
    edits = []
    for i1, i2, j1, j2 in align(keys_a, keys_b):
        if lines is not None and not _touches(i1, i2, lines):
            continue
        if i2 - i1 == 1 and j2 - j1 == 1:
            if a[i1] != b[j1]:
                start, end, text = _inside(a[i1], b[j1])
                offset = starts[i1]
                edits.append(TextEdit(index.span(offset + start, offset + end), text))
        elif a[i1:i2] != b[j1:j2]:
            edits.append(TextEdit(index.span(starts[i1], starts[i2]), "".join(b[j1:j2])))
    return edits


def _inside(old: str, new: str) -> tuple[int, int, str]:
    """The changed part of one (non-empty) line: (start, end) in `old` and its replacement.

    Never an empty range: a pure insertion takes one character of the line
    with it, so it cannot share its offset with an insertion of new lines
    before it (whose order editors would have to guess).
    """
    limit = min(len(old), len(new))
    prefix = 0
    while prefix < limit and old[prefix] == new[prefix]:
        prefix += 1
    suffix = 0
    while suffix < limit - prefix and old[-1 - suffix] == new[-1 - suffix]:
        suffix += 1
    if prefix + suffix == len(old):  # nothing of `old` replaced
        if suffix:
            suffix -= 1
        else:
            prefix -= 1
    return prefix, len(old) - suffix, new[prefix : len(new) - suffix]


def align(a: Sequence[str], b: Sequence[str]) -> list[Hunk]:
    """Hunks covering both sequences in order: each a matched pair of one line each
    (equal keys) or a block of unmatched lines.

    Patience diff: lines unique on both sides of a stretch anchor it (the
    longest increasing run of them), and the stretches between anchors are
    aligned the same way, after their common ends are matched. A stretch
    with no unique lines is aligned by difflib when small and is one block
    otherwise; after a work budget linear in the input, remaining stretches
    are blocks, so the worst case stays linear (coarser edits, still correct).
    """
    matches: list[tuple[int, int]] = []
    budget = _WORK_PER_LINE * (len(a) + len(b)) + 1024
    stack = [(0, len(a), 0, len(b))]
    while stack:
        lo_a, hi_a, lo_b, hi_b = stack.pop()
        while lo_a < hi_a and lo_b < hi_b and a[lo_a] == b[lo_b]:
            matches.append((lo_a, lo_b))
            lo_a += 1
            lo_b += 1
        while lo_a < hi_a and lo_b < hi_b and a[hi_a - 1] == b[hi_b - 1]:
            hi_a -= 1
            hi_b -= 1
            matches.append((hi_a, hi_b))
        if lo_a == hi_a or lo_b == hi_b:
            continue
        size = (hi_a - lo_a) + (hi_b - lo_b)
        budget -= size
        if budget < 0:
            continue  # one block
        anchors = _anchors(a, b, lo_a, hi_a, lo_b, hi_b)
        if anchors:
            matches.extend(anchors)
            bounds = [(lo_a - 1, lo_b - 1), *anchors, (hi_a, hi_b)]
            for (pa, pb), (na, nb) in pairwise(bounds):
                if pa + 1 < na or pb + 1 < nb:
                    stack.append((pa + 1, na, pb + 1, nb))
        elif (hi_a - lo_a) * (hi_b - lo_b) <= _SMALL_GAP:
            matcher = difflib.SequenceMatcher(None, a[lo_a:hi_a], b[lo_b:hi_b], autojunk=False)
            for i, j, n in matcher.get_matching_blocks():
                matches.extend((lo_a + i + k, lo_b + j + k) for k in range(n))
    matches.sort()
    hunks: list[Hunk] = []
    pa = pb = 0
    for ia, ib in matches:
        if pa < ia or pb < ib:
            hunks.append((pa, ia, pb, ib))
        hunks.append((ia, ia + 1, ib, ib + 1))
        pa, pb = ia + 1, ib + 1
    if pa < len(a) or pb < len(b):
        hunks.append((pa, len(a), pb, len(b)))
    return hunks


def _anchors(
    a: Sequence[str], b: Sequence[str], lo_a: int, hi_a: int, lo_b: int, hi_b: int
) -> list[tuple[int, int]]:
    """Pairs of lines unique on both sides of the stretch, the longest run in order in both."""
    count_a = Counter(a[lo_a:hi_a])
    count_b = Counter(b[lo_b:hi_b])
    where_b = {b[j]: j for j in range(lo_b, hi_b) if count_b[b[j]] == 1}
    pairs = [
        (i, where_b[a[i]]) for i in range(lo_a, hi_a) if count_a[a[i]] == 1 and a[i] in where_b
    ]
    return _longest_increasing(pairs)


def _longest_increasing(pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The longest subsequence of `pairs` (sorted by first) whose second items increase."""
    tails: list[int] = []  # smallest second item ending a run of each length
    ends: list[int] = []  # index in pairs of that run's end
    previous = [-1] * len(pairs)
    for k, (_, j) in enumerate(pairs):
        n = bisect_left(tails, j)
        if n == len(tails):
            tails.append(j)
            ends.append(k)
        else:
            tails[n] = j
            ends[n] = k
        previous[k] = ends[n - 1] if n else -1
    run = []
    k = ends[-1] if ends else -1
    while k >= 0:
        run.append(pairs[k])
        k = previous[k]
    run.reverse()
    return run


def _touches(i1: int, i2: int, lines: tuple[int, int]) -> bool:
    """Whether old lines [i1, i2) (or the insertion point i1 when empty) meet `lines`."""
    first, last = lines
    if i1 == i2:
        return first <= i1 <= last
    return i1 <= last and first < i2
