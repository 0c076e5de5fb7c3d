"""The worker runs on the bytes the server read, never on a path (#19: no check-then-use gap)."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.lsp_commands.conftest import TINY

ROOT = Path(__file__).resolve().parents[2]


def _run_worker(
    request: dict[str, Any], cwd: Path, **env: str
) -> tuple[subprocess.CompletedProcess[str], list[dict[str, Any]]]:
    """A worker process given `request`, and the events it wrote."""
    done = subprocess.run(
        [sys.executable, "-m", "qvr_lsp.runs.worker"],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", **env},
    )
    return done, [json.loads(line) for line in done.stdout.splitlines()]


def test_the_worker_never_opens_the_data_path(tmp_path: Path) -> None:
    header = ",".join([*(f"x[{i}]" for i in range(8)), "next"])
    rows = [",".join(str((r * 5 + i) % 8) for i in range(9)) for r in range(3)]
    content = ("\n".join([header, *rows]) + "\n").encode()
    gone = tmp_path / "replaced" / "tokens.csv"  # does not exist: had the worker opened it...
    request = {
        "source": TINY,
        "method": "prior",
        "steps": 2,
        "data_name": str(gone),
        "data_base64": base64.b64encode(content).decode(),
    }
    done, events = _run_worker(request, tmp_path)
    assert events[-1]["event"] == "result", done.stderr[-2000:]
    summary = events[-1]["summary"]
    assert summary["batch"] == 3 and summary["data"] == str(gone)


def test_a_spare_that_loaded_past_the_run_s_memory_limit_reports_memory(tmp_path: Path) -> None:
    """A spare (`QVR_WORKER_WARM=1`) has torch and ArviZ loaded when its request comes;
    a `memory_mb` below what it holds is the memory error it would have met loading
    them, not a run sized against a budget of nothing."""
    request = {"source": TINY, "method": "svi", "steps": 2, "memory_mb": 64}
    done, events = _run_worker(request, tmp_path, QVR_WORKER_WARM="1")
    assert events[-1]["event"] == "error", done.stderr[-2000:]
    assert events[-1]["kind"] == "memory" and "memory_mb" in events[-1]["message"]
    assert done.returncode == 1
