"""Running fuzz cases through `qvr run` and sorting what happened.

Each case runs in a worker process (`python -m tests.fuzz.driver --worker`),
in-process there through the command line's own entry
(`qvr_cli.main.main(["run", FILE, ...])`, which calls
`qvr_core.cli.run.main`), with its stdout and stderr captured both at the
Python level and at the file descriptors (so output from C, and a fault
handler's dump, are kept too). The worker answers over a pipe of its own; the
parent waits for it with the case's timeout. A case that does not answer in
time is a hang: the worker is asked to dump every thread's stack (SIGUSR1,
`faulthandler`), then killed with its process group and replaced. A worker
that dies is a crash, its signal or status recorded. Workers hold an
address-space limit, so a run that tries to allocate far too much fails
inside the worker instead of taking the machine's memory.

`classify` sorts an outcome:

- ok: exit status 0, no traceback anywhere;
- refusal: a non-zero exit (1 or 2) with a `qvr run...` message on stderr
  and no traceback: qvr said no, clearly;
- failure: a traceback printed (even with status 0), an exception escaping
  `main`, an internal error reported (QVR000), a hang, a crash, or a
  non-zero exit without a message.

Failures are grouped by `signature` (their kind, the exception type and
the innermost frame in qvr's own code) and `minimise` shrinks one case of
each group (lines of the program, then keys of the data) while it still
fails the same way.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import select
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from tests.fuzz.generators import Case, DataPlan, copy_plan, encode_data

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_TIMEOUT = 60.0
DEFAULT_MEMORY_LIMIT = 4 << 30
PROGRAM_FILE = "model.qvr"

OK, REFUSAL, FAILURE = "ok", "refusal", "failure"

# ---------------------------------------------------------------- writing a case


def write_case(case: Case, directory: Path) -> list[str]:
    """The program and data files of `case` under `directory`; the `qvr` argv to run it."""
    directory.mkdir(parents=True, exist_ok=True)
    program = directory / PROGRAM_FILE
    program.write_bytes(case.program.encode("utf-8", "surrogatepass"))
    argv = ["run", str(program)]
    if case.data is not None and case.data_file is not None:
        data = directory / case.data_file
        data.write_bytes(encode_data(case.data))
        argv += ["--data", str(data)]
    args = list(case.args)
    if "--output" in args:  # write the draws beside the case, not in the current folder
        i = args.index("--output") + 1
        args[i] = str(directory / args[i])
    return argv + args


def command_line(argv: list[str]) -> str:
    return "qvr " + " ".join(shlex.quote(a) for a in argv)


# ---------------------------------------------------------------- outcomes


@dataclass
class Outcome:
    """What one run did, and how it is sorted."""

    case: Case
    argv: list[str]
    status: str  # ok | refusal | failure
    kind: str  # ok, refusal, or the failure: traceback, escaped, internal, hang, crash, silent
    rc: int | None
    seconds: float
    stdout: str
    stderr: str
    signature: str = ""
    remarks: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return self.stdout + "\n" + self.stderr

    def tail(self, frames: int = 4, message: int = 3) -> str:
        """The last frames of the last traceback and the first lines of its message (or,
        without a traceback, the last lines of the output)."""
        text = self.text
        at = text.rfind("Traceback (most recent call last)")
        dump = text.find("(most recent call first)")
        if at < 0 and dump >= 0:  # a fault handler's dump: the innermost frames come first
            fatal = [r for r in text.splitlines() if r.startswith("Fatal Python error")]
            rows = text[dump:].splitlines()[1 : 1 + frames + message]
            return "\n".join(fatal[:1] + [r[:300] for r in rows])
        if at < 0:
            rows = [r for r in text.rstrip().splitlines() if r.strip()]
            return "\n".join(r[:300] for r in rows[-(frames + message) :])
        block = text[at:].splitlines()
        end = next(
            (i for i, r in enumerate(block[1:], 1) if r and not r.startswith((" ", "\t"))),
            len(block),
        )
        stack = [r for r in block[1:end] if r.lstrip().startswith("File ")]
        shown = stack[-frames:] + [r[:300] for r in block[end : end + message]]
        return "\n".join(shown)


_FRAME = re.compile(r'File "([^"]+)", line (\d+),? in (\S+)')
_QVR_PATH = re.compile(r"(?:^|/)((?:qvr_core|qvr_lsp|qvr_cli)/.+\.py)$")
_EXC_LINE = re.compile(
    r"^([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning|Fault)?)(?::|$)"
)


def innermost_qvr_frame(text: str) -> str:
    """`qvr_core/runs/data.py:_read_json` of the last traceback (or stack dump) in `text`."""
    at = text.rfind("Traceback (most recent call last)")
    first = at < 0 and "(most recent call first)" in text  # a fault handler's: innermost first
    dump = text[at:] if at >= 0 else text
    best = ""
    for m in _FRAME.finditer(dump):
        q = _QVR_PATH.search(m.group(1))
        if q:
            best = f"{q.group(1)}:{m.group(3)}"
            if first:
                break
    return best or "(no qvr frame)"


def exception_type(text: str) -> str:
    """The type of the last exception in a traceback in `text` (`RuntimeError`)."""
    at = text.rfind("Traceback (most recent call last)")
    if at < 0:
        return ""
    lines = text[at:].splitlines()[1:]
    exc = ""
    for line in lines:
        if line and not line.startswith((" ", "\t", "Traceback")):
            m = _EXC_LINE.match(line)
            if m:
                exc = m.group(1)
                break
    return exc


def classify(
    case: Case,
    argv: list[str],
    raw: dict[str, Any],
) -> Outcome:
    """Sort one raw result (`Worker.run`) into ok, refusal or failure."""
    rc = raw.get("rc")
    stdout = str(raw.get("stdout", ""))
    stderr = str(raw.get("stderr", "")) + str(raw.get("captured", ""))
    escaped = raw.get("escaped")
    seconds = float(raw.get("seconds", 0.0))
    if escaped:
        stderr += "\n" + str(escaped)
    text = stdout + "\n" + stderr
    remarks: list[str] = []
    if raw.get("hang"):
        kind = "hang"
    elif raw.get("crash") is not None:
        kind = "crash"
    elif escaped:
        kind = "escaped"
    elif "Traceback (most recent call last)" in text:
        kind = "traceback"
    elif "QVR000" in text or "internal checker error" in text:
        kind = "internal"
    elif rc == 0:
        kind = OK
    elif rc in (1, 2) and any(line.startswith("qvr") for line in stderr.splitlines()):
        kind = REFUSAL
    else:
        kind = "silent"
    status = kind if kind in (OK, REFUSAL) else FAILURE
    out = Outcome(case, argv, status, kind, rc, seconds, stdout, stderr, remarks=remarks)
    if status == FAILURE:
        out.signature = signature(out, raw)
    else:
        _remark(out)
    return out


def signature(out: Outcome, raw: dict[str, Any]) -> str:
    """What makes two failures the same: kind, exception type, innermost qvr frame."""
    text = out.text
    frame = innermost_qvr_frame(text)
    if out.kind == "hang":
        return f"hang @ {frame}"
    if out.kind == "crash":
        return f"crash ({raw.get('crash')}) @ {frame}"
    if out.kind == "silent":
        return f"exit {out.rc} without a message"
    if out.kind == "internal":
        m = re.search(r"internal checker error \((\w+)", text)
        return f"internal error ({m.group(1) if m else 'QVR000'})"
    return f"{out.kind}: {exception_type(text) or '?'} @ {frame}"


_PYTHONISMS = re.compile(r"object at 0x|<class '|Error\(|\bNone\b is not")


def _remark(out: Outcome) -> None:
    """Things worth a look that are not failures: warnings, odd messages."""
    for line in out.stderr.splitlines():
        if "Warning:" in line and "warning" not in out.remarks:
            out.remarks.append("warning")
    if out.status == REFUSAL:
        message = [ln for ln in out.stderr.splitlines() if ln.startswith("qvr")]
        if message and len(message[-1]) > 500:
            out.remarks.append("long message")
        if message and _PYTHONISMS.search(message[-1]):
            out.remarks.append("python in message")


# ---------------------------------------------------------------- the worker (child side)


def _worker_main(memory_limit: int) -> None:  # pragma: no cover - runs in the worker
    import faulthandler
    import resource

    proto = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    faulthandler.enable(file=2, all_threads=True)
    faulthandler.register(signal.SIGUSR1, file=2, all_threads=True)
    import torch  # noqa: F401  # paid once, not by the first case

    import qvr_core.runs.run  # noqa: F401
    from qvr_cli.main import main as qvr_main

    if memory_limit > 0:
        resource.setrlimit(resource.RLIMIT_AS, (memory_limit, memory_limit))
    proto.write(json.dumps({"ready": os.getpid()}) + "\n")
    for line in sys.stdin:
        request = json.loads(line)
        proto.write(json.dumps(_run_one(qvr_main, request)) + "\n")


def _run_one(qvr_main: Callable[[list[str]], int], request: dict[str, Any]) -> dict[str, Any]:
    capture = request["capture"]
    argv = request["argv"]
    fd = os.open(capture, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    saved = os.dup(2)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    out, err = io.StringIO(), io.StringIO()
    escaped = None
    rc: int | None = None
    start = time.perf_counter()
    old_cwd = os.getcwd()
    try:
        os.chdir(request["cwd"])
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                rc = qvr_main(argv)
            except SystemExit as e:
                code = e.code
                if code is None:
                    rc = 0
                elif isinstance(code, int):
                    rc = code
                else:
                    print(code, file=sys.stderr)
                    rc = 1
            except BaseException:
                escaped = traceback.format_exc()
    finally:
        seconds = time.perf_counter() - start
        os.chdir(old_cwd)
        os.dup2(saved, 2)
        os.close(saved)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.close(devnull)
        os.close(fd)
    return {
        "rc": rc,
        "stdout": out.getvalue(),
        "stderr": err.getvalue(),
        "escaped": escaped,
        "seconds": seconds,
    }


# ---------------------------------------------------------------- the worker (parent side)


class Worker:
    """One worker process, started on first use and again after a hang or crash."""

    def __init__(self, timeout: float, memory_limit: int, scratch: Path) -> None:
        self.timeout = timeout
        self.memory_limit = memory_limit
        self.scratch = scratch
        self.proc: subprocess.Popen[bytes] | None = None
        self.buffer = b""
        self.started = 0

    def start(self) -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
        env.setdefault("PYTHONHASHSEED", "0")
        command = [sys.executable, "-m", "tests.fuzz.driver", "--worker"]
        command += ["--memory-limit", str(self.memory_limit)]
        with open(self.scratch / "worker-stderr.txt", "ab") as log:
            self.proc = subprocess.Popen(
                command,
                cwd=ROOT,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                env=env,
                start_new_session=True,
            )
        self.buffer = b""
        self.started += 1
        line = self._read_line(120.0)
        if not line or not line.startswith('{"ready"'):
            self.stop()
            raise RuntimeError(f"the fuzz worker did not start (see {log.name})")

    def _read_line(self, timeout: float) -> str | None:
        """A line from the worker within `timeout`; None on timeout; "" at end of file."""
        assert self.proc is not None and self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return ""
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line.decode("utf-8", "replace")

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        with contextlib.suppress(Exception):
            proc.wait(timeout=10)
        for stream in (proc.stdin, proc.stdout):
            with contextlib.suppress(Exception):
                if stream is not None:
                    stream.close()

    def run(self, argv: list[str], cwd: Path, timeout: float | None = None) -> dict[str, Any]:
        """Run `qvr argv` in the worker; the raw result (see `classify`)."""
        if self.proc is None or self.proc.poll() is not None:
            self.stop()
            try:
                self.start()
            except RuntimeError:  # once more: a worker may die as it starts
                self.start()
        assert self.proc is not None and self.proc.stdin is not None
        capture = cwd / "captured.txt"
        request = {"argv": argv, "capture": str(capture), "cwd": str(cwd)}
        start = time.perf_counter()
        try:
            self.proc.stdin.write((json.dumps(request) + "\n").encode("utf-8"))
            self.proc.stdin.flush()
            line = self._read_line(self.timeout if timeout is None else timeout)
        except (BrokenPipeError, OSError):
            line = ""
        seconds = time.perf_counter() - start
        if line:
            result: dict[str, Any] = json.loads(line)
            result["captured"] = _read(capture)
            return result
        if line is None:  # a hang: ask for the stacks, then kill it
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.proc.pid, signal.SIGUSR1)
            time.sleep(1.0)
            self.stop()
            return {"hang": True, "seconds": seconds, "captured": _read(capture), "rc": None}
        proc = self.proc
        try:
            code = proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            code = None
        self.stop()
        crash = f"signal {-code} ({signal.Signals(-code).name})" if code and code < 0 else code
        return {"crash": str(crash), "seconds": seconds, "captured": _read(capture), "rc": code}


def _read(path: Path) -> str:
    try:
        return path.read_bytes().decode("utf-8", "replace")
    except OSError:
        return ""


# ---------------------------------------------------------------- many cases


def run_case(worker: Worker, case: Case, scratch: Path, timeout: float | None = None) -> Outcome:
    directory = scratch / f"case-{case.index:05d}"
    argv = write_case(case, directory)
    raw = worker.run(argv, directory, timeout)
    return classify(case, argv, raw)


def run_cases(
    cases: Iterable[Case],
    *,
    jobs: int = 2,
    timeout: float = DEFAULT_TIMEOUT,
    memory_limit: int = DEFAULT_MEMORY_LIMIT,
    scratch: Path | None = None,
    on_outcome: Callable[[Outcome], None] | None = None,
) -> list[Outcome]:
    """Run every case on `jobs` workers; the outcomes in the cases' order."""
    todo = list(cases)
    results: dict[int, Outcome] = {}
    lock = threading.Lock()
    queue = iter(range(len(todo)))
    with _scratch(scratch) as root:

        def serve(worker: Worker) -> None:
            try:
                while True:
                    with lock:
                        i = next(queue, None)
                    if i is None:
                        return
                    outcome = run_case(worker, todo[i], root)
                    with lock:
                        results[i] = outcome
                        if on_outcome is not None:
                            on_outcome(outcome)
            finally:
                worker.stop()

        workers = [Worker(timeout, memory_limit, root) for _ in range(max(1, jobs))]
        threads = [threading.Thread(target=serve, args=(w,), daemon=True) for w in workers]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    return [results[i] for i in sorted(results)]


