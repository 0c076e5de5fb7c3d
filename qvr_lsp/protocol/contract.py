"""The server's own commands, requests and notifications: names and payload fields, once.

Clients other than VS Code (Neovim's configuration in docs/editors.md, tests,
scripts) read what docs/lsp.md ("The contract") says, and the VS Code client
declares the same payloads in `vscode-extension/src/shared/protocol.ts`. Each
payload the server builds is one of the `TypedDict`s below, so mypy holds every
key the handlers write to it; the arguments it takes are the names below, and a
name outside them is refused. `tests/lsp/test_protocol_contract.py` compares
these with the table in docs/lsp.md and the interfaces in protocol.ts, so a
payload changed on one side only fails there (as rust-analyzer's tidy test ties
its documented LSP extensions to the code).

A field name ending in `?` may be left out. (No `from __future__ import annotations`
here: `NotRequired` must be seen when the classes are made, for `fields` to read it.)
"""

from typing import Literal, NotRequired, TypedDict

from qvr_core.plan.run_arguments import FIELDS as RUN_FIELDS

#: `workspace/executeCommand` commands.
DIAGRAM = "qvr.diagram"
RUN_INFERENCE = "qvr.runInference"
EXPORT_PROGRAM = "qvr.exportProgram"
#: Requests of the server's own.
SERVER_STATUS = "qvr/serverStatus"
#: Notifications the server sends.
INFERENCE_PROGRESS = "qvr/inferenceProgress"

COMMANDS = (DIAGRAM, RUN_INFERENCE, EXPORT_PROGRAM)
REQUESTS = (SERVER_STATUS,)
NOTIFICATIONS = (INFERENCE_PROGRESS,)

#: The arguments each command takes as one object (a code lens may send them positionally).
DIAGRAM_ARGUMENTS = ("uri", "name?", "format?")
#: `qvr run`'s arguments (`qvr_core.plan.run_arguments`), and the server's limits for the run.
RUN_INFERENCE_ARGUMENTS = ("uri", *(f"{f}?" for f in RUN_FIELDS), "timeout?", "memory_mb?")
EXPORT_ARGUMENTS = ("uri", "program?", "target?")


def names(arguments: tuple[str, ...]) -> frozenset[str]:
    """The argument names without their `?`."""
    return frozenset(a.removesuffix("?") for a in arguments)


class PositionJson(TypedDict):
    line: int
    character: int


class RangeJson(TypedDict):
    start: PositionJson
    end: PositionJson


class DiagramNode(TypedDict):
    """One node of a diagram, for a click to jump to its source and its tooltip."""

    id: str
    label: str
    kind: str
    type: str
    dims: str
    errors: list[str]
    range: RangeJson | None


class DiagramResult(TypedDict):
    format: str
    text: str
    nodes: list[DiagramNode]


class InferenceProgress(TypedDict):
    """A run's loss so far (and a NUTS run's draws so far, `live`)."""

    uri: str
    runId: str | int
    method: str
    total: int
    points: list[list[float | None]]
    done: bool
    workerPid: int | None
    live: NotRequired[dict[str, object]]


class ExportDiagnostic(TypedDict):
    message: str
    code: str
    severity: str
    range: RangeJson


class ExportWritten(TypedDict):
    ok: Literal[True]
    text: str
    target: str
    language: str
    filename: str
    program: str


class ExportRefused(TypedDict):
    ok: Literal[False]
    message: str
    diagnostics: list[ExportDiagnostic]
    programs: NotRequired[list[str]]


class DocumentStatus(TypedDict):
    uri: str
    version: int | None
    analysedVersion: int | None
    parsed: bool | None
    seconds: float | None


class ServerStatus(TypedDict):
    version: str
    encoding: str
    strict: bool
    features: list[str]
    documents: list[DocumentStatus]
    loadedModules: list[str]


def fields(payload: type) -> tuple[str, ...]:
    """A payload's field names, `?` after those it may leave out, in declared order."""
    optional: frozenset[str] = getattr(payload, "__optional_keys__", frozenset())
    return tuple(f"{k}?" if k in optional else k for k in payload.__annotations__)


#: Every payload with its place in docs/lsp.md's table.
PAYLOADS: dict[str, tuple[str, ...]] = {
    f"{DIAGRAM} arguments": DIAGRAM_ARGUMENTS,
    f"{DIAGRAM} result": fields(DiagramResult),
    "diagram node": fields(DiagramNode),
    f"{RUN_INFERENCE} arguments": RUN_INFERENCE_ARGUMENTS,
    f"{INFERENCE_PROGRESS} params": fields(InferenceProgress),
    f"{EXPORT_PROGRAM} arguments": EXPORT_ARGUMENTS,
    f"{EXPORT_PROGRAM} result (exported)": fields(ExportWritten),
    f"{EXPORT_PROGRAM} result (refused)": fields(ExportRefused),
    "export diagnostic": fields(ExportDiagnostic),
    f"{SERVER_STATUS} result": fields(ServerStatus),
    "document status": fields(DocumentStatus),
}
