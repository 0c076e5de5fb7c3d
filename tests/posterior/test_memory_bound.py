"""The pointwise log-likelihood is kept only where it fits in the run's memory budget: a
run whose terms would not is not refused, it leaves them out and says why."""

from __future__ import annotations

from pathlib import Path

import pytest

from qvr_core.inference.results import RunResults
from qvr_core.plan.run_arguments import validate_run_arguments
from qvr_core.runs.prepare import prepare
from qvr_core.runs.run import run_program
from qvr_core.runs.sizing import TERM_BYTES
from qvr_core.runtime.model import ModelProgram
from qvr_core.text.units import format_bytes
from tests.runs.cli import qvr_here

from .conftest import MODELS

REGRESSION = (MODELS / "linear_regression.qvr").read_text()
DATA = MODELS / "linear_regression.json"
STEPS, CHAINS = 40, 2
TERMS = CHAINS * (STEPS - STEPS // 2) * 50  # draws x observations
ARGUMENTS = {"method": "nuts", "steps": STEPS, "chains": CHAINS, "max_tree_depth": 4}

# kernel_free: the memory budget and a failing likelihood decide these outcomes (what is
# kept, the messages, the shapes), not the values of the draws: the AVX2 pass skips them.
pytestmark = pytest.mark.kernel_free


def need() -> int:
    """What the run is estimated to need, as `run_program` sizes it."""
    prepared = prepare(REGRESSION, validate_run_arguments(ARGUMENTS), data=DATA)
    assert prepared.sizing is not None
    return prepared.sizing.need.total


def run(budget: int) -> tuple[RunResults, list[str]]:
    results = RunResults()
    summary = run_program(REGRESSION, data=DATA, memory_budget=budget, results=results, **ARGUMENTS)
    assert summary.posterior is not None
    return results, [w.message for w in summary.posterior.warnings if w.kind == "log_likelihood"]


def test_terms_over_the_budget_are_skipped_with_the_reason(tmp_path: Path) -> None:
    total = need()
    results, said = run(total + TERMS * TERM_BYTES // 2)  # the run fits, its terms do not
    assert "log_likelihood" not in results.groups and "posterior" in results.groups
    (message,) = said
    assert "pointwise log-likelihood was not kept" in message
    size = format_bytes(TERMS * TERM_BYTES)
    assert f"not kept: its 40 draws x 50 observations, {size}, would take the run" in message
    assert "memory budget" in message
    assert str(results.attrs["log_likelihood"]).startswith("skipped: 40 draws x 50 observations")
    written = results.write(tmp_path / "skipped.nc")
    done = qvr_here("compare", str(written))
    assert done.returncode == 2
    assert "no log_likelihood group (the run skipped it: 40 draws x 50" in done.stderr

    results, said = run(total + TERMS * TERM_BYTES)  # room for them: kept
    assert said == [] and results.attrs["log_likelihood"] == "pointwise"
    assert results.groups["log_likelihood"]["y"].shape == (CHAINS, STEPS // 2, 50)


def test_terms_that_cannot_be_computed_are_skipped_and_the_draws_kept(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    def broken(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise RuntimeError("shape mismatch somewhere\nin torch")

    monkeypatch.setattr(ModelProgram, "log_likelihood", broken)
    results, said = run(need() * 2)
    assert "posterior" in results.groups and "log_likelihood" not in results.groups
    assert said == [
        "the pointwise log-likelihood was not kept: it could not be computed: "
        "shape mismatch somewhere"
    ]
    assert results.attrs["log_likelihood"] == (
        "skipped: it could not be computed: shape mismatch somewhere"
    )