@contextlib.contextmanager
def _scratch(path: Path | None) -> Iterator[Path]:
    if path is not None:
        path.mkdir(parents=True, exist_ok=True)
        yield path
        return
    with tempfile.TemporaryDirectory(prefix="qvr-fuzz-") as tmp:
        yield Path(tmp)


# ---------------------------------------------------------------- shrinking a failure


def minimise(
    worker: Worker,
    outcome: Outcome,
    scratch: Path,
    *,
    attempts: int = 200,
    timeout: float | None = None,
) -> Outcome:
    """A smaller case that fails with the same signature, within `attempts` runs: the
    data's byte damage and optional arguments dropped, then chunks of the program's lines
    (with the data keys the program no longer names), then data keys one at a time.
    Hangs are shrunk with fewer tries (each costs the timeout)."""
    goal = outcome.signature
    best = outcome
    budget = min(attempts, 6) if outcome.kind == "hang" else attempts
    tries = 0

    def attempt(candidate: Case) -> bool:
        nonlocal tries, best
        if tries >= budget:
            return False
        tries += 1
        trial = replace(candidate, index=90_000 + tries)
        got = run_case(worker, trial, scratch, timeout)
        if got.signature != goal:
            return False
        best = replace(got, case=replace(got.case, index=outcome.case.index))
        return True

    plan = best.case.data
    if plan is not None and plan.damage is not None:
        undamaged = copy_plan(plan)
        undamaged.damage = None
        attempt(best.case.with_data(undamaged))
    for flag, takes_value in _OPTIONAL_ARGS:
        args = list(best.case.args)
        if flag in args:
            i = args.index(flag)
            del args[i : i + 1 + takes_value]
            attempt(replace(best.case, args=tuple(args)))
    # the program: drop chunks of lines, halving the chunk (a simple ddmin)
    chunk = max(1, len(best.case.program.split("\n")) // 2)
    while chunk >= 1 and tries < budget:
        lines = best.case.program.split("\n")
        i, changed = 0, False
        while i < len(lines) and tries < budget:
            smaller = lines[:i] + lines[i + chunk :]
            text = "\n".join(smaller)
            if smaller and attempt(_with_program(best.case, text)):
                lines, changed = smaller, True
            else:
                i += chunk
        if not changed:
            chunk //= 2
    # the data: keys one at a time, then no file at all
    plan = best.case.data
    if plan is not None and plan.damage is None:
        for key in list(plan.arrays):
            current = best.case.data
            if current is None or key not in current.arrays:
                continue
            smaller_plan = copy_plan(current)
            del smaller_plan.arrays[key]
            attempt(best.case.with_data(smaller_plan))
    if best.case.data is not None:
        attempt(best.case.with_data(None))
    return best


#: (flag, whether it takes a value) of the run arguments a repro may do without
_OPTIONAL_ARGS = (
    ("--json", 0),
    ("--predictive", 0),
    ("--output", 1),
    ("--guide", 1),
    ("--lr", 1),
    ("--max-tree-depth", 1),
    ("--memory-budget", 1),
    ("--seed", 1),
)
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _with_program(case: Case, text: str) -> Case:
    """`case` with program `text` and only the data keys that `text` still names (a key
    the program no longer reads would be refused as unexpected)."""
    plan = case.data
    if plan is None or plan.damage is not None:
        return case.with_program(text)
    names = set(_IDENT.findall(text))
    kept = copy_plan(plan)
    kept.arrays = {k: v for k, v in plan.arrays.items() if k in names}
    return case.with_program(text).with_data(kept)


def save_repro(outcome: Outcome, directory: Path) -> Path:
    """The failing case's files, command line and output under `directory`."""
    directory.mkdir(parents=True, exist_ok=True)
    case = outcome.case
    (directory / PROGRAM_FILE).write_bytes(case.program.encode("utf-8", "surrogatepass"))
    argv = ["run", PROGRAM_FILE]
    if case.data is not None and case.data_file is not None:
        (directory / case.data_file).write_bytes(encode_data(case.data))
        argv += ["--data", case.data_file]
    argv += list(case.args)
    info = [
        f"signature: {outcome.signature}",
        f"case: seed {case.seed}, index {case.index}, origin {case.origin}",
        f"notes (of the case before it was minimised): {'; '.join(case.notes)}",
        f"command (run in this folder): {command_line(argv)}",
        f"exit status: {outcome.rc}, {outcome.seconds:.2f} s",
        "",
        "output:",
        outcome.text.strip(),
    ]
    (directory / "README.txt").write_text("\n".join(info) + "\n", encoding="utf-8")
    return directory


def describe_data(plan: DataPlan | None) -> str:
    """A short account of a data file's contents, for a report."""
    if plan is None:
        return "(no data file)"
    import numpy as np

    parts = []
    for key, v in plan.arrays.items():
        if isinstance(v, np.ndarray):
            body = np.array2string(v.reshape(-1)[:6], precision=4, separator=", ")
            parts.append(f"{key!r}: {v.dtype}{list(v.shape)} {body}")
        else:
            text = json.dumps(v, default=str) if not isinstance(v, list) else repr(v)
            parts.append(f"{key!r}: {text[:80]}")
    damage = f", bytes damaged: {plan.damage[0]}" if plan.damage else ""
    return f"{plan.fmt} file *{plan.suffix}{damage}: " + ("; ".join(parts) or "(empty)")


if __name__ == "__main__":  # pragma: no cover - the worker process
    if "--worker" in sys.argv:
        limit = int(sys.argv[sys.argv.index("--memory-limit") + 1])
        _worker_main(limit)
