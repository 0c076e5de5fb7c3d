"""No error text from the server is a clickable command link (#24).

VS Code renders `[label](command:id)` in a notification as a link that runs
the command. An error message quotes what a file holds (a data key, a
program name, a file name); the server writes every error response and every
`window/showMessage` in plain text, with `](` as `] (`.
"""

from __future__ import annotations

import asyncio

import pytest
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException

from qvr_lsp.protocol.command_errors import CommandError, invalid, plain
from tests.security.support import TINY, served

LINK = "[run me](command:workbench.action.terminal.new)"
WAIT = 120.0


def test_plain_breaks_every_markdown_link_and_keeps_the_rest():
    assert plain(f"data key {LINK} is unknown") == (
        "data key [run me] (command:workbench.action.terminal.new) is unknown"
    )
    assert "](" not in plain("[a](command:x) and [b]  (https://example.com) and [c](file:///etc)")
    assert (
        plain("x[0] is missing; line 3: [role=kernel]") == "x[0] is missing; line 3: [role=kernel]"
    )
    assert plain("no brackets at all (none)") == "no brackets at all (none)"


def test_command_errors_are_plain_whatever_they_quote():
    assert "](command:" not in CommandError(f"bad {LINK}", "data").message
    assert "](command:" not in invalid(f"qvr.runInference: unknown argument(s) {LINK}").message


def test_error_responses_and_messages_leave_the_server_plain(monkeypatch):
    from qvr_lsp.app import build

    session = build()
    server = session.server
    sent: list[object] = []
    monkeypatch.setattr(server.protocol, "_send_data", sent.append)
    error = lsp.ResponseError(code=-32603, message=f"qvr.diagram failed: {LINK}")
    server.protocol._send_response(7, error=error)
    server.window_show_message(lsp.ShowMessageParams(lsp.MessageType.Info, f"qvr: {LINK} is large"))
    assert len(sent) == 2
    assert sent[0].error.message == "qvr.diagram failed: " + plain(LINK)  # type: ignore[attr-defined]
    assert "](command:" not in str(sent[1])
    session.scans.shutdown()
    session.analyzer.shutdown()


@pytest.mark.asyncio(loop_scope="function")
async def test_a_command_error_quoting_a_link_reaches_the_client_plain(tmp_path):
    (tmp_path / "tiny.qvr").write_text(TINY)
    async with served(tmp_path) as client:
        uri = (tmp_path / "tiny.qvr").as_uri()
        for arguments in (
            {"uri": uri, "program": LINK},
            {"uri": uri, "data": f"{LINK}.csv"},
        ):
            with pytest.raises(JsonRpcException) as failed:
                await asyncio.wait_for(
                    client.workspace_execute_command_async(
                        lsp.ExecuteCommandParams(command="qvr.runInference", arguments=[arguments])
                    ),
                    WAIT,
                )
            message = str(failed.value)
            assert "run me" in message and "](command:" not in message
        with pytest.raises(JsonRpcException) as failed:
            await asyncio.wait_for(
                client.workspace_execute_command_async(
                    lsp.ExecuteCommandParams(command="qvr.diagram", arguments=[uri, LINK])
                ),
                WAIT,
            )
        assert "](command:" not in str(failed.value)
