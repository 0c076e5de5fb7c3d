"""The worker writes a run's progress points together, and the server reads every point
back, in both the batched form and a line per step (a worker of an older qvr)."""

from __future__ import annotations

import io
import json
from typing import Any

from qvr_lsp.runs import worker
from qvr_lsp.runs.inference_runs import _handle_event


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _events(stream: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def test_points_within_the_interval_go_out_as_one_event_and_the_last_at_once() -> None:
    stream, clock = io.StringIO(), Clock()
    points = worker._ProgressPoints(stream, clock)
    for step in range(1, 6):  # no time passes: held back
        points.add(step, 8, float(step))
    assert _events(stream) == []
    clock.now = worker.PROGRESS_SECONDS
    points.add(6, 8, float("nan"))  # the interval passed: all six, NaN as null
    points.add(7, 8, 7.0)
    points.add(8, 8, 8.0)  # the last step: written at once
    events = _events(stream)
    assert [e["points"] for e in events] == [
        [[1, 1.0], [2, 2.0], [3, 3.0], [4, 4.0], [5, 5.0], [6, None]],
        [[7, 7.0], [8, 8.0]],
    ]
    assert all(e["event"] == "progress" and e["total"] == 8 for e in events)
    points.flush()  # nothing left: nothing written
    assert len(_events(stream)) == 2


class Recorded:
    def __init__(self) -> None:
        self.points: list[tuple[int, float | None, int | None]] = []

    def point(self, step: int, loss: float | None, total: int | None = None) -> None:
        self.points.append((step, loss, total))


def test_the_server_reads_every_point_of_either_form() -> None:
    progress = Recorded()
    batched = {"event": "progress", "total": 4, "points": [[1, 2.5], [2, None], "junk"]}
    assert _handle_event(json.dumps(batched).encode(), progress) is None  # type: ignore[arg-type]
    one = {"event": "progress", "step": 3, "total": 4, "loss": 1.5}
    assert _handle_event(json.dumps(one).encode(), progress) is None  # type: ignore[arg-type]
    assert progress.points == [(1, 2.5, 4), (2, None, 4), (3, 1.5, 4)]
