"""Inference runs: one per document, each in a worker process the server can stop.

The server never imports torch: it starts `python -m qvr_lsp.runs.worker`, writes
the request to its stdin and reads its JSON events. A run ends with the
worker's summary, or with a `CommandError` that says what happened: the
client cancelled, the wall-clock limit passed, the worker ran out of memory
or crashed, the loss became NaN, the data could not be read. Whatever
happens, the worker process is gone when `run` returns. At most
`QVR_INFERENCE_WORKERS` workers (one per core by default) are alive at once;
further runs wait in order (`worker_slots`). A worker also ends when the
server does, even if the server is killed (see `worker._die_with_parent`).

Limits come from the environment (`QVR_INFERENCE_TIMEOUT_SECONDS`,
`QVR_INFERENCE_MEMORY_MB`); a request may ask for less, never more.

A run waiting for a worker holds nothing but its request: its data file is
read when its worker starts, held once for every run of the same file
(`run_data`), and the request and the data are written to the worker by a
thread (the JSON line, then the raw bytes), never encoded on the event loop.
A run takes the spare worker when there is one (`spare_worker`: started ahead,
torch already loaded) and has the next spare started.

The result is the worker's summary with the run view's data under `view`
(`qvr_core.posterior.view.fit_view`, bounded there: some 5 MB at most), which the
server passes on as it came: it never reads the draws. For the view's model
comparison the server names a private directory (`keep_dir`, one per server,
removed at exit) in each NUTS and SVI request, where the worker keeps the last
runs (`kept_runs`); the server never opens them.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import itertools
import json
import logging
import os
import signal
import sys
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from qvr_core.host.datafile import DataFile, DataFileError
from qvr_core.host.extras import RUN_MODULES, missing
from qvr_core.plan.run_arguments import without_launch
from qvr_lsp.analysis.children import (
    PACKAGE_ROOT,
    STOP_GRACE_SECONDS,
    child_environment,
    python_module,
    stop_child,
    write_all,
)
from qvr_lsp.protocol.command_errors import CommandError
from qvr_lsp.runs.inference_request import InferenceRequest
from qvr_lsp.runs.keep_dirs import make_keep_dir, remove_keep_dir
from qvr_lsp.runs.run_data import DataFiles, DataSource
from qvr_lsp.runs.run_progress import RunProgress
from qvr_lsp.runs.spare_worker import WARM_VARIABLE, SpareWorker
from qvr_lsp.runs.worker_slots import WorkerSlots

if TYPE_CHECKING:
    from qvr_lsp.protocol.server import QvrLanguageServer

log = logging.getLogger("qvr_lsp")

DEFAULT_TIMEOUT_SECONDS = 900.0
DEFAULT_MEMORY_MB = 4096
POLL_SECONDS = 0.05
EVENT_LINE_LIMIT = 1 << 26  # a summary with a long loss series is one line
#: The request and the data go to a worker in pieces of this size.
TRANSFER_CHUNK_BYTES = 1 << 20
#: Started by `children.python_module`: a `torch.py` or `numpy.py` in the workspace
#: is never imported in place of the real one.
WORKER_COMMAND = python_module("qvr_lsp.runs.worker")
#: The methods whose runs the worker keeps for the run view's model comparison.
KEPT_METHODS = ("nuts", "svi")


@dataclass(frozen=True)
class RunLimits:
    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS
    memory_mb: int = DEFAULT_MEMORY_MB

    @classmethod
    def from_environment(cls) -> RunLimits:
        return cls(
            _env_number("QVR_INFERENCE_TIMEOUT_SECONDS", DEFAULT_TIMEOUT_SECONDS),
            int(_env_number("QVR_INFERENCE_MEMORY_MB", DEFAULT_MEMORY_MB)),
        )

    def for_request(self, request: InferenceRequest) -> RunLimits:
        timeout = min(request.timeout or self.timeout_seconds, self.timeout_seconds)
        memory = min(request.memory_mb or self.memory_mb, self.memory_mb)
        return RunLimits(timeout, memory)


class _Stopped(Exception):
    """The run was stopped from outside: `kind` is "cancelled" or "timeout"."""

    def __init__(self, kind: str) -> None:
        super().__init__(kind)
        self.kind = kind


class InferenceRuns:
    """The runs of one server, by document URI."""

    def __init__(self, server: QvrLanguageServer, limits: RunLimits | None = None) -> None:
        self.server = server
        self.limits = limits or RunLimits.from_environment()
        self._active: dict[str, RunProgress] = {}
        self._processes: set[asyncio.subprocess.Process] = set()
        self._ids = itertools.count(1)
        #: at most this many workers at once (one per core by default); more runs wait
        self.slots = WorkerSlots()
        #: the data files of the runs starting now, each held once
        self.data = DataFiles()
        #: writes requests and data to workers (a thread each, never the event loop)
        self._transfers = ThreadPoolExecutor(
            max(2, self.slots.size), thread_name_prefix="qvr-transfer"
        )
        #: one worker started ahead of the next run (`spare_worker`)
        self.spare = SpareWorker(_start_worker)
        #: the runs kept for the run view's comparison (`kept_runs`), made at the first
        #: NUTS or SVI run: private (0700), never in the workspace, removed at exit
        self._keep_dir: str | None = None
        atexit.register(self.kill_all)

    def keep_dir(self) -> str:
        """This server's directory of kept runs, made (again, if something removed it)
        when a run needs it."""
        if self._keep_dir is None or not os.path.isdir(self._keep_dir):
            self._keep_dir = make_keep_dir()  # mode 0700; dead servers' folders removed
        return self._keep_dir

    def remove_keep_dir(self) -> None:
        """The kept runs go with the server."""
        directory, self._keep_dir = self._keep_dir, None
        if directory is not None:
            remove_keep_dir(directory)  # and its lock (`keep_dirs`)

    def ensure_free(self, uri: str) -> None:
        """One run per document: a second one is refused with a clear error."""
        other = self._active.get(uri)
        if other is not None:
            raise CommandError(
                f"an inference run ({other.method}, run {other.run_id}) is already going for "
                "this document: wait for it or cancel it first",
                "busy",
            )

    async def run(
        self,
        request: InferenceRequest,
        source: str,
        program: str,
        data: DataSource | None,
        cancelled: Callable[[], bool],
        source_path: str | None = None,
        progress_token: str | int | None = None,
    ) -> dict[str, Any]:
        """Run to the end and return the summary; `cancelled()` is polled while it goes.

        `progress_token` is the request's workDoneToken: progress is reported on
        it instead of on a token the server creates, so the client shows one bar.
        `data` is read when the run's worker starts (see run_data.py).
        """
        uri = request.uri
        self.ensure_free(uri)
        ensure_run_support()
        limits = self.limits.for_request(request)
        progress = RunProgress(
            self.server,
            uri,
            next(self._ids),
            request.run.method,
            request.run.steps,
            progress_token,
        )
        self._active[uri] = progress
        outcome = "failed"
        started = time.monotonic()
        try:
            await progress.begin(f"QVR {request.run.method.upper()}: {program}")
            payload = {
                "source": source,
                "path": source_path,
                **request.job_arguments(self.server.settings.memory_budget),
                "program": program,
                "memory_mb": limits.memory_mb,
            }
            if request.run.method in KEPT_METHODS:
                payload["keep_dir"] = self.keep_dir()
            summary = await self._in_turn(payload, data, progress, limits, cancelled)
            outcome = "done"
        except _Stopped as stop:
            outcome = stop.kind
            raise _stopped_error(stop.kind, progress, limits) from None
        except CommandError as exc:
            outcome = f"failed: {exc.message}"
            raise
        finally:
            del self._active[uri]
            progress.flush()
            progress.end(_end_message(outcome, time.monotonic() - started))
        return {
            **summary,
            "runId": progress.run_id,
            "method": request.run.method,
            "program": program,
            "status": "completed",
        }

    # ------------------------------------------------------------ process

    async def _in_turn(
        self,
        payload: dict[str, Any],
        data: DataSource | None,
        progress: RunProgress,
        limits: RunLimits,
        cancelled: Callable[[], bool],
    ) -> dict[str, Any]:
        """Wait for a worker slot (cancellable), then run; the slot is freed in any case."""

        def stop_reason() -> str | None:
            return "cancelled" if cancelled() or progress.cancel_requested() else None

        count = _processes(payload)
        reason = await self.slots.acquire(stop_reason, progress.queued, count)
        if reason is not None:
            raise _Stopped(reason)
        try:
            return await self._supervise(payload, data, progress, limits, cancelled)
        finally:
            self.slots.release(count)

    async def _supervise(
        self,
        payload: dict[str, Any],
        source: DataSource | None,
        progress: RunProgress,
        limits: RunLimits,
        cancelled: Callable[[], bool],
    ) -> dict[str, Any]:
        """Start the worker, hand it the request and the data, and follow its events."""
        data: DataFile | None = None
        release: Callable[[], None] = _nothing
        if source is not None:
            try:  # read now that the run starts, shared with the other runs of the file
                data, release = await self.data.acquire(source)
            except DataFileError as exc:
                raise CommandError(str(exc), "data") from exc
        spare = await self.spare.take()
        if spare is not None:  # started earlier: Python and torch are loaded already
            proc, writing = spare
        else:
            try:
                reading, writing = os.pipe()
            except BaseException:
                release()
                raise
            try:
                proc = await _start_worker(reading, warm=False)
            except BaseException:
                os.close(writing)
                release()
                raise
            finally:
                os.close(reading)
        self._processes.add(proc)
        self.prepare_spare()  # the next run's worker loads while this one runs
        loop = asyncio.get_running_loop()
        try:
            transfer = loop.run_in_executor(self._transfers, _send_request, writing, payload, data)
        except BaseException:  # the server is stopping: no thread to write with
            os.close(writing)
            release()
            self._processes.discard(proc)
            await stop_child(proc)
            raise
        transfer.add_done_callback(lambda _: release())  # the worker has the bytes now
        del data  # held by the transfer until it is done, then let go
        progress.worker_pid = proc.pid
        stderr_tail: deque[str] = deque(maxlen=40)
        assert proc.stderr is not None  # stderr=PIPE
        drain = asyncio.ensure_future(_drain(proc.stderr, stderr_tail))
        deadline = time.monotonic() + limits.timeout_seconds

        def stop_reason() -> str | None:
            if cancelled() or progress.cancel_requested():
                return "cancelled"
            return "timeout" if time.monotonic() > deadline else None

        try:
            assert proc.stdout is not None
            while True:
                line = await _readline(proc.stdout, stop_reason)
                if not line:
                    break
                result = _handle_event(line, progress)
                if result is not None:
                    return result
            returncode = await proc.wait()
            await asyncio.wait_for(drain, STOP_GRACE_SECONDS)
            raise _crash_error(returncode, stderr_tail, limits)
        finally:
            await stop_child(proc)
            drain.cancel()
            self._processes.discard(proc)
            # the worker is gone: a transfer still writing fails at once (a broken pipe)
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.shield(transfer), STOP_GRACE_SECONDS)

    def prepare_spare(self) -> None:
        """Have a worker loaded for the next Run (a document shows a runnable program, or
        a run took the last spare), if a worker slot is free and no run waits for one:
        the spare counts against `QVR_INFERENCE_WORKERS` as a running worker does. (The
        slots, not the processes alive, decide: a run holding a slot may be starting its
        worker right now.)"""
        if self.slots.busy < self.slots.size and not self.slots.waiting and run_support():
            self.spare.prepare()

    def kill_all(self) -> None:
        """At exit: no worker outlives the server."""
        self.spare.kill()
        for proc in list(self._processes):
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
        self._transfers.shutdown(wait=False, cancel_futures=True)
        self.remove_keep_dir()


# ------------------------------------------------------------------ events


def _processes(payload: dict[str, Any]) -> int:
    """How many processes the run keeps busy: NUTS runs a process per chain (up to a
    core each, `qvr_core.inference.chains`), every other method one."""
    if payload.get("method") != "nuts":
        return 1
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        cores = os.cpu_count() or 1
    return max(1, min(int(payload.get("chains") or 1), cores))


def _nothing() -> None:
    return None


def _send_request(fd: int, payload: dict[str, Any], data: DataFile | None) -> None:
    """In a thread: the request's JSON line, then the data's raw bytes (`worker.read_request`),
    written to the worker's stdin in pieces, never copied whole; `fd` is closed at the end."""
    request = dict(payload)
    if data is not None:
        request["data_name"] = data.name
        request["data_size"] = len(data.content)
    line = json.dumps(request).encode() + b"\n"
    write_all(fd, line, data.content if data is not None else b"", chunk=TRANSFER_CHUNK_BYTES)


