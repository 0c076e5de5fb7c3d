"""Close spellings: `difflib.get_close_matches`, with the same answers, faster on many names.

A did-you-mean compares the misspelt name with every top-level name; in a
file of thousands of declarations difflib's pass took longer than the rest
of an incremental re-check. The answers stay difflib's (the property test
compares them): the same three filters and scores, computed in another
order. The cheap upper bounds come first for every candidate: difflib's
`real_quick_ratio` (the lengths), then one of our own (how many of the
candidate's characters occur in the word at all, a C `str.translate`: most
names fail it), then `quick_ratio` (here from `str.count`); the exact ratio
is then computed from the highest bound down, stopping once no remaining
bound can reach the n-th best ratio found.
"""

from __future__ import annotations

import heapq
from collections import Counter


def close_matches(word: str, candidates: list[str], n: int = 3, cutoff: float = 0.6) -> list[str]:
    """What `difflib.get_close_matches(word, candidates, n, cutoff)` returns."""
    if not n > 0:
        raise ValueError(f"n must be > 0: {n!r}")
    if not 0.0 <= cutoff <= 1.0:
        raise ValueError(f"cutoff must be in [0.0, 1.0]: {cutoff!r}")
    counts = Counter(word)
    chars, limits = list(counts), list(counts.values())
    others = dict.fromkeys(map(ord, chars))  # deletes the word's characters
    lw = len(word)
    bounded: list[tuple[float, str]] = []
    for x in candidates:
        length = len(x) + lw
        if not length:  # two empty strings are equal (difflib's ratio is 1.0)
            bounded.append((1.0, x))
            continue
        if 2.0 * min(len(x), lw) / length < cutoff:
            continue  # real_quick_ratio
        if 2.0 * (len(x) - len(x.translate(others))) / length < cutoff:
            continue  # at least quick_ratio: each character counted as often as x has it
        quick = 2.0 * sum(map(min, map(x.count, chars), limits)) / length
        if quick >= cutoff:
            bounded.append((quick, x))
    bounded.sort(key=lambda item: item[0], reverse=True)
    from difflib import SequenceMatcher  # (here: the language server starts without it)

    matcher = SequenceMatcher()
    matcher.set_seq2(word)
    found: list[tuple[float, str]] = []  # a min-heap of the n best (ratio, name) so far
    for quick, x in bounded:
        if len(found) == n and quick < found[0][0]:
            break  # no candidate left can reach the n-th best ratio
        matcher.set_seq1(x)
        ratio = matcher.ratio()
        if ratio >= cutoff:
            if len(found) < n:
                heapq.heappush(found, (ratio, x))
            else:
                heapq.heappushpop(found, (ratio, x))
    return [x for _, x in sorted(found, reverse=True)]


def one_edit_apart(a: str, b: str) -> bool:
    """Whether `a` becomes `b` by one insertion, deletion, substitution or swap of two
    neighbours (Damerau's one edit), with `aa`/`a` in but `x`/`z` and `y1`/`y2` out.

    The test for a data name that may be a misspelt value (QVR412): far stricter than
    the did-you-mean of an undefined name, since a data name is no error and real
    programs read data named beside their values (`pmualpha` for the prior of `alpha`,
    `sigma` beside `sigma_y`). One-letter names and names that differ in one digit
    (`y1`, `y2`: numbered data) are never one edit apart here."""
    if a == b or max(len(a), len(b)) < 2 or abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        diffs = [i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y]
        if len(diffs) == 1:
            i = diffs[0]
            return not (a[i].isdigit() and b[i].isdigit())
        return (
            len(diffs) == 2
            and diffs[1] == diffs[0] + 1
            and a[diffs[0]] == b[diffs[1]]
            and (a[diffs[1]] == b[diffs[0]])
        )
    short, long = (a, b) if len(a) < len(b) else (b, a)
    i = next((k for k, (x, y) in enumerate(zip(short, long, strict=False)) if x != y), len(short))
    return short[i:] == long[i + 1 :] and not long[i].isdigit()
