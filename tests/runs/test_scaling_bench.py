"""`bench/scaling.py --quick` runs: every `qvr run` it launches (one process, two under
torchrun, full data and subsampled) gives a summary, and it prints its table and saves its
figures. The regression's only: the network under torchrun is tests/runs/test_distributed.py's.

Nothing here is timed: the figures depend on the machine and its load.

The script runs in this process (its `main()`, with its command line in `sys.argv`): what
it does is start a `qvr run` per configuration, so that is all the same; what is saved is
a Python and a torch import of its own, which this process has already made.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(360)


@pytest.mark.slow
def test_quick_scaling_bench_prints_its_tables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from bench import scaling  # here, not at collection: it imports torch

    out = tmp_path / "scaling.json"
    argv = ["bench/scaling.py", "--quick", "--workload", "regression", "--json", str(out)]
    monkeypatch.setattr(sys, "argv", [*argv, "--timeout", "120"])  # seconds per `qvr run`
    status = scaling.main()
    done = capsys.readouterr()
    assert status == 0, done.out + done.err
    text = done.out
    assert "linear regression (model program)" in text
    for header in ("configuration", "threads", "steps/s", "wall s", "to ELBO s", "peak MB"):
        assert header in text
    assert "2 processes" in text and "failed" not in text
    assert "peak RSS, subsampled / full data" in text
    figures = json.loads(out.read_text())
    rows = figures["workloads"]["regression"]
    assert all(row["ok"] for row in rows)
    assert rows[0]["to_elbo_seconds"] is not None  # the baseline reaches its own target
    assert {row["processes"] for row in rows} >= {1, 2}
