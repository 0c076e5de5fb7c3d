"""Every request gets an answer: JSON-RPC errors where pygls 2.x would drop a message.

pygls reads each message with `json.loads(body, object_hook=structure_message)`
and dispatches it with `handle_message`. A body that is not JSON, a message
whose params do not fit the method's types (a negative or >= 2^31 position, a
string for a number, an unknown enum value), a request before `initialize` or
after `shutdown`: pygls logs each and answers nothing, so the client waits for
ever. Here each becomes the error response the protocol names:

| what arrived                                   | answer                          |
|------------------------------------------------|---------------------------------|
| a body that is not JSON (or not UTF-8)         | ParseError (-32700), id null    |
| not a JSON-RPC 2.0 request (bad envelope, id)  | InvalidRequest (-32600)         |
| params that do not fit the method              | InvalidParams (-32602)          |
| a request before `initialize`                  | ServerNotInitialized (-32002)   |
| a second `initialize`, a request after `shutdown` | InvalidRequest (-32600)      |

Notifications get no response by JSON-RPC's rules: a bad one, one before
`initialize` or after `shutdown` (except `exit`) is dropped with a warning in
the log. Unknown methods were already answered by pygls (MethodNotFound).

What is served has its document URIs in one spelling (`uris.canonical_uri`):
`textDocument.uri` of every method, and the document a `qvr.*` command names
first (`[uri, ...]` or `[{"uri": ...}]`), so state keyed by URI never
depends on how a client spells a path.
"""

from __future__ import annotations

import logging
from typing import Any

import cattrs
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol

from qvr_lsp.protocol.uris import canonical_uri

log = logging.getLogger("qvr_lsp")

PARSE_ERROR = lsp.ErrorCodes.ParseError
INVALID_REQUEST = lsp.ErrorCodes.InvalidRequest
INVALID_PARAMS = lsp.ErrorCodes.InvalidParams
SERVER_NOT_INITIALIZED = lsp.ErrorCodes.ServerNotInitialized

_NO_ID = object()  # a message without an "id": a notification (or not a message at all)


class Refused:
    """A message that cannot be served, and the error that answers it.

    `msg_id` is the request's id, `_NO_ID` for a notification, None when the
    id itself is unusable (the error then goes out with id null).
    """

    __slots__ = ("code", "message", "method", "msg_id")

    def __init__(self, msg_id: Any, method: str, code: lsp.ErrorCodes, message: str) -> None:
        self.msg_id = msg_id
        self.method = method
        self.code = code
        self.message = message


def _valid_id(value: Any) -> bool:
    return isinstance(value, (int, str)) and not isinstance(value, bool)


def _envelope_problem(data: dict[str, Any]) -> str | None:
    """Why `data` is not a JSON-RPC 2.0 message, or None when its envelope is sound."""
    if data.get("jsonrpc") != "2.0":
        return 'not a JSON-RPC 2.0 message ("jsonrpc" must be "2.0")'
    if "id" in data and not _valid_id(data["id"]):
        return "the id of a request is a number or a string"
    if "method" in data and not isinstance(data["method"], str):
        return "the method of a request is a string"
    if "method" not in data and "id" not in data:
        return "a message has a method or an id"
    return None


def _describe(exc: BaseException) -> str:
    """One line naming what did not fit, e.g. `expected int @ $.params.position.line`."""
    try:
        problems = (
            cattrs.transform_error(exc) if isinstance(exc, cattrs.BaseValidationError) else []
        )
    except Exception:  # a message must never fail to be described
        problems = []
    text = "; ".join(problems[:3]) or str(exc) or type(exc).__name__
    return text[:500]


