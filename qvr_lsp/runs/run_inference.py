"""`qvr.runInference`: a run of the current text's program in a worker process.

The answer is the run's summary as JSON. Failures the user can act on (an unknown
program, a file with errors, a data path outside the workspace, a NaN loss, a
cancelled or timed-out run) are protocol errors whose message says what happened
and `data.kind` says which; an unexpected failure is one internal error, logged, and
the server goes on (`analysis.handlers.dispatch`).

Cancelling `qvr.runInference` with `$/cancelRequest` or with the progress
bar's cancel button (`window/workDoneProgress/cancel`) stops its worker.

The session owns the runs (`InferenceRuns`, made on the first run or the first Run
lens); the composition root (`qvr_lsp.app`) connects `prepare` to the code lenses and
`stop` to the server's `exit`. This module is imported at the server's start: what
the runs need is imported on the first run.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pygls.uris import to_fs_path

from qvr_lsp.protocol.command_errors import CommandError

if TYPE_CHECKING:
    from qvr_core.check.module import CheckedModule
    from qvr_lsp.analysis.kinds import Open
    from qvr_lsp.analysis.session import Session
    from qvr_lsp.protocol.server import QvrLanguageServer
    from qvr_lsp.runs.inference_request import InferenceRequest
    from qvr_lsp.runs.inference_runs import InferenceRuns
    from qvr_lsp.runs.run_data import DataSource

#: The largest data file the server reads and hands to a worker (its raw bytes, when the
#: run starts; see run_data.py).
MAX_TRANSFER_BYTES = 256 << 20

#: Imported on first use, or once the server is idle after its first diagnostics.
DEFERRED = (
    "qvr_lsp.analysis.command_sources",
    "qvr_lsp.runs.datapaths",
    "qvr_lsp.runs.inference_request",
    "qvr_lsp.runs.inference_runs",
    "qvr_lsp.runs.run_data",
)


async def run_inference(session: Session, args: tuple[Any, ...], open_documents: Open) -> Any:
    from qvr_lsp.runs.inference_request import InferenceRequest

    server = session.server
    runs = inference_runs(session)
    request = InferenceRequest.from_arguments(args)
    # both read before the first await: they are the request being handled's
    token = server.command_progress_tokens.pop(server.protocol.msg_id, None)
    cancelled = server.request_cancelled()
    runs.ensure_free(request.uri)  # before reading anything: the answer is immediate
    source = await open_documents.current_source(request.uri)
    program = _program(source.module, request.run.program)
    data = await _data_file(server, request)
    path = to_fs_path(request.uri) if request.uri.startswith("file:") else None
    return await runs.run(request, source.text, program, data, cancelled, path, token)


def _runs(session: Session) -> InferenceRuns:
    from qvr_lsp.runs.inference_runs import InferenceRuns

    return InferenceRuns(session.server)


def inference_runs(session: Session) -> InferenceRuns:
    """The session's inference runs, made on the first run (`stop` stops them)."""
    return session.own(_runs)


def prepare(session: Session) -> None:
    """A Run lens is shown: have a worker loaded before it is clicked (`spare_worker`)."""
    inference_runs(session).prepare_spare()


def stop(session: Session) -> None:
    """At `exit`: kill the workers, if a run or a lens made any (never importing the runs)."""
    runs = session.owned(_runs)
    if runs is not None:
        runs.kill_all()


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
    from qvr_lsp.runs.run_data import check_data_file

    if request.run.data is None:
        return None
    path = _data_path(server, request)
    try:
        return await asyncio.to_thread(check_data_file, path, MAX_TRANSFER_BYTES)
    except DataFileError as exc:
        raise CommandError(str(exc), "data") from exc


def _data_path(server: QvrLanguageServer, request: InferenceRequest) -> Path:
    from qvr_lsp.runs.datapaths import DataPathError, resolve_data_path, workspace_roots

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
