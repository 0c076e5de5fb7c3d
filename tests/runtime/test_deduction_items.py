"""Items written as text (`runtime/deduction_items.py`): any text reads to an item or is
refused with a `QvrRuntimeError`, and what an item shows reads back to it."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qvr_core.runtime.deduction import show
from qvr_core.runtime.deduction_items import item
from qvr_core.runtime.errors import QvrRuntimeError

_NAMES = st.sampled_from(["a", "NP", "span", "Every", "x_1"])


def _terms() -> st.SearchStrategy[Any]:
    leaves = st.one_of(_NAMES.map(lambda n: ("atom", n)), st.integers(0, 99))
    return st.recursive(
        leaves,
        lambda inner: st.one_of(
            st.tuples(_NAMES, st.lists(inner, min_size=1, max_size=3)).map(lambda t: (t[0], *t[1])),
            st.tuples(st.sampled_from(["/", "\\"]), inner, inner),
        ),
        max_leaves=12,
    )


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="ab(),/\\* 0123_NP\t;", max_size=40))
def test_any_text_reads_or_is_refused(text: str) -> None:
    try:
        item(text)
    except QvrRuntimeError as e:
        assert str(e).startswith("item ")


@settings(max_examples=300, deadline=None)
@given(_terms())
def test_what_an_item_shows_reads_back_to_it(term: Any) -> None:
    """`show` writes a slash as `/(X,Y)`; read back through its written form `X / Y`."""
    assert item(_written(term)) == term


def _written(term: Any) -> str:
    if isinstance(term, int):
        return str(term)
    if term[0] == "atom":
        return str(term[1])
    if term[0] in ("/", "\\"):
        return f"({_written(term[1])} {term[0]} {_written(term[2])})"
    return f"{term[0]}({', '.join(_written(a) for a in term[1:])})"


def test_show_names_a_read_item() -> None:
    assert show(item("span(0, 2, S / NP)")) == "span(0,2,/(S,NP))"


@pytest.mark.parametrize("text", ["a b", "f()", ")", "f(a,)"])
def test_refusals(text: str) -> None:
    with pytest.raises(QvrRuntimeError):
        item(text)
