"""The inference worker: one run in a process of its own (`python -m qvr_lsp.runs.worker`).

A crash, an out-of-memory or a runaway run then costs the run, never the
language server, and the server stops a run by ending this process. This is
the only part of `qvr_lsp` that imports torch (through
`qvr_core.runs`).

Protocol: the request is one JSON object on the first line of stdin
(`qvr_core.runs.run_program`'s arguments). A data file comes as its bytes,
read once by the server (the worker never opens a path the client named):
`data_name` and `data_size` in the request, and exactly `data_size` raw
bytes after its line (older servers sent them base64 in `data_base64`,
which is still read). Events are JSON lines on stdout:

    {"event": "progress", "total": 500, "points": [[119, 3.25], [120, 3.21]]}
        (the steps since the last such event, written at most every `PROGRESS_SECONDS`:
        a line per step, 8,000 for NUTS 4 x 2,000, cost the run about a second; servers
        also read the older one-step form, {"event": "progress", "step": 120,
        "total": 500, "loss": 3.21})
    {"event": "update", "live": {...}}   (NUTS: draws so far, see qvr_core.inference.live)
    {"event": "result", "summary": {...}, "view": {...}}
        (RunSummary.to_json(); the run view's data, `qvr_core.posterior.view.fit_view`,
        with the model comparison of the runs kept in the request's `keep_dir`: `kept_runs`)
    {"event": "error", "kind": "nan" | "inference" | "size" | "memory" | "error", "message": "..."}

Anything else the run prints goes to stderr, so it cannot corrupt the protocol.

The run keeps its draws (`RunResults`) for the view; a NUTS run also draws the
observed sites again under each draw (`predictive`, for the predictive check) when
that is cheap and small (`qvr_core.runs.predictive`: the draws run together, or one
forward run per draw where they cannot be), for at most `PREDICTIVE_MAX_DRAWS`
draws and arrays of at most some 128 MiB (`predictive_refusal`). A view that cannot be computed
costs the view (`{"error": ...}`), never the run.
"""

from __future__ import annotations

import base64
import contextlib
import json
import math
import os
import resource
import sys
import time
import traceback
from pathlib import Path
from typing import IO, Any, BinaryIO

from qvr_core.host.datafile import DataFile
from qvr_core.sizing.resources import address_space_left
from qvr_lsp.analysis import lifeline
from qvr_lsp.analysis.lifeline import (  # noqa: F401  # the names this module has always had
    EXIT_ORPHANED,
    MIB,
    PARENT_POLL_SECONDS,
    PR_SET_PDEATHSIG,
    SERVER_PID_VARIABLE,
)
from qvr_lsp.runs.spare_worker import WARM_VARIABLE

#: How much lower than the server a run is scheduled: the user typing comes first.
NICENESS = 10
#: Progress points are written together, at most this often (the last at the run's end).
PROGRESS_SECONDS = 0.05
#: Posterior predictive draws for the view: at most this many (chains x draws) ...
PREDICTIVE_MAX_DRAWS = 8000
#: ... and at most this many draws x data bytes. A text data file holds at most one
#: observation per 2 bytes, a binary one per byte: the arrays (float64) stay under 128 MiB.
PREDICTIVE_MAX_DRAW_BYTES = 1 << 24
#: The bytes a run without a data file counts per synthetic value (batch x seq_len).
SYNTHETIC_VALUE_BYTES = 8
_die_with_parent = lifeline.die_with_parent
_set_parent_death_signal = lifeline.set_parent_death_signal
_watch_parent = lifeline.watch_parent
_server_pid = lifeline.server_pid


def main() -> int:
    parent = _die_with_parent()
    lifeline.lower_priority(NICENESS)
    protocol = _protocol_stream()
    if os.environ.get(WARM_VARIABLE) == "1":  # a spare: load now, the request comes later
        _load_runtime()
    try:
        request = read_request(sys.stdin.buffer)
    except ValueError as exc:
        _emit(protocol, {"event": "error", "kind": "error", "message": f"bad request: {exc}"})
        return 2
    try:
        keep_dir = _keep_dir(request.pop("keep_dir", None))
    except ValueError as exc:
        _emit(protocol, {"event": "error", "kind": "error", "message": f"bad request: {exc}"})
        return 2
    _limit_memory(request.pop("memory_mb", None))
    if address_space_left() == 0:  # a spare that loaded more than the run's limit allows
        _emit(protocol, _memory_error())
        return 1
    try:
        summary, view = _run(request, protocol, parent, keep_dir)
    except MemoryError:
        _emit(protocol, _memory_error())
        return 1
    except Exception as exc:
        traceback.print_exc()
        _emit(protocol, {"event": "error", "kind": _kind(exc), "message": _message(exc)})
        return 1
    _emit(protocol, {"event": "result", "summary": _finite(summary), "view": view})
    return 0


