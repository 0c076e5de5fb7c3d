"""Data a run reads at the edges (issue #46): a one-entry plate's data name written
as a list, and integers past int64 (torch's integers), which wrapped."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest

from qvr_core.host.datafile import DataFile
from qvr_core.inference.errors import InferenceError
from qvr_core.plan.run_arguments import RunArguments
from qvr_core.runs.data import read_data
from qvr_core.runs.prepare import PreparedRun, prepare
from tests.conftest import EXAMPLES

SCHOOLS = EXAMPLES / "models" / "eight_schools_noncentered.qvr"
#: Eight schools with one school: `object School : FinSet 1`.
ONE_SCHOOL = SCHOOLS.read_text(encoding="utf-8").replace("FinSet 8", "FinSet 1")

#: A one-entry plate and a two-entry one: `y : School * K` is written (1, 2).
ONE_BY_TWO = """object School : FinSet 1
object K : FinSet 2
program m : School -> School
    sample mu <- Normal(0.0, 5.0)
    observe y : School * K <- Normal(mu, sigma)
    return mu
export m
"""


def data(**values: object) -> DataFile:
    return DataFile("d.json", json.dumps(values).encode())


def npz(**arrays: np.ndarray) -> DataFile:
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)  # type: ignore[arg-type]  # numpy's stub types **kwds as allow_pickle
    return DataFile("d.npz", buffer.getvalue())


def prepared(source: str, given: DataFile) -> PreparedRun:
    return prepare(source, RunArguments(method="svi", steps=2), data=given)


# ------------------------------------------------------------------ one-entry plates


@pytest.mark.parametrize(
    "values",
    [{"y": [28.0], "sigma": [15.0]}, {"y": 28.0, "sigma": [15.0]}, {"y": 28.0, "sigma": 15.0}],
    ids=["both-lists", "sigma-list", "numbers"],
)
def test_one_school_takes_its_data_names_as_a_one_entry_list(values: dict[str, object]) -> None:
    """`sigma: [15.0]` is the plate's one row, as `y: [28.0]` is: the data name was
    refused ("needs its scale (1,) to broadcast to its plates ()")."""
    run = prepared(ONE_SCHOOL, data(**values))
    assert tuple(run.observations["y"].shape) == ()
    assert run.x["sigma"].numel() == 1 and float(run.x["sigma"].reshape(())) == 15.0


def test_a_one_entry_axis_is_dropped_beside_a_longer_plate() -> None:
    run = prepared(ONE_BY_TWO, data(y=[[1.0, 2.0]], sigma=[[1.0, 3.0]]))
    assert tuple(run.observations["y"].shape) == (2,)
    assert run.x["sigma"].tolist() == [1.0, 3.0]


def test_a_data_name_that_would_reshape_the_plate_is_still_refused() -> None:
    with pytest.raises(InferenceError) as info:
        prepared(ONE_SCHOOL, data(y=[28.0], sigma=[15.0, 10.0]))
    assert str(info.value).endswith(
        "data 'sigma' has shape (2,) but observe y : School (line 17) needs its scale to "
        "broadcast to its plates (1,)"
    )


def test_a_wrong_shape_for_a_one_entry_plate_names_the_shapes_it_takes() -> None:
    with pytest.raises(
        InferenceError,
        match=r"has shape \(2,\) but observe y : School \(line "
        r"17\) needs \(1,\) or \(\)$",
    ):
        prepared(ONE_SCHOOL, data(y=[28.0, 1.0], sigma=[15.0]))


# ------------------------------------------------------------------ integers past int64


def test_uint64_past_int64_is_refused_not_wrapped() -> None:
    """2**64 - 1 became -1 in the cast to int64."""
    given = npz(y=np.array([3, 2**64 - 1], dtype=np.uint64))
    with pytest.raises(
        InferenceError, match=r"'y' holds 18,446,744,073,709,551,615 \(uint64\), past"
    ):
        read_data(given)


def test_uint64_within_int64_is_read_exactly() -> None:
    top = 2**63 - 1
    (y,) = read_data(npz(y=np.array([0, top], dtype=np.uint64))).values()
    assert y.tolist() == [0, top]
    (small,) = read_data(npz(y=np.array([7, 2**32 - 1], dtype=np.uint32))).values()
    assert small.tolist() == [7, 2**32 - 1]


@pytest.mark.parametrize("value", [2**63, -(2**63) - 1, 2**64 + 5])
def test_a_json_integer_outside_int64_is_named_as_such(value: int) -> None:
    with pytest.raises(InferenceError, match=r"'y' holds an integer outside int64's range"):
        read_data(data(y=[1, value]))