def _handle_event(line: bytes, progress: RunProgress) -> dict[str, Any] | None:
    """Progress events update the client; the result returns the summary (with the view's
    data under "view"); errors raise."""
    try:
        event = json.loads(line)
    except ValueError:
        log.warning("inference worker wrote a line that is not an event: %r", line[:200])
        return None
    kind = event.get("event")
    if kind == "progress":
        total = event.get("total")
        points = event.get("points")
        if not isinstance(points, list):  # a worker of an older qvr: one step a line
            points = [[event.get("step", 0), event.get("loss")]]
        for point in points:
            if isinstance(point, list) and len(point) == 2:
                progress.point(int(point[0]), point[1], int(total) if total else None)
    elif kind == "update" and isinstance(event.get("live"), dict):
        progress.update(event["live"])
        return None
    if kind == "result":
        summary = event.get("summary")
        result = summary if isinstance(summary, dict) else {"result": summary}
        view = event.get("view")
        return {**result, "view": view} if isinstance(view, dict) else result
    if kind == "error":
        raise CommandError(str(event.get("message", "the run failed")), event.get("kind", "error"))
    return None


async def _readline(stream: asyncio.StreamReader, stop_reason: Callable[[], str | None]) -> bytes:
    """The next line, polling `stop_reason` so a silent worker can still be stopped."""
    task = asyncio.ensure_future(stream.readline())
    try:
        while True:
            reason = stop_reason()  # first: a chatty worker must not starve the check
            if reason is not None:
                raise _Stopped(reason)
            done, _ = await asyncio.wait({task}, timeout=POLL_SECONDS)
            if done:
                return task.result()
    finally:
        if not task.done():
            task.cancel()


