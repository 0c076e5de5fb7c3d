"""`bench/scaling.py --quick` runs: every `qvr run` it launches (one process, two under
torchrun, full data and subsampled) gives a summary, and it prints its table and saves its
figures. The regression's only: the network under torchrun is tests/runs/test_distributed.py's.

Nothing here is timed: the figures depend on the machine and its load.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.timeout(360)


@pytest.mark.slow
def test_quick_scaling_bench_prints_its_tables(tmp_path: Path) -> None:
    out = tmp_path / "scaling.json"
    done = subprocess.run(
        [
            *(sys.executable, str(ROOT / "bench" / "scaling.py")),
            *("--quick", "--workload", "regression", "--json", str(out)),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    text = done.stdout
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
