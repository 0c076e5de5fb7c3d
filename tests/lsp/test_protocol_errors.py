"""Every request is answered, over a raw stdio connection to the real server.

Malformed or ill-timed requests used to get no response at all (pygls logs
and drops them), leaving the client waiting: each now gets the JSON-RPC error
the protocol names, and the server keeps serving the requests after it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.lsp.raw import RawServer
from tests.lsp.support import EXAMPLES

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602
METHOD_NOT_FOUND = -32601
SERVER_NOT_INITIALIZED = -32002

URI = (EXAMPLES / "unsaved-protocol.qvr").as_uri()
TEXT = "object A : Real 3\nlet f = A\n"


@pytest.fixture(scope="module")
def server() -> Iterator[RawServer]:
    raw = RawServer()
    raw.initialize()
    raw.notify(
        "textDocument/didOpen",
        {"textDocument": {"uri": URI, "languageId": "qvr", "version": 1, "text": TEXT}},
    )
    yield raw
    raw.close()


def hover(line: object, character: object) -> dict[str, object]:
    return {"textDocument": {"uri": URI}, "position": {"line": line, "character": character}}


def assert_still_serving(server: RawServer, msg_id: str) -> None:
    server.request(msg_id, "textDocument/hover", hover(0, 7))
    assert "result" in server.response(msg_id)


@pytest.mark.parametrize(
    "params",
    [
        hover(-1, 0),
        hover(0, -5),
        hover(2**31, 0),
        hover(0, 2**31),
        hover("zero", 0),
        hover(None, 0),
        {"textDocument": "a.qvr", "position": {"line": 0, "character": 0}},
        {"textDocument": {"uri": URI}},
        "not an object",
    ],
    ids=[
        "negative-line",
        "negative-character",
        "line-2^31",
        "character-2^31",
        "string-line",
        "null-line",
        "string-document",
        "missing-position",
        "string-params",
    ],
)
def test_invalid_params_are_answered_with_invalid_params(server: RawServer, params) -> None:
    msg_id = f"bad-{json.dumps(params)[:40]}"
    server.request(msg_id, "textDocument/hover", params)
    answer = server.response(msg_id)
    assert answer["error"]["code"] == INVALID_PARAMS
    assert answer["error"]["message"]
    assert_still_serving(server, msg_id + "-after")


def test_an_unknown_enum_value_is_invalid_params(server: RawServer) -> None:
    params = {**hover(0, 0), "context": {"triggerKind": 99}}
    server.request("enum", "textDocument/completion", params)
    assert server.response("enum")["error"]["code"] == INVALID_PARAMS


def test_the_message_names_what_did_not_fit(server: RawServer) -> None:
    server.request("named", "textDocument/hover", hover(0, "x"))
    message = server.response("named")["error"]["message"]
    assert "position.character" in message


def test_bad_json_is_a_parse_error_with_id_null(server: RawServer) -> None:
    server.send_bytes(b'{"jsonrpc": "2.0", "id": 7, "method": "textDocument/hov')
    answer = server.response(None)
    assert answer["error"]["code"] == PARSE_ERROR
    server.send_bytes(b"\xff\xfe not utf-8")
    assert server.response(None)["error"]["code"] == PARSE_ERROR
    assert_still_serving(server, "after-parse-error")


@pytest.mark.parametrize(
    "message",
    [
        {"id": 1, "method": "textDocument/hover", "params": hover(0, 0)},  # no "jsonrpc"
        {"jsonrpc": "1.0", "id": 1, "method": "textDocument/hover", "params": hover(0, 0)},
        {"jsonrpc": "2.0", "id": {"x": 1}, "method": "textDocument/hover"},
        {"jsonrpc": "2.0", "id": 1, "method": 5},
        {"jsonrpc": "2.0"},
        [1, 2, 3],
        "hello",
    ],
    ids=["no-jsonrpc", "jsonrpc-1.0", "object-id", "number-method", "empty", "array", "string"],
)
def test_a_message_that_is_not_json_rpc_is_an_invalid_request(server: RawServer, message) -> None:
    server.send_bytes(json.dumps(message).encode())
    expected_id = 1 if isinstance(message, dict) and message.get("id") == 1 else None
    answer = server.response(expected_id)
    assert answer["error"]["code"] == INVALID_REQUEST
    assert_still_serving(server, f"after-{json.dumps(message)[:30]}")


def test_a_notification_method_sent_as_a_request_is_answered(server: RawServer) -> None:
    server.request("as-request", "textDocument/didSave", {"textDocument": {"uri": URI}})
    assert server.response("as-request")["error"]["code"] == INVALID_REQUEST


def test_an_unknown_method_is_method_not_found(server: RawServer) -> None:
    server.request("unknown", "qvr/noSuchThing", {})
    assert server.response("unknown")["error"]["code"] == METHOD_NOT_FOUND


def test_a_bad_notification_is_dropped_and_the_server_goes_on(server: RawServer) -> None:
    server.notify("textDocument/didChange", {"textDocument": {"uri": URI, "version": "x"}})
    assert_still_serving(server, "after-bad-notification")


def test_a_second_initialize_is_an_invalid_request(server: RawServer) -> None:
    server.request("again", "initialize", {"processId": None, "rootUri": None, "capabilities": {}})
    assert server.response("again")["error"]["code"] == INVALID_REQUEST


def test_requests_before_initialize_are_refused_and_initialize_still_works() -> None:
    raw = RawServer()
    try:
        raw.request("early", "textDocument/hover", hover(0, 0))
        assert raw.response("early")["error"]["code"] == SERVER_NOT_INITIALIZED
        raw.request("early-bad", "textDocument/hover", hover(-1, 0))
        assert raw.response("early-bad")["error"]["code"] == SERVER_NOT_INITIALIZED
        raw.request("early-shutdown", "shutdown")
        assert raw.response("early-shutdown")["error"]["code"] == SERVER_NOT_INITIALIZED
        assert "capabilities" in raw.initialize()["result"]
    finally:
        raw.close()


def test_requests_after_shutdown_are_invalid_requests_and_exit_still_exits() -> None:
    raw = RawServer()
    raw.initialize()
    raw.request("down", "shutdown")
    assert raw.response("down")["result"] is None
    raw.request("late", "textDocument/hover", hover(0, 0))
    assert raw.response("late")["error"]["code"] == INVALID_REQUEST
    raw.request("late-shutdown", "shutdown")
    assert raw.response("late-shutdown")["error"]["code"] == INVALID_REQUEST
    raw.notify("exit")
    assert raw.proc.wait(timeout=15) == 0