def _load_runtime() -> None:
    """Import torch and the runtime ahead of the request, and ArviZ, which the run's
    view and model comparison read once it ends (1.3 to 2.6 s of imports the user
    waited for after the draws; some 250 MB more held by the spare, which the run would
    take anyway). A failure here is left for the run itself to meet and report."""
    with contextlib.suppress(Exception):  # reported by the run, in its words
        import qvr_core.runs.run  # noqa: F401  # loaded for the run to come
        from qvr_core.inference.results import have_arviz, load_arviz

        if have_arviz():
            load_arviz()
            import qvr_lsp.runs.kept_runs  # noqa: F401  # the comparison of kept runs


def _keep_dir(value: object) -> Path | None:
    """The request's `keep_dir` (None without one); ValueError for one that is not an
    existing directory this process can write (`kept_runs.check_keep_dir`)."""
    if value is None:
        return None
    from qvr_lsp.runs.kept_runs import check_keep_dir

    return check_keep_dir(value)


def _run(
    request: dict[str, Any], protocol: IO[str], parent: int, keep_dir: Path | None = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The run's summary and its view's data."""
    from qvr_core.inference.results import RunResults
    from qvr_core.runs.run import run_program

    progress = _ProgressPoints(protocol)

    def on_update(live: dict[str, Any]) -> None:
        _emit(protocol, {"event": "update", "live": _finite(live)})

    def should_stop() -> bool:
        return os.getppid() != parent  # the server is gone: nobody waits for the result

    source = request.pop("source")
    data = _data_file(
        request.pop("data_name", None),
        request.pop("data_base64", None),
        request.pop("data_bytes", None),
    )
    refusal = predictive_refusal(request, len(data.content) if data is not None else None)
    results = RunResults()
    summary = run_program(
        source,
        **request,
        data=data,
        on_progress=progress.add,
        on_update=on_update,
        should_stop=should_stop,
        results=results,
        predictive=request.get("method") == "nuts" and refusal is None,
    )
    progress.flush()
    view = fit_view_of(results)
    if refusal is not None and "error" not in view:
        view["ppc_note"] = refusal
    if keep_dir is not None and "error" not in view:
        view.update(comparison_of(results, request, keep_dir))
    return summary.to_json(), view


class _ProgressPoints:
    """The run's progress points, written as one event per `PROGRESS_SECONDS` or so."""

    def __init__(self, protocol: IO[str], clock: Any = time.monotonic) -> None:
        self.protocol, self.clock = protocol, clock
        self.points: list[list[float | None]] = []
        self.total = 0
        self.written = clock()

    def add(self, step: int, total: int, loss: float) -> None:
        self.points.append([step, loss])
        self.total = total
        if step >= total or self.clock() - self.written >= PROGRESS_SECONDS:
            self.flush()

    def flush(self) -> None:
        if self.points:
            event = {"event": "progress", "total": self.total, "points": self.points}
            _emit(self.protocol, _finite(event))
            self.points = []
        self.written = self.clock()


def comparison_of(results: Any, request: dict[str, Any], keep_dir: Path) -> dict[str, Any]:
    """The view's `comparison` (or `comparison_note`) of a completed NUTS or SVI run, which
    is kept in `keep_dir` for the runs to come (`kept_runs`); nothing for other runs. A
    failure costs the comparison (a note), never the run or its view."""
    from qvr_lsp.runs import kept_runs

    if request.get("method") not in ("nuts", "svi"):
        return {}
    if results.attrs.get("status", "complete") != "complete":
        return {"comparison_note": "no model comparison: the run was stopped before its end"}
    key = kept_runs.run_key(request.get("path"), request.get("program"))
    try:
        found: dict[str, Any] = _finite(kept_runs.comparison_view(results, keep_dir, key))
        json.dumps(found, allow_nan=False)
    except Exception as exc:  # the run and its view stand
        traceback.print_exc()
        return {"comparison_note": f"no model comparison: {type(exc).__name__}: {exc}"}
    return found


def predictive_refusal(request: dict[str, Any], data_bytes: int | None) -> str | None:
    """Why a NUTS run draws no posterior predictive for the view, or None when it does:
    the draws (chains x draws after warmup) or draws x data bytes over their bounds."""
    if request.get("method") != "nuts":
        return None
    steps, chains = int(request.get("steps") or 0), int(request.get("chains") or 1)
    draws = chains * (steps - steps // 2)
    if data_bytes is None:
        batch, length = int(request.get("batch") or 1), int(request.get("seq_len") or 1)
        data_bytes = batch * length * SYNTHETIC_VALUE_BYTES
    if draws > PREDICTIVE_MAX_DRAWS:
        return (
            f"no posterior predictive draws in the editor for {draws:,} draws (at most "
            f"{PREDICTIVE_MAX_DRAWS:,}): `qvr run --predictive --output run.nc` and `qvr plot "
            "--kind ppc` draw them all"
        )
    if draws * max(1, data_bytes) > PREDICTIVE_MAX_DRAW_BYTES:
        return (
            f"no posterior predictive draws in the editor for {draws:,} draws of "
            f"{data_bytes:,} bytes of data (too large to keep beside the run): "
            "`qvr run --predictive --output run.nc` and `qvr plot --kind ppc` draw them"
        )
    return None


def fit_view_of(results: Any) -> dict[str, Any]:
    """`fit_view(results)`, checked to be JSON; a failure is the view's error, not the run's."""
    from qvr_core.posterior.view import fit_view

    try:
        view = fit_view(results)
        json.dumps(view, allow_nan=False)
    except Exception as exc:  # the run succeeded: its summary goes out in any case
        traceback.print_exc()
        return {"error": f"the fit view could not be computed: {type(exc).__name__}: {exc}"}
    return view


def read_request(stream: BinaryIO) -> dict[str, Any]:
    """The request: its JSON line, then `data_size` raw bytes of data when it says so.

    The raw bytes are kept as `data_bytes`; a request of the older form (one
    JSON object, data in base64) is read as it is.
    """
    line = stream.readline()
    try:
        request = json.loads(line)
    except ValueError:  # an object over several lines: the older form, whole
        request = json.loads(line + stream.read())
    if not isinstance(request, dict):
        raise ValueError("the request is not a JSON object")
    size = request.pop("data_size", None)
    if size is not None:
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            raise ValueError(f"data_size must be a byte count, not {size!r}")
        content = stream.read(size)
        if len(content) != size:
            raise ValueError(f"the data ended after {len(content):,} of {size:,} bytes")
        request["data_bytes"] = content
    return request


def _data_file(name: object, encoded: object, raw: object = None) -> DataFile | None:
    """The data file the server read, from its bytes (None without data)."""
    if isinstance(raw, bytes):
        return DataFile(str(name), raw)
    if encoded is None:
        return None
    return DataFile(str(name), base64.b64decode(str(encoded), validate=True))


def _protocol_stream() -> IO[str]:
    """A private copy of stdout for events; fd 1 then points at stderr."""
    stream = os.fdopen(os.dup(sys.stdout.fileno()), "w", encoding="utf-8", buffering=1)
    sys.stdout.flush()
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    return stream


def _emit(stream: IO[str], event: dict[str, Any]) -> None:
    stream.write(json.dumps(event, allow_nan=False, default=_plain) + "\n")
    stream.flush()


def _plain(value: Any) -> Any:
    """Tensors and numpy values in a summary, as JSON numbers and lists."""
    if hasattr(value, "tolist"):
        return _finite(value.tolist())
    return str(value)


def _limit_memory(megabytes: object) -> None:
    """Cap the address space, so a run that would exhaust memory fails with MemoryError."""
    lifeline.limit_memory(megabytes)


def _memory_error() -> dict[str, Any]:
    soft, _hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = "" if soft == resource.RLIM_INFINITY else f" (limit {soft // MIB} MiB)"
    return {
        "event": "error",
        "kind": "memory",
        "message": f"the inference worker ran out of memory{limit} before the run was sized "
        "(loading torch or the program): allow more memory (memory_mb, QVR_INFERENCE_MEMORY_MB)",
    }


def _kind(exc: Exception) -> str:
    """A coarse class of the failure, for clients that react differently."""
    names = {cls.__name__ for cls in type(exc).__mro__}
    if "NonFiniteLossError" in names:
        return "nan"
    if "RunTooLargeError" in names:
        return "size"  # refused before allocating: the estimate is over the budget
    if "RunOutOfMemoryError" in names:
        return "memory"
    if names & {"InferenceError", "QvrRuntimeError"}:
        return "inference"  # a problem the user can fix, in words the user reads
    text = str(exc).lower()
    signs = ("out of memory", "can't allocate memory", "cannot allocate memory", "failed to map")
    if any(sign in text for sign in signs):  # torch's allocator, or loading its libraries
        return "memory"
    return "error"


def _message(exc: Exception) -> str:
    text = str(exc).strip()
    if _kind(exc) == "memory" and type(exc).__name__ == "RunOutOfMemoryError":
        return f"{text} (or allow more memory: memory_mb, QVR_INFERENCE_MEMORY_MB)"
    if _kind(exc) == "size":
        return text
    if _kind(exc) == "memory":
        return f"{_memory_error()['message']} ({type(exc).__name__}: {text})"
    if _kind(exc) in ("nan", "inference"):
        return text or type(exc).__name__
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _finite(value: Any) -> Any:
    """JSON has no NaN or infinity: such numbers become null."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


if __name__ == "__main__":
    sys.exit(main())
