"""Every request is answered, over a raw stdio connection to the real server.

Malformed or ill-timed requests used to get no response at all (pygls logs
and drops them), leaving the client waiting: each now gets the JSON-RPC error
the protocol names, and the server keeps serving the requests after it.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.lsp.raw import RawServer
from tests.lsp.support import EXAMPLES

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602
METHOD_NOT_FOUND = -32601
SERVER_NOT_INITIALIZED = -32002
REQUEST_FAILED = -32803  # e.g. a rename while the file is still being analysed
CONTENT_MODIFIED = -32801

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


# ------------------------------------------------------------ fuzzing

POSITION = {"line": 1, "character": 4}
RANGE = {"start": {"line": 0, "character": 0}, "end": {"line": 1, "character": 3}}
DOC = {"uri": URI}
TEMPLATES = {
    "textDocument/hover": {"textDocument": DOC, "position": POSITION},
    "textDocument/definition": {"textDocument": DOC, "position": POSITION},
    "textDocument/references": {
        "textDocument": DOC,
        "position": POSITION,
        "context": {"includeDeclaration": True},
    },
    "textDocument/documentHighlight": {"textDocument": DOC, "position": POSITION},
    "textDocument/completion": {
        "textDocument": DOC,
        "position": POSITION,
        "context": {"triggerKind": 1},
    },
    "textDocument/signatureHelp": {"textDocument": DOC, "position": POSITION},
    "textDocument/rename": {"textDocument": DOC, "position": POSITION, "newName": "g"},
    "textDocument/prepareRename": {"textDocument": DOC, "position": POSITION},
    "textDocument/documentSymbol": {"textDocument": DOC},
    "textDocument/foldingRange": {"textDocument": DOC},
    "textDocument/selectionRange": {"textDocument": DOC, "positions": [POSITION]},
    "textDocument/semanticTokens/range": {"textDocument": DOC, "range": RANGE},
    "textDocument/inlayHint": {"textDocument": DOC, "range": RANGE},
    "textDocument/formatting": {
        "textDocument": DOC,
        "options": {"tabSize": 4, "insertSpaces": True},
    },
    "textDocument/rangeFormatting": {
        "textDocument": DOC,
        "range": RANGE,
        "options": {"tabSize": 4, "insertSpaces": True},
    },
    "textDocument/codeAction": {
        "textDocument": DOC,
        "range": RANGE,
        "context": {"diagnostics": [], "triggerKind": 1},
    },
    "textDocument/codeLens": {"textDocument": DOC},
}

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**40), 2**40)
    | st.sampled_from([-1, 2**31 - 1, 2**31, 2**63])
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=6,
)


def paths(value: object, prefix: tuple = ()) -> list[tuple]:
    """Every place inside `value` a mutation can touch."""
    out = [prefix]
    if isinstance(value, dict):
        for key, child in value.items():
            out += paths(child, (*prefix, key))
    elif isinstance(value, list):
        for i, child in enumerate(value):
            out += paths(child, (*prefix, i))
    return out


def replaced(value: object, path: tuple, new: object) -> object:
    if not path:
        return None if new is _DELETE else new
    copy = json.loads(json.dumps(value))
    parent = copy
    for key in path[:-1]:
        parent = parent[key]
    if new is _DELETE and isinstance(parent, dict):
        del parent[path[-1]]
    else:
        parent[path[-1]] = None if new is _DELETE else new
    return copy


_DELETE = object()


@st.composite
def mutated_requests(draw: st.DrawFn) -> tuple[str, object]:
    method = draw(st.sampled_from(sorted(TEMPLATES)))
    params: object = TEMPLATES[method]
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(paths(params)))
        params = replaced(params, path, draw(json_values | st.just(_DELETE)))
    return method, params


_fuzz_ids = itertools.count()


@settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(mutated_requests())
def test_every_mutated_request_gets_exactly_one_answer(server: RawServer, request) -> None:
    method, params = request
    msg_id = f"fuzz-{next(_fuzz_ids)}"
    server.send({"id": msg_id, "method": method, "params": params})
    answer = server.response(msg_id)
    assert ("result" in answer) != ("error" in answer), answer
    if "error" in answer:  # one the server means: not an internal error
        assert answer["error"]["code"] in (INVALID_PARAMS, REQUEST_FAILED, CONTENT_MODIFIED), answer
