"""The model examples under examples/models check, read their data and run every method.

Short runs (the gallery pages show the long ones); the linear regression, whose data
was drawn with alpha 1.5, beta 2.0 and sigma 0.7 (examples/models/generate_data.py),
must find them.
"""

from __future__ import annotations

import math

import pytest

from qvr_core.check import check
from qvr_core.runs.run import run_inference
from qvr_core.text.diagnostics import Severity
from tests.conftest import EXAMPLES
from tests.export import reference

MODELS = EXAMPLES / "models"
#: example file -> its data file (the export tests compare their targets on the same six)
DATA = reference.MODELS


def test_every_model_example_is_listed() -> None:
    assert {p.stem for p in MODELS.glob("*.qvr")} == set(DATA)
    assert {p.stem for p in MODELS.glob("*.json")} == set(DATA.values())


@pytest.mark.parametrize("name", sorted(DATA))
def test_the_example_checks_without_errors_or_warnings(name: str) -> None:
    checked = check((MODELS / f"{name}.qvr").read_text(encoding="utf-8"))
    assert checked.ok
    loud = [d for d in checked.diagnostics if d.severity in (Severity.ERROR, Severity.WARNING)]
    assert loud == []


@pytest.mark.parametrize("method", ["prior", "svi", "nuts"])
@pytest.mark.parametrize("name", sorted(DATA))
def test_the_example_runs_on_its_data(name: str, method: str) -> None:
    source = (MODELS / f"{name}.qvr").read_text(encoding="utf-8")
    data = MODELS / f"{DATA[name]}.json"
    steps = {"prior": 20, "svi": 20, "nuts": 6}[method]
    summary = run_inference(
        source, path=name, method=method, steps=steps, lr=0.05, data=data, max_tree_depth=3
    )
    assert summary["steps"] == steps * (summary["chains"] if method == "nuts" else 1)
    assert all(math.isfinite(v) for v in summary["losses"])


def test_linear_regression_finds_the_coefficients_it_was_drawn_with() -> None:
    source = (MODELS / "linear_regression.qvr").read_text(encoding="utf-8")
    summary = run_inference(
        source, method="nuts", steps=300, seed=0, data=MODELS / "linear_regression.json"
    )
    rows = {row["label"]: row for row in summary["posterior"]["rows"]}
    assert summary["divergences"] == 0 and summary["chains"] == 4
    for site, truth in (("alpha", 1.5), ("beta", 2.0), ("sigma", 0.7)):
        mean, sd = rows[site]["mean"], rows[site]["sd"]
        assert abs(mean - truth) < 3 * sd, f"{site}: {mean:.3f} +- {sd:.3f}, drawn with {truth}"
