"""Errors that a command answers with: a protocol error whose message the user reads.

`data.kind` lets a client tell them apart without parsing the message:
"invalid" (bad arguments), "busy" (a run is already going for the document),
"source" (the file has errors), "data" (a data path the server refuses),
"nan" (the loss became NaN or infinite), "inference" (the run refused the
model or the data), "memory", "timeout", "crashed", "cancelled",
"graphviz", "error".
"""

from __future__ import annotations

from pygls.exceptions import JsonRpcException

INVALID_PARAMS = -32602
REQUEST_FAILED = -32803  # LSP: a valid request that failed; the message says why


class CommandError(JsonRpcException):
    def __init__(self, message: str, kind: str, code: int = REQUEST_FAILED) -> None:
        super().__init__(message=message, code=code, data={"kind": kind})
        self.kind = kind


def invalid(message: str) -> CommandError:
    return CommandError(message, "invalid", INVALID_PARAMS)
