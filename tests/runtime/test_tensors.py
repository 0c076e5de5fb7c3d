"""The packed tensor layout: split/join, features, validation, example inputs."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import distributions as D
from torch.distributions import constraints as C
from torch.distributions.transforms import Transform

from qvr_core.runtime.distributions import CholeskyFlatPositiveDefinite
from qvr_core.runtime.errors import QvrRuntimeError
from qvr_core.runtime.tensors import (
    broadcast_shape,
    describe,
    example,
    features,
    join,
    product_of,
    split,
    unconstrained_shape,
    validate,
)
from tests.runtime.builders import fin, prod, real, seq

TOKEN = fin("Token", 10)
SRC, TGT = fin("Source", 5), fin("Target", 7)
EMB = real("Embedded", 3)


def test_two_finsets_pack_as_int64_columns() -> None:
    pair = prod(SRC, TGT)
    a, b = torch.tensor([1, 2]), torch.tensor([3, 4])
    packed = join([a, b], [SRC, TGT])
    assert packed.dtype == torch.int64 and packed.shape == (2, 2)
    back = split(packed, [SRC, TGT], pair)
    assert torch.equal(back[0], a) and torch.equal(back[1], b)


def test_mixed_product_stores_the_index_as_an_exact_float_and_splits_back_to_int64() -> None:
    mixed = prod(TOKEN, EMB)
    idx, vec = torch.tensor([9, 0]), torch.randn(2, 3)
    packed = join([idx, vec], [TOKEN, EMB])
    assert packed.shape == (2, 4) and packed.is_floating_point()
    i2, v2 = split(packed, [TOKEN, EMB], mixed)
    assert i2.dtype == torch.int64 and torch.equal(i2, idx)
    assert torch.equal(v2, vec)


def test_sequences_split_on_the_last_axis() -> None:
    mixed = seq(prod(TOKEN, EMB))
    idx, vec = torch.randint(0, 10, (2, 5)), torch.randn(2, 5, 3)
    packed = join([idx, vec], [seq(TOKEN), seq(EMB)])
    assert packed.shape == (2, 5, 4)
    i2, v2 = split(packed, [seq(TOKEN), seq(EMB)], mixed)
    assert torch.equal(i2, idx) and torch.equal(v2, vec)


def test_features_one_hot_the_finset_factors() -> None:
    mixed = prod(TOKEN, EMB)
    packed = join([torch.tensor([2]), torch.ones(1, 3)], [TOKEN, EMB])
    f = features(packed, mixed)
    assert f.shape == (1, 13)
    assert f[0, 2] == 1 and f[0, :10].sum() == 1 and torch.equal(f[0, 10:], torch.ones(3))


def test_product_of_is_a_sequence_when_a_part_is() -> None:
    t = product_of([seq(TOKEN), seq(EMB)])
    assert t.label == "[Token * Embedded]"


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        (torch.tensor([1, 2]), "sequence needs 2 axes"),
        (torch.tensor([[1, 10]]), "index 10 is out of range for Token"),
        (torch.tensor([[-1, 0]]), "index -1 is out of range"),
        (torch.zeros(2, 3), "int64"),
        ([1, 2], "pass a torch tensor"),
    ],
)
def test_validate_names_what_is_wrong(value: object, fragment: str) -> None:
    with pytest.raises(QvrRuntimeError) as err:
        validate(value, seq(TOKEN), "site 'h'", site="h")
    assert fragment in str(err.value)
    assert "site 'h'" in str(err.value) and "(B, L) int64" in str(err.value)
    assert err.value.site == "h"


def test_validate_checks_columns_and_batch() -> None:
    with pytest.raises(QvrRuntimeError, match="3 columns"):
        validate(torch.zeros(4, 2), EMB, "x")
    with pytest.raises(QvrRuntimeError, match=r"batch \(3,\) does not match.*\(4,\)"):
        validate(torch.zeros(3, 3), EMB, "x", batch=(4,))
    assert validate(torch.zeros(5, 4, 3), EMB, "x", batch=(4,)).shape == (5, 4, 3)


def test_validate_casts_narrow_integers_to_int64() -> None:
    assert validate(torch.tensor([1, 2], dtype=torch.int32), TOKEN, "x").dtype == torch.int64


def test_describe_shows_the_layout() -> None:
    assert describe(seq(TOKEN)) == "(B, L) int64"
    assert describe(EMB, batch=(4,)) == "(4, 3) float32"
    assert describe(TOKEN) == "(B,) int64"


def test_example_values_are_valid() -> None:
    g = torch.Generator().manual_seed(0)
    for t in (
        seq(TOKEN),
        prod(SRC, TGT),
        prod(TOKEN, EMB),
        real("P", 2, "positive"),
        real("S", 4, "simplex"),
        real("U", 2, "unit"),
    ):
        x = example(t, 3, 6, g)
        validate(x, t, "example")
    assert example(seq(TOKEN), 4, 8).shape == (4, 8)
    s = example(real("S", 4, "simplex"), 3, 1)
    assert torch.allclose(s.sum(-1), torch.ones(3))


factor = st.one_of(
    st.integers(1, 300).map(lambda n: ("finset", n)),
    st.integers(1, 5).map(lambda n: ("real", n)),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(factor, min_size=1, max_size=4), st.booleans(), st.integers(0, 2**31 - 1))
def test_join_then_split_is_the_identity(
    specs: list[tuple[str, int]], sequence: bool, seed: int
) -> None:
    parts = [
        fin(f"F{i}", n) if kind == "finset" else real(f"R{i}", n)
        for i, (kind, n) in enumerate(specs)
    ]
    types = [seq(p) if sequence else p for p in parts]
    whole = product_of(types)
    g = torch.Generator().manual_seed(seed)
    values = [example(t, 3, 4, g) for t in types]
    packed = join(values, types)
    validate(packed, whole, "packed")
    for got, want in zip(split(packed, types, whole), values, strict=True):
        assert got.dtype == want.dtype and torch.equal(got, want)


shapes = st.lists(st.integers(min_value=1, max_value=4), max_size=4)


@settings(max_examples=200, deadline=None)
@given(st.lists(shapes, min_size=1, max_size=4))
def test_broadcast_shape_agrees_with_torch(shape_list: list[list[int]]) -> None:
    """Ours avoids torch's import of sympy; it must broadcast exactly as torch does."""
    try:
        expected: tuple[int, ...] | None = tuple(torch.broadcast_shapes(*shape_list))
    except RuntimeError:
        expected = None
    if expected is None:
        with pytest.raises(RuntimeError):
            broadcast_shape(*shape_list)
    else:
        assert broadcast_shape(*shape_list) == expected


@pytest.mark.parametrize(
    ("transform", "shape"),
    [
        (D.biject_to(C.real), (2, 3)),
        (D.biject_to(C.positive), (3,)),
        (D.biject_to(C.unit_interval), (2, 3)),
        (D.biject_to(C.interval(-1.0, 3.0)), (4,)),  # affine: torch's imports sympy
        (D.biject_to(C.greater_than(2.0)), (2, 2)),
        (D.biject_to(C.simplex), (2, 3)),
        (D.biject_to(C.corr_cholesky), (2, 3, 3)),
        (CholeskyFlatPositiveDefinite(3), (2, 9)),  # its inverse may refuse zeros
    ],
)
def test_unconstrained_shape_agrees_with_torchs_inverse_shape(
    transform: Transform, shape: tuple[int, ...]
) -> None:
    assert unconstrained_shape(transform, shape) == tuple(transform.inverse_shape(shape))