async def _drain(stream: asyncio.StreamReader, tail: deque[str]) -> None:
    """Keep the worker's stderr flowing (a full pipe would block it) and its last lines."""
    while line := await stream.readline():
        text = line.decode("utf-8", "replace").rstrip()
        tail.append(text)
        log.debug("inference worker: %s", text)


# ------------------------------------------------------------------ errors


def _stopped_error(kind: str, progress: RunProgress, limits: RunLimits) -> CommandError:
    if kind == "timeout":
        return CommandError(
            f"inference run {progress.run_id} was stopped after {limits.timeout_seconds:g} s, "
            "the time limit: ask for fewer steps or a smaller batch",
            "timeout",
        )
    return CommandError(f"inference run {progress.run_id} was cancelled", "cancelled", code=-32800)


def _crash_error(returncode: int, tail: deque[str], limits: RunLimits) -> CommandError:
    last = next((line for line in reversed(tail) if line.strip()), "")
    if returncode < 0:
        name = signal.Signals(-returncode).name if -returncode in signal.valid_signals() else ""
        why = f"was killed by signal {-returncode} {name}".rstrip()
        hint = (
            f"; it may have run out of memory (limit {limits.memory_mb} MiB)"
            if -returncode == signal.SIGKILL
            else ""
        )
        return CommandError(f"the inference worker {why}{hint}", "crashed")
    detail = f": {last}" if last else ""
    return CommandError(
        f"the inference worker stopped (exit status {returncode}) without a result{detail}",
        "crashed",
    )


