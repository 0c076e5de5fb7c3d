"""The registry on its own (no torch): binding a call's arguments, constraints on literal
numbers (checked against torch's own constraints), event shapes and fits."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qvr_core.builtins import FAMILIES, bind
from qvr_core.builtins.constraints import KINDS, MEASURE_KINDS, Constraint
from qvr_core.builtins.families import codomain_words, family_for


def test_positional_arguments_bind_in_the_canonical_order() -> None:
    schema, bound = bind(FAMILIES["Normal"], [0.0, 10.0], {})  # type: ignore[misc]
    assert [p.name for p in schema] == ["loc", "scale"]
    assert bound == {"loc": 0.0, "scale": 10.0}


def test_keywords_and_positions_mix_and_pick_an_alternative_schema() -> None:
    _, bound = bind(FAMILIES["StudentT"], [3.0], {"scale": 2.0, "loc": 1.0})  # type: ignore[misc]
    assert bound == {"df": 3.0, "loc": 1.0, "scale": 2.0}
    schema, bound = bind(FAMILIES["Categorical"], [], {"logits": "v"})  # type: ignore[misc]
    assert [p.name for p in schema] == ["logits"] and bound == {"logits": "v"}


@pytest.mark.parametrize(
    ("family", "positional", "keywords", "message"),
    [
        ("Normal", [0.0], {}, "Normal is missing scale"),
        ("Normal", [0.0, 1.0, 2.0], {}, "Normal takes 2 arguments, not 3"),
        ("Normal", [0.0], {"loc": 1.0}, "Normal: 'loc' is given twice"),
        ("HalfCauchy", [], {"sigma": 1.0}, "'sigma' is not a parameter of HalfCauchy(scale)"),
        (
            "Deterministic",
            [1.0],
            {},
            "Deterministic takes no arguments: write it without parentheses, `Deterministic`",
        ),
    ],
)
def test_a_bad_call_gets_a_message(
    family: str, positional: list, keywords: dict, message: str
) -> None:
    assert bind(FAMILIES[family], positional, keywords) == message


def test_a_literal_outside_its_constraint_is_caught() -> None:
    scale = FAMILIES["HalfCauchy"].param("scale")
    assert scale is not None and scale.constraint.admits(-1.0) is False
    assert scale.constraint.admits(5.0) is True
    assert FAMILIES["Binomial"].param("total_count").constraint.admits(2.5) is False  # type: ignore[union-attr]
    uniform = FAMILIES["Uniform"].support
    assert uniform.admits(0.5, {"low": 0.0, "high": 1.0}) is True
    assert uniform.admits(0.5) is None  # the bounds are not known


_SCALAR_KINDS = [
    k
    for k in KINDS
    if Constraint(k).rank == 0
    and k not in ("index", "ordinal", "interval", "integer_interval", "less_than_eq")
    and not k.startswith("greater")
    and k not in MEASURE_KINDS  # a distribution or a bijection: no number's set
]
_NUMBERS = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.integers(-3, 12).map(float),
    st.sampled_from([0.0, 1.0, -0.0, 0.5]),
)


@settings(deadline=None)
@given(kind=st.sampled_from(_SCALAR_KINDS), value=_NUMBERS)
def test_admits_agrees_with_torch(kind: str, value: float) -> None:
    import torch

    from qvr_core.runtime.distributions import torch_constraint

    ours = Constraint(kind).admits(value)
    theirs = bool(
        torch_constraint(Constraint(kind)).check(torch.tensor(value, dtype=torch.float64))
    )
    assert ours == theirs, (kind, value)


def test_an_upper_bound_admits_what_torch_does_but_the_bound() -> None:
    """`less_than_eq` (a `Restrict` with only `high`) holds its bound; torch's `less_than`
    does not, which matters for no continuous value (the bound has probability 0)."""
    import torch

    from qvr_core.runtime.distributions import torch_constraint

    c = Constraint("less_than_eq", None, 2.5)
    for value in (-1e9, 0.0, 2.4, 2.6, 1e9):
        theirs = bool(torch_constraint(c).check(torch.tensor(value, dtype=torch.float64)))
        assert c.admits(value) is theirs, value
    assert c.admits(2.5) is True and c.describe() == "a number <= 2.5"


def test_event_shapes_follow_the_arguments_or_the_object() -> None:
    assert FAMILIES["Normal"].event_shape({"loc": (), "scale": ()}) == ()
    assert FAMILIES["Dirichlet"].event_shape({"concentration": (5,)}) == (5,)
    assert FAMILIES["Dirichlet"].event_shape({"concentration": ()}, space=4) == (4,)
    assert FAMILIES["LogisticNormal"].event_shape({"loc": (3,), "scale": ()}) == (4,)
    assert FAMILIES["MatrixNormal"].event_shape(
        {"loc": (), "row_covariance": (2, 2), "col_covariance": (3, 3)}
    ) == (2, 3)
    assert FAMILIES["LKJCholesky"].event_shape({"concentration": ()}, space=3) == (3, 3)
    with pytest.raises(ValueError, match="needs the object"):
        FAMILIES["LKJCholesky"].event_shape({"concentration": ()})


def test_every_family_is_complete() -> None:
    for name, f in FAMILIES.items():
        assert f.doc and f.signature().startswith(name)
        assert math.isfinite(len(f.params))
        assert all(p.name in {q.name for s in f.schemas for q in s} for p in f.params)
        assert set(f.example) <= {p.name for s in f.schemas for p in s}, name
        if f.schemas:
            assert not isinstance(bind(f, [], dict(f.example)), str), name


def test_messages_and_suggestions() -> None:
    assert codomain_words(FAMILIES["Normal"]) == "a Real codomain"
    assert codomain_words(FAMILIES["LogNormal"]) == "a Positive or Real codomain"
    assert codomain_words(FAMILIES["Bernoulli"]) == "a FinSet 2 codomain"
    assert codomain_words(FAMILIES["Poisson"]) == "an object qvr does not have yet"

    class F:
        def __init__(self, kind: str, size: int) -> None:
            self.kind, self.size, self.width = kind, size, 1 if kind == "finset" else size

    assert family_for([F("finset", 2), F("finset", 2)]) == "Bernoulli"
    assert family_for([F("finset", 2), F("finset", 3)]) == "Categorical"
    assert family_for([F("real", 2), F("positive", 3)]) == "Deterministic"
    assert family_for([F("real", 2), F("finset", 3)]) is None
