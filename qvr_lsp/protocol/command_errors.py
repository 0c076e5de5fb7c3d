"""Errors that a command answers with: a protocol error whose message the user reads.

`data.kind` lets a client tell them apart without parsing the message:
"invalid" (bad arguments), "busy" (a run is already going for the document),
"source" (the file has errors), "data" (a data path the server refuses),
"nan" (the loss became NaN or infinite), "inference" (the run refused the
model or the data), "memory", "timeout", "crashed", "cancelled",
"graphviz", "run-support" (the server's Python has no torch: `qvr[run]`),
"error".

Every message is plain text (`plain`): a client shows it in a notification,
and VS Code renders `[label](command:id)` there as a link that runs the
command when clicked. A message quotes what the user's files hold (a data
key, a program name, a path), so a file could otherwise plant such a link;
`](` is written `] (`, which no client takes for a link. The server applies
the same to every error response and every `window/showMessage` it sends.
"""

from __future__ import annotations

import re

from pygls.exceptions import JsonRpcException

INVALID_PARAMS = -32602
REQUEST_FAILED = -32803  # LSP: a valid request that failed; the message says why


_LINK = re.compile(r"\]\s*\(")


def plain(text: str) -> str:
    """`text` without a Markdown link (`[label](target)`), which a client's notification
    would make clickable (`command:` targets run a command): `](` becomes `] (`."""
    return _LINK.sub("] (", text) if "]" in text else text


class CommandError(JsonRpcException):
    def __init__(self, message: str, kind: str, code: int = REQUEST_FAILED) -> None:
        super().__init__(message=plain(message), code=code, data={"kind": kind})
        self.kind = kind


def invalid(message: str) -> CommandError:
    return CommandError(message, "invalid", INVALID_PARAMS)
