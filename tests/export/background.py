"""What the export tests need that takes minutes, done on the core the suite leaves idle.

Run in one process, the suite leaves one core of two mostly free; run in two workers
(pytest-xdist, as ./dev test does), it leaves the cores free at its end, where the
export tests are. When a whole run includes the tests that run exports
(tests/conftest.py moves them to the end), one detached, low-priority process starts as
the session does (the first worker starts it, for all of them) and, in the order the
tests will ask: fits qvr's NUTS reference posterior of each model example (written to
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


def start(shared: str | None = None) -> None:
    """Start the background process for this session; never raises.

    `shared`, under pytest-xdist: the run's id, which names a directory every worker of
    the run finds. The first worker starts the one process and the others read what it
    writes (`reference`), so two workers never fit or compile the same thing twice."""
    global _process, _directory
    if _process is not None or _directory is not None:
        return
    if shared is not None:
        directory = Path(tempfile.gettempdir()) / f"qvr-export-{shared}"
        try:
            directory.mkdir()
        except FileExistsError:  # another worker started it: read what it writes
            _directory = directory
            return
        except OSError:
            return
    else:
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
        (directory / "finished").write_text("")  # the other workers fit for themselves
        return
    (directory / "pid").write_text(str(_process.pid))
    _directory = directory


def _running(directory: Path) -> bool:
    """Whether the directory's process still works: this worker's child, or (another
    worker's) a live process that has not written `finished`."""
    if _process is not None:
        return _process.poll() is None
    if (directory / "finished").exists():
        return False
    try:
        pid = int((directory / "pid").read_text())
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, ValueError, IndexError):  # not written yet, or gone
        return not (directory / "pid").exists() and directory.exists()
    return state not in ("Z", "X")  # a process that ended but is not reaped yet


def reference(name: str) -> dict[str, np.ndarray] | None:
    """The reference posterior of `name` the background process wrote, waiting for it
    while the process lives; None when there is no process or it died first."""
    if _directory is None:
        return None
    path = _directory / f"{name}.npz"
    while not path.exists() and _running(_directory):
        time.sleep(0.2)  # a poll on the file, not a timing assumption: the loop ends with it
    if not path.exists():
        return None
    with np.load(path) as saved:
        return {k: saved[k] for k in saved.files}


def stop() -> None:
    """End the process with the session (a Stan build cut short is rebuilt next time,
    stan_warm.build) and remove its directory (the worker that started it does)."""
    if _process is None:
        return
    if _process.poll() is None:
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

    try:
        if stan_warm.unavailable() is None:
            stan_warm.main()
    finally:
        (directory / "finished").write_text("")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
