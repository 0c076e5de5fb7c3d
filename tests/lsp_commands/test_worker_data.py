"""The worker runs on the bytes the server read, never on a path (#19: no check-then-use gap)."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path

from tests.lsp_commands.conftest import TINY

ROOT = Path(__file__).resolve().parents[2]


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
    done = subprocess.run(
        [sys.executable, "-m", "qvr_lsp.worker"],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    events = [json.loads(line) for line in done.stdout.splitlines()]
    assert events[-1]["event"] == "result", done.stderr[-2000:]
    summary = events[-1]["summary"]
    assert summary["batch"] == 3 and summary["data"] == str(gone)
