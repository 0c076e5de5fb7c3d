"""A let's index by a let bound to a number runs as the index written as that number:
prior, NUTS and SVI draw, at one seed, the same numbers for every site as the program
that writes `mu[2]`. Compared exactly, never against a sampler's outcome."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from qvr_core.runs.fit import fit
from tests.check.test_bound_index import program

BOUND = program("    let i = 2\n    let a = mu[i]\n")
WRITTEN = program("    let a = mu[2]\n")


@pytest.mark.parametrize(
    ("method", "arguments"),
    [
        ("prior", {"steps": 20}),
        ("nuts", {"steps": 40, "chains": 2, "max_tree_depth": 3}),
        ("svi", {"steps": 30}),
    ],
)
def test_prior_nuts_and_svi_run_it_as_the_written_index(
    tmp_path: Path, method: str, arguments: dict[str, int]
) -> None:
    data = tmp_path / "data.json"
    data.write_text(json.dumps({"y": [0.5, 1.0, 1.5, 0.2, -0.1]}))
    bound, written = (
        fit(text, method=method, seed=5, data=str(data), **arguments).results.groups
        for text in (BOUND, WRITTEN)
    )
    compared = 0
    for group, arrays in written.items():
        for name, array in arrays.items():
            if name in bound.get(group, {}):
                np.testing.assert_array_equal(bound[group][name], array, err_msg=f"{group}/{name}")
                compared += name == "mu"
    assert compared >= 1
