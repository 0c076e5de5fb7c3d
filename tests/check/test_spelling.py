"""close_matches gives exactly difflib.get_close_matches's answer (it is only faster)."""

from __future__ import annotations

import difflib

from hypothesis import given, settings
from hypothesis import strategies as st

from qvr_core.check.spelling import close_matches

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
