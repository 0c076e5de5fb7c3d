"""Property tests of the boundary validators: run arguments and data files.

Whatever arrives, the answer is a validated value within its bounds or one
error of the validator's own type whose message names the argument or key:
never another exception (an overflow, a dispatcher error, a pickle).
"""

from __future__ import annotations

import io
import math

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from qvr_core.check import check
from qvr_core.check.types import Seq
from qvr_core.host.datafile import DataFile
from qvr_core.inference.errors import InferenceError
from qvr_core.plan.run_arguments import (
    FIELDS,
    MAX_BATCH,
    MAX_SEED,
    MAX_SEQ_LEN,
    MAX_STEPS,
    RunArgumentError,
    validate_run_arguments,
)
from qvr_core.runs.data import conform, read_data

from .hostile import SMALL

json_values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(2**80), max_value=2**80),
        st.floats(allow_nan=True, allow_infinity=True),
        st.text(max_size=30),
    ),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=4,
)
keys = st.sampled_from([*FIELDS, "colour"])


def _within_bounds(args) -> None:
    assert 1 <= args.steps <= MAX_STEPS and 0 <= args.seed <= MAX_SEED
    assert 1 <= args.batch <= MAX_BATCH and 1 <= args.seq_len <= MAX_SEQ_LEN
    assert math.isfinite(args.lr) and args.lr > 0
    assert 0 < args.target_accept < 1
    assert args.method in ("svi", "nuts", "prior")
    assert args.memory_budget is None or args.memory_budget >= 1 << 20


@given(st.dictionaries(keys, json_values, max_size=5))
def test_any_json_arguments_are_validated_or_refused_by_name(given_args: dict) -> None:
    try:
        args = validate_run_arguments(given_args)
    except RunArgumentError as exc:
        assert exc.key in given_args and (exc.key in str(exc) or "unknown" in str(exc))
    else:
        _within_bounds(args)


@given(st.dictionaries(keys, st.text(max_size=40), max_size=5))
def test_any_command_line_strings_are_validated_or_refused_by_name(given_args: dict) -> None:
    try:
        args = validate_run_arguments(given_args, text=True)
    except RunArgumentError as exc:
        assert exc.key in given_args
        assert "\n" not in str(exc)
    else:
        _within_bounds(args)


@given(st.integers(min_value=-(2**100), max_value=2**100))
def test_seeds_are_bounded_to_what_torch_accepts(seed: int) -> None:
    try:
        args = validate_run_arguments({"seed": seed})
    except RunArgumentError:
        assert not 0 <= seed <= MAX_SEED
    else:
        torch.manual_seed(args.seed)  # never an overflow
        torch.manual_seed(args.seed + 1)  # the synthetic recipe's second seed


# ----------------------------------------------------------------- data files


@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=300), st.sampled_from([".pt", ".npz", ".csv", ".bin"]))
def test_any_bytes_read_as_data_give_tensors_or_one_error(content: bytes, suffix: str) -> None:
    try:
        arrays = read_data(DataFile(f"d{suffix}", content))
    except InferenceError as exc:
        assert "\n" not in str(exc).strip()
    else:
        for t in arrays.values():
            assert t.layout == torch.strided and not t.is_complex()


numeric = st.sampled_from(
    [np.float16, np.float32, np.float64, np.int8, np.int64, np.uint8, np.uint32, np.bool_]
)
other = st.sampled_from([np.complex64, "U3", "S2", "M8[s]"])


@settings(max_examples=60, deadline=None)
@given(
    st.one_of(
        hnp.arrays(numeric, hnp.array_shapes(max_dims=3, max_side=4)),
        hnp.arrays(other, hnp.array_shapes(max_dims=2, max_side=3)),
    )
)
def test_any_npz_array_is_read_real_and_finite_or_refused(array: np.ndarray) -> None:
    buffer = io.BytesIO()
    np.savez(buffer, x=array)
    try:
        arrays = read_data(DataFile("d.npz", buffer.getvalue()))
    except InferenceError as exc:
        assert "'x'" in str(exc)
    else:
        x = arrays["x"]
        assert array.dtype.kind in "biuf" and not x.is_complex()
        if x.is_floating_point():
            assert bool(torch.isfinite(x).all())


_module = check(SMALL)
_program = _module.programs["lm"]
_input = _program.type.dom
_sites = {s.name: s.value_type for s in _program.sites if s.kind == "observe"}


@settings(max_examples=80, deadline=None)
@given(
    hnp.arrays(
        np.float64,
        hnp.array_shapes(min_dims=0, max_dims=3, max_side=5),
        elements=st.integers(-3, 12).map(float) | st.just(0.5),
    ),
    st.sampled_from([np.int64, np.float32, np.float64, np.bool_]),
    hnp.arrays(np.float64, hnp.array_shapes(min_dims=0, max_dims=2, max_side=5)),
)
def test_conform_gives_the_program_its_types_or_names_the_key(x, dtype, nxt) -> None:
    x = x.astype(dtype)
    try:
        tx, obs = conform(torch.from_numpy(x), {"next": torch.from_numpy(nxt)}, _input, _sites, "d")
    except InferenceError as exc:
        assert "'x'" in str(exc) or "'next'" in str(exc)
    else:
        assert isinstance(_input, Seq) and tx.dim() == 2 and tx.dtype == torch.int64
        assert int(tx.min()) >= 0 and int(tx.max()) < 8
        assert obs["next"].dim() == 1 and obs["next"].dtype == torch.int64


@pytest.mark.filterwarnings("ignore:Sparse CSR tensor support")
def test_a_sparse_tensor_is_refused_by_name_not_by_the_dispatcher() -> None:
    buffer = io.BytesIO()
    torch.save({"x": torch.eye(3).to_sparse_csr(), "next": torch.zeros(3)}, buffer)
    with pytest.raises(InferenceError, match="'x' is a sparse_csr tensor"):
        read_data(DataFile("d.pt", buffer.getvalue()))


def test_a_pickled_object_is_not_loaded() -> None:
    class Evil:
        def __reduce__(self):
            return (print, ("pwned",))

    buffer = io.BytesIO()
    torch.save({"x": Evil()}, buffer)
    with pytest.raises(InferenceError, match=r"cannot read d\.pt"):
        read_data(DataFile("d.pt", buffer.getvalue()))


@pytest.mark.parametrize("value", [0, 1, 1.0, -0.5, float("nan"), True, 2**2000, "0.9", None])
def test_a_target_acceptance_outside_0_to_1_is_refused_by_name(value: object) -> None:
    if value is None:  # absent: Stan's 0.8
        assert validate_run_arguments({}).target_accept == 0.8
        return
    with pytest.raises(RunArgumentError) as refused:  # a string only from the command line
        validate_run_arguments({"target_accept": value})
    assert refused.value.key == "target_accept"
    assert validate_run_arguments({"target_accept": "0.95"}, text=True).target_accept == 0.95
