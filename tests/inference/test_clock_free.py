"""A `--seed` run draws the same numbers however busy the machine is.

A run picks some paths by the cost of one evaluation (the NUTS potential recorded or
eager, chains together or in processes, the SVI step recorded after a while), and the
paths round differently in the last bits, which a NUTS trajectory turns into other
draws. The cost is counted from the model (`inference.work`), never timed: here the
clock is made to run a thousand times slower or faster than the run, and the draws
must not move by a bit."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from qvr_core.inference.results import RunResults
from qvr_core.runs.run import run_program

MODELS = Path(__file__).resolve().parents[2] / "examples" / "models"


def _clock(step: float) -> Callable[[], float]:
    """A clock that moves `step` seconds between any two readings."""
    ticks: Iterator[int] = itertools.count()
    return lambda: next(ticks) * step


def _draws(model: str, data: str, **arguments: object) -> dict[str, np.ndarray]:
    results = RunResults()
    run_program(
        (MODELS / model).read_text(encoding="utf-8"),
        data=str(MODELS / data),
        results=results,
        **arguments,  # type: ignore[arg-type]
    )
    return {k: np.asarray(v) for k, v in results.groups["posterior"].items()}


CASES: dict[str, tuple[str, str, dict[str, object]]] = {
    # chains together, recorded potential (an idle machine's path at its size)
    "nuts": ("eight_schools_noncentered.qvr", "eight_schools.json", {"method": "nuts"}),
    # an evaluation that is mostly the interpreter: recorded, its chains kept here
    "nuts-marginalize": ("hmm.qvr", "hmm.json", {"method": "nuts", "steps": 40}),
    # long enough for the SVI step to be recorded and replayed
    "svi": ("eight_schools_noncentered.qvr", "eight_schools.json", {"method": "svi"}),
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("step", [1e-9, 10.0], ids=["idle", "loaded"])
def test_the_draws_of_a_seed_do_not_depend_on_the_clock(
    case: str, step: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    model, data, arguments = CASES[case]
    steps = {"method": "svi", "steps": 600} if arguments["method"] == "svi" else {}
    settings = {"steps": 200, "chains": 4, "seed": 3, **steps, **arguments}
    expected = _draws(model, data, **settings)
    with monkeypatch.context() as patch:
        patch.setattr(time, "perf_counter", _clock(step))
        patch.setattr(time, "monotonic", _clock(step))
        got = _draws(model, data, **settings)
    assert expected.keys() == got.keys()
    for name in expected:
        np.testing.assert_array_equal(got[name], expected[name], err_msg=name)
