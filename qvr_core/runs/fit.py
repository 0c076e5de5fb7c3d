"""`fit(source, ...)`, the Python entry point: a run as `qvr run` does it, with its draws.

`Fit.run` is the typed summary (`RunSummary`), `Fit.summary` its JSON form
(what `qvr run --json` prints), and `Fit.inference_data()` the draws as
`arviz.InferenceData` (the object `qvr run --output run.nc` writes; see
`qvr_core.inference.results` for the groups).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from qvr_core.draws.arviz_adapter import InferenceData
from qvr_core.inference.results import RunResults
from qvr_core.runs.run import run_program
from qvr_core.runs.summary import RunSummary


@dataclass(frozen=True)
class Fit:
    """What `fit` returns: the run's summary and its results."""

    run: RunSummary
    results: RunResults

    @property
    def summary(self) -> dict[str, Any]:
        """The summary as `qvr run --json` prints it."""
        return self.run.to_json()

    def inference_data(self) -> InferenceData:
        """`arviz.InferenceData` of the draws (needs the `arviz` extra)."""
        return self.results.inference_data()


def fit(source: str, *, predictive: bool = False, **arguments: Any) -> Fit:
    """Run `source` as `qvr run` does (`run_program`'s arguments) and keep the draws."""
    results = RunResults()
    summary = run_program(source, results=results, predictive=predictive, **arguments)
    return Fit(summary, results)
