"""close_matches gives exactly difflib.get_close_matches's answer (it is only faster)."""

from __future__ import annotations

import difflib

from hypothesis import given, settings
from hypothesis import strategies as st

from qvr_core.check.spelling import close_matches, one_edit_apart

NAMES = st.text(alphabet="abceh_01", max_size=9)


@settings(max_examples=500, deadline=None)
@given(
    NAMES,
    st.lists(NAMES, max_size=40),
    st.integers(1, 5),
    st.sampled_from([0.0, 0.3, 0.6, 0.8, 1.0]),
)
def test_the_same_matches_as_difflib(word: str, names: list[str], n: int, cutoff: float) -> None:
    assert close_matches(word, names, n, cutoff) == difflib.get_close_matches(
        word, names, n, cutoff
    )


def test_many_similar_names() -> None:
    names = [f"{kind}_{i}" for i in range(455) for kind in ("embed", "cell", "head", "lm")]
    for word in ("head_200X", "hed_20", "cel_1", "zzz", ""):
        assert close_matches(word, names) == difflib.get_close_matches(word, names)


def _edits(a: str, b: str) -> int:
    """Damerau's distance with adjacent swaps (optimal string alignment), by the table."""
    d = [[i + j if i * j == 0 else 0 for j in range(len(b) + 1)] for i in range(len(a) + 1)]
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            cost = a[i - 1] != b[j - 1]
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
    return d[len(a)][len(b)]


def _digit_edit(a: str, b: str) -> bool:
    """The one edit puts or changes a digit where the other name has one or none."""
    short, long = sorted((a, b), key=len)
    if len(short) == len(long):
        return any(x != y and x.isdigit() and y.isdigit() for x, y in zip(a, b, strict=True))
    i = next((k for k, (x, y) in enumerate(zip(short, long, strict=False)) if x != y), len(short))
    return long[i].isdigit()


@settings(max_examples=800, deadline=None)
@given(NAMES, NAMES)
def test_one_edit_apart_is_one_damerau_edit_but_the_excluded_ones(a: str, b: str) -> None:
    expected = _edits(a, b) == 1 and max(len(a), len(b)) >= 2 and not _digit_edit(a, b)
    assert one_edit_apart(a, b) == expected


def test_one_edit_apart_on_the_names_it_is_for() -> None:
    assert one_edit_apart("aa", "a") and one_edit_apart("sigmaa", "sigma")
    assert one_edit_apart("sgima", "sigma")  # two neighbours swapped
    # data named beside a value, and numbered data, are not typos
    for data, value in [("pmualpha", "alpha"), ("sigma", "sigma_y"), ("mu0", "mu"), ("y1", "y2")]:
        assert not one_edit_apart(data, value)
    assert not one_edit_apart("x", "z")  # one-letter names: any two are one edit apart
