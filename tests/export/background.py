"""What the export tests need that takes minutes, done on the core the suite leaves idle.

The suite runs in one process, so on two cores one is mostly free. When a whole run
includes the tests that run exports (tests/conftest.py moves them to the end), one
detached, low-priority process starts as the session does and, in the order the tests
will ask: fits qvr's NUTS reference posterior of each model example (written to
a directory of this session as `NAME.npz`, renamed into place when complete), then
compiles the exported Stan programs into httpstan's cache (tests/export/stan_warm.py).
A test that needs a reference the process has not written yet waits while the process
lives, and fits it itself if the process died: the process only ever saves time.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
#: The session's background process and its directory (set by `start`).
_process: subprocess.Popen[bytes] | None = None
_directory: Path | None = None


def start() -> None:
    """Start the background process for this session; never raises."""
    global _process, _directory
    if _process is not None:
        return
    directory = Path(tempfile.mkdtemp(prefix="qvr-export-"))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    try:
        _process = subprocess.Popen(
            [sys.executable, "-m", "tests.export.background", str(directory)],
            cwd=directory,  # PyStan compiles into ./build: not into the checkout
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
    except OSError:
        return
    _directory = directory


def reference(name: str) -> dict[str, np.ndarray] | None:
    """The reference posterior of `name` the background process wrote, waiting for it
    while the process lives; None when there is no process or it died first."""
    if _process is None or _directory is None:
        return None
    path = _directory / f"{name}.npz"
    while not path.exists() and _process.poll() is None:
        time.sleep(0.2)  # a poll on the file, not a timing assumption: the loop ends with it
    if not path.exists():
        return None
    with np.load(path) as saved:
        return {k: saved[k] for k in saved.files}


def stop() -> None:
    """End the process with the session (a Stan build cut short is rebuilt next time,
    stan_warm.build) and remove its directory."""
    if _process is not None and _process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(_process.pid, signal.SIGTERM)
        _process.wait()
    if _directory is not None:
        shutil.rmtree(_directory, ignore_errors=True)


def main(directory: Path) -> None:
    os.nice(19)  # the suite keeps its core
    from tests.export.reference import MODELS, fit_posterior

    for name in sorted(MODELS):  # the order the tests ask for them
        try:
            draws = fit_posterior(name)
        except Exception:  # the test that needs it fits it itself and reports the error
            continue
        partial = directory / f"{name}.partial.npz"
        np.savez(partial, **draws)
        partial.rename(directory / f"{name}.npz")
    from tests.export import stan_warm

    if stan_warm.unavailable() is None:
        stan_warm.main()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
