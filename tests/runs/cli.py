"""`qvr` as a user runs it: a subprocess of the command line, one thread for torch."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def qvr(
    *args: str, cwd: Path = ROOT, pythonpath: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """`qvr ARGS...` from `cwd`; `pythonpath` puts a folder first on the import path (a
    `sitecustomize.py` there runs in the command's process and its chain processes)."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    return subprocess.run(
        [sys.executable, "-m", "qvr_cli.main", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=240,
        env=env,
    )