def _end_message(outcome: str, seconds: float) -> str:
    return f"{outcome} after {seconds:.1f} s"


def run_support() -> bool:
    """Whether this Python can run programs: the worker is this interpreter, and a plain
    `pip install qvr` leaves torch out."""
    return not missing(RUN_MODULES)


def ensure_run_support() -> None:
    """A run refused in one line naming what to install, before any worker starts."""
    if not run_support():
        raise CommandError(
            "running a program needs torch, which is not installed with this server "
            f"({sys.executable}): install qvr's run support there with "
            "pip install 'qvr[run]'",
            "run-support",
        )


async def _start_worker(stdin: int, warm: bool) -> asyncio.subprocess.Process:
    """`python -m qvr_lsp.runs.worker` reading its request from `stdin`; a `warm` one loads
    the runtime before the request arrives (`spare_worker`)."""
    env = _worker_environment()
    if warm:
        env[WARM_VARIABLE] = "1"
    return await asyncio.create_subprocess_exec(
        *WORKER_COMMAND,
        stdin=stdin,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
        cwd=PACKAGE_ROOT,  # never the workspace: see WORKER_COMMAND
        limit=EVENT_LINE_LIMIT,
        start_new_session=True,  # a terminal's Ctrl-C for the server is not for the run
    )


# ------------------------------------------------------------- environment


def _worker_environment() -> dict[str, str]:
    """The server's environment for a worker (`children.child_environment`), without
    torchrun's variables: a server started from a shell that has them left over (or by
    torchrun) must not make each run wait for a process group (`run_arguments`)."""
    return without_launch(child_environment())


def _env_number(name: str, default: float) -> float:
    try:
        value = float(os.environ.get(name, default))
    except ValueError:
        log.warning("%s is not a number; using %s", name, default)
        return default
    return value if value > 0 else default
