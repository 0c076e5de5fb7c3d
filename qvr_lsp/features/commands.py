"""`workspace/executeCommand`: `qvr.diagram`, `qvr.runInference` and `qvr.exportProgram`.

All answer with JSON any client can use. Failures the user can act on (an
unknown program, a file with errors, a data path outside the workspace, a NaN
loss, a cancelled or timed-out run) are protocol errors whose message says
what happened and `data.kind` says which; an unexpected failure is logged and
answered as an internal error, and the server goes on. `qvr.exportProgram`
(qvr_lsp/exports.py) answers a refusal as a result instead, `{"ok": false,
"message", "diagnostics"}`, since where a target cannot follow is part of its
answer; only arguments of the wrong shape are errors there.

Cancelling `qvr.runInference` with `$/cancelRequest` or with the progress
bar's cancel button (`window/workDoneProgress/cancel`) stops its worker.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pygls.exceptions import JsonRpcException, JsonRpcInternalError
from pygls.uris import to_fs_path

from qvr_lsp.command_errors import CommandError
from qvr_lsp.contract import (
    DIAGRAM,
    EXPORT_PROGRAM,
    RUN_INFERENCE,
    DiagramResult,
    ExportRefused,
    ExportWritten,
)

if TYPE_CHECKING:
    from qvr_core.check.module import CheckedModule
    from qvr_lsp.inference_request import InferenceRequest
    from qvr_lsp.inference_runs import InferenceRuns
    from qvr_lsp.run_data import DataSource
    from qvr_lsp.server import QvrLanguageServer

log = logging.getLogger("qvr_lsp")

#: The largest data file the server reads and hands to a worker (its raw bytes, when the
#: run starts; see run_data.py).
MAX_TRANSFER_BYTES = 256 << 20

Handler = Callable[..., Awaitable[Any]]

#: Imported on first use, or once the server is idle after its first diagnostics.
DEFERRED = (
    "qvr_lsp.command_sources",
    "qvr_lsp.datapaths",
    "qvr_lsp.diagrams",
    "qvr_lsp.exports",
    "qvr_lsp.inference_request",
    "qvr_lsp.inference_runs",
    "qvr_lsp.run_data",
    "qvr_core.export",
)


def register(server: QvrLanguageServer) -> None:
    # `*args` stays unannotated: pygls would take an annotated first parameter for the server.
    @server.command(DIAGRAM)
    @_command_guard(DIAGRAM)
    async def diagram(*args) -> DiagramResult:  # type: ignore[no-untyped-def]  # see above
        from qvr_lsp.diagrams import diagram_result

        return await diagram_result(server, args)

    @server.command(EXPORT_PROGRAM)
    @_command_guard(EXPORT_PROGRAM)
    async def export_program(*args) -> ExportWritten | ExportRefused:  # type: ignore[no-untyped-def]  # see above
        from qvr_lsp.exports import export_result

        return await export_result(server, args)

    @server.command(RUN_INFERENCE)
    @_command_guard(RUN_INFERENCE)
    async def run_inference(*args) -> dict[str, Any]:  # type: ignore[no-untyped-def]  # see above
        from qvr_lsp.command_sources import current_source
        from qvr_lsp.inference_request import InferenceRequest

        runs = inference_runs(server)
        request = InferenceRequest.from_arguments(args)
        token = server.command_progress_tokens.pop(server.protocol.msg_id, None)
        cancelled = _request_cancelled(server)
        runs.ensure_free(request.uri)  # before reading anything: the answer is immediate
        source = await current_source(server, request.uri)
        program = _program(source.module, request.run.program)
        data = await _data_file(server, request)
        path = to_fs_path(request.uri) if request.uri.startswith("file:") else None
        return await runs.run(request, source.text, program, data, cancelled, path, token)


def inference_runs(server: QvrLanguageServer) -> InferenceRuns:
    """The server's inference runs, made on the first run (`stop_work` stops them)."""
    runs: InferenceRuns | None = getattr(server, "inference_runs", None)
    if runs is None:
        from qvr_lsp.inference_runs import InferenceRuns

        runs = server.inference_runs = InferenceRuns(server)  # type: ignore[attr-defined]  # see `stop_work`
    return runs


def _command_guard(name: str) -> Callable[[Handler], Handler]:
    """User errors pass through as they are; a bug becomes one internal error, logged."""

    def decorate(handler: Handler) -> Handler:
        @functools.wraps(handler)
        async def wrapper(*args: Any) -> Any:
            try:
                return await handler(*args)
            except JsonRpcException:
                raise
            except Exception as exc:
                log.exception("%s failed", name)
                raise JsonRpcInternalError(f"{name} failed: {type(exc).__name__}: {exc}") from exc

        return wrapper

    return decorate


def _request_cancelled(server: QvrLanguageServer) -> Callable[[], bool]:
    """Whether the client sent `$/cancelRequest` for the request being handled.

    pygls answers a cancelled request itself but does not stop a command that
    is already running, so the run asks the request's future.
    """
    protocol = server.protocol
    msg_id = protocol.msg_id
    # pygls keeps no public handle on the request's future
    future = protocol._request_futures.get(msg_id) if msg_id is not None else None
    if future is None:
        return lambda: False
    return future.cancelled


def _program(module: CheckedModule, wanted: str | None) -> str:
    """The program to run: the one asked for, else the first exported program."""
    from qvr_core.plan.runnable import program_decl, runnability, runnable_programs

    if not module.ok:
        first = module.errors[0]
        raise CommandError(
            f"the file has errors; fix them before running (line {first.span.start_line + 1}: "
            f"{first.message})",
            "source",
        )
    programs = runnable_programs(module)
    runnable = [n for n in module.exports if n in programs]
    if wanted is None:
        if runnable:
            return runnable[0]
        # an exported program that cannot run says why; else there is nothing to run
        wanted = next((n for n in module.exports if program_decl(module, n) is not None), None)
        if wanted is None:
            raise CommandError("the file exports no program to run: add `export NAME`", "invalid")
    if wanted not in programs:
        if program_decl(module, wanted) is not None:
            reason = runnability(module, wanted).reason
            raise CommandError(reason or f"program {wanted} cannot run", "invalid")
        choices = ", ".join(programs) or "none"
        raise CommandError(f"no program named '{wanted}' (programs: {choices})", "invalid")
    if wanted not in runnable:
        raise CommandError(
            f"program {wanted} is not exported: add `export {wanted}` to run it", "invalid"
        )
    return wanted


async def _data_file(server: QvrLanguageServer, request: InferenceRequest) -> DataSource | None:
    """The data file, checked here (refused at once) and read when the run starts: the
    worker gets its bytes, never the path."""
    from qvr_core.host.datafile import DataFileError
    from qvr_lsp.run_data import check_data_file

    if request.run.data is None:
        return None
    path = _data_path(server, request)
    try:
        return await asyncio.to_thread(check_data_file, path, MAX_TRANSFER_BYTES)
    except DataFileError as exc:
        raise CommandError(str(exc), "data") from exc


def _data_path(server: QvrLanguageServer, request: InferenceRequest) -> Path:
    from qvr_lsp.datapaths import DataPathError, resolve_data_path, workspace_roots

    folders = [f.uri for f in server.workspace.folders.values()]
    root = server.workspace.root_uri
    if root and root not in folders:
        folders.insert(0, root)
    try:
        data = request.run.data
        assert data is not None  # _data_file asks only for a run with data
        return resolve_data_path(data, workspace_roots(folders, request.uri))
    except DataPathError as exc:
        raise CommandError(str(exc), "data") from exc
