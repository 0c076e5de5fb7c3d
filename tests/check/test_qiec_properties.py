"""Edited QIEC computations never crash the checker: whatever a user types into a
family, a handler or a computation (a deleted bracket, a swapped line, a stray token),
the checker reports, it does not raise, and every diagnostic lies in the text."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.check.test_check_properties import check_source, edited
from tests.conformance.test_qiec_computations import LISTENER, REPLAYED, ROUNDING


@st.composite
def mutated(draw: st.DrawFn) -> str:
    text = draw(st.sampled_from([ROUNDING, LISTENER, REPLAYED]))
    for _ in range(draw(st.integers(1, 4))):
        text = edited(draw, text)
    return text


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_edited_computations_never_raise(text: str) -> None:
    check_source(text)
