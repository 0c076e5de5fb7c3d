"""`qvr` as a user runs it: a subprocess of the command line, one thread for torch."""

from __future__ import annotations

import contextlib
import io
import json
import os
import resource
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import torch

from qvr_cli.main import main

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


def qvr_here(*args: str) -> subprocess.CompletedProcess[str]:
    """`qvr ARGS` through the command line's own entry (`qvr_cli.main.main`, which a
    `qvr` process calls) in this process, with torch on one thread as `qvr` runs here:
    its exit status and what it printed, as `qvr(...)` returns them. For the tests about
    what a command does, not about its process: each `qvr` process costs seconds of
    importing torch (more for SVI, ArviZ for `compare`) before it starts. A traceback
    cannot hide here: an exception escaping `main` fails the test."""
    out, err = io.StringIO(), io.StringIO()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = main(list(args))
    finally:
        torch.set_num_threads(threads)
    return subprocess.CompletedProcess(["qvr", *args], status, out.getvalue(), err.getvalue())


class Done(NamedTuple):
    returncode: int
    stderr: str


#: Runs `python -m qvr_cli run ARGS...` once for each argument list read (JSON) on stdin,
#: each in a process of its own forked from this one after torch and the command line are
#: imported, so that import is paid once for all the runs; each child's stdout and stderr
#: are files of its own, and it ends as the interpreter would (a traceback and 1 for an
#: uncaught exception). Writes the exit codes and stderr (JSON) on stdout.
FORKED_RUNS = r"""
import json, os, runpy, sys, tempfile, traceback
import torch  # noqa: F401  what a run loads first
import qvr_cli.main  # noqa: F401
results = []
for args in json.load(sys.stdin):
    with tempfile.TemporaryFile() as err, tempfile.TemporaryFile() as out:
        pid = os.fork()
        if pid == 0:
            os.dup2(out.fileno(), 1)
            os.dup2(err.fileno(), 2)
            sys.argv = ["qvr", "run", *args]
            try:
                runpy.run_module("qvr_cli", run_name="__main__", alter_sys=True)
                code = 0
            except SystemExit as exc:  # as the interpreter ends on it
                if exc.code is None or isinstance(exc.code, int):
                    code = exc.code or 0
                else:
                    print(exc.code, file=sys.stderr)
                    code = 1
            except BaseException:
                traceback.print_exc()
                code = 1
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
        _, status = os.waitpid(pid, 0)
        err.seek(0)
        text = err.read().decode("utf-8", "replace")
        results.append([os.waitstatus_to_exitcode(status), text])
print(json.dumps(results))
"""


def qvr_runs(runs: list[list[str]], limit: int | None = None) -> list[Done]:
    """`qvr run ARGS` for each argument list, each in its own process (see `FORKED_RUNS`),
    all under the address-space limit `limit` if one is given."""

    def preexec() -> None:
        if limit is not None:
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        [sys.executable, "-c", FORKED_RUNS],
        input=json.dumps(runs),
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=preexec,
        env=env,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return [Done(code, stderr) for code, stderr in json.loads(done.stdout)]