class AnsweringProtocol(LanguageServerProtocol):
    """pygls's protocol that answers every request it cannot serve with an error."""

    _initialize_seen = False

    def structure_message(self, data: dict[str, Any]) -> Any:
        """Like pygls's, but a message that does not fit its types becomes a `Refused`."""
        if "jsonrpc" not in data:
            return data  # a nested object, or not a message (handle_message answers that)
        problem = _envelope_problem(data)
        if problem is not None:
            msg_id = data["id"] if _valid_id(data.get("id")) else None
            return Refused(msg_id, str(data.get("method", "")), INVALID_REQUEST, problem)
        method = data.get("method")
        if method is None:  # a response to one of our requests: pygls's own handling
            try:
                return super().structure_message(data)
            except Exception as exc:
                return Refused(_NO_ID, "", INVALID_PARAMS, f"malformed response: {exc}")
        msg_id = data.get("id", _NO_ID)
        message_type = self.get_message_type(method)
        if message_type is None:
            return super().structure_message(data)  # unknown method: MethodNotFound later
        try:
            message = self._converter.structure(data, message_type)
        except Exception as exc:
            return Refused(msg_id, method, INVALID_PARAMS, f"invalid params: {_describe(exc)}")
        if msg_id is not _NO_ID and not hasattr(message, "id"):
            return Refused(msg_id, method, INVALID_REQUEST, f"{method} is a notification")
        return message

    def handle_message(self, message: Any) -> None:
        """Answer what cannot be served; hand everything else to pygls."""
        refusal = self._refusal(message)
        if refusal is None:
            if getattr(message, "method", None) == lsp.INITIALIZE and hasattr(message, "id"):
                self._initialize_seen = True
            _canonical_uris(message)
            super().handle_message(message)
        elif refusal.msg_id is _NO_ID:
            log.warning("dropped notification %s: %s", refusal.method or "?", refusal.message)
        else:
            log.warning(
                "refused %s (id %s): %s",
                refusal.method or "a message",
                refusal.msg_id,
                refusal.message,
            )
            error = lsp.ResponseError(code=refusal.code, message=refusal.message)
            self._send_response(refusal.msg_id, error=error)

    def _refusal(self, message: Any) -> Refused | None:
        """Why `message` is not served, or None when pygls should handle it."""
        if isinstance(message, dict):
            msg_id = message.get("id") if _valid_id(message.get("id")) else None
            return Refused(msg_id, "", INVALID_REQUEST, "not a JSON-RPC 2.0 message")
        if not isinstance(message, (Refused, lsp.ResponseErrorMessage)) and not hasattr(
            message, "jsonrpc"
        ):
            return Refused(None, "", INVALID_REQUEST, "a message is a JSON object")
        if isinstance(message, Refused) and message.code == INVALID_REQUEST:
            return message  # not a message at all: no lifecycle rule applies
        method = getattr(message, "method", None)
        if method is None:
            return None  # a response from the client
        msg_id = message.msg_id if isinstance(message, Refused) else getattr(message, "id", _NO_ID)
        lifecycle = self._lifecycle_problem(method)
        if lifecycle is not None:
            code, text = lifecycle
            return Refused(msg_id, method, code, text)
        return message if isinstance(message, Refused) else None

    def _lifecycle_problem(self, method: str) -> tuple[lsp.ErrorCodes, str] | None:
        if method == lsp.EXIT:
            return None
        if self._shutdown:
            return INVALID_REQUEST, f"{method}: the server is shutting down"
        if method == lsp.INITIALIZE:
            if self._initialize_seen:
                return INVALID_REQUEST, "initialize: the server is already initialized"
            return None
        if not self._initialize_seen:
            return SERVER_NOT_INITIALIZED, f"{method}: the server is not initialized yet"
        return None

    def answer_unreadable(self, error: BaseException) -> None:
        """A body that did not decode: ParseError with id null (its id is unknowable)."""
        log.warning("unreadable message: %s", error)
        detail = str(error)[:200] or type(error).__name__
        answer = lsp.ResponseError(code=PARSE_ERROR, message=detail)
        self._send_response(None, error=answer)  # type: ignore[arg-type]  # id null, per JSON-RPC


def _canonical_uris(message: Any) -> None:
    """Rewrite the document URIs of an incoming request or notification in place."""
    params = getattr(message, "params", None)
    document: Any = getattr(params, "text_document", None)
    if isinstance(getattr(document, "uri", None), str):
        document.uri = canonical_uri(document.uri)
    if isinstance(params, lsp.ExecuteCommandParams) and params.command.startswith("qvr."):
        first, *rest = params.arguments or [None]
        if isinstance(first, str):
            params.arguments = [canonical_uri(first), *rest]
        elif isinstance(first, dict) and isinstance(first.get("uri"), str):
            params.arguments = [{**first, "uri": canonical_uri(first["uri"])}, *rest]


class AnsweringServer(LanguageServer):
    """Routes the read loop's failures (undecodable bodies) to a ParseError answer.

    pygls's loop hands every exception from `json.loads` and `handle_message`
    to `report_server_error` with `JsonRpcException` as the source; since
    `AnsweringProtocol.handle_message` answers instead of raising, what arrives
    from there is a body that was not JSON.
    """

    protocol: AnsweringProtocol

    def report_server_error(self, error: Exception, source: Any) -> None:
        if source is JsonRpcException and isinstance(self.protocol, AnsweringProtocol):
            self.protocol.answer_unreadable(error)
            return
        super().report_server_error(error, source)
