"""`qvr-lsp --tcp`: serves over a socket and exits cleanly on `exit`, with the protocol's code."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time

import pytest

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def frame(message: dict) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def read_response(conn: socket.socket, deadline: float) -> dict:
    data = b""
    while b"\r\n\r\n" not in data:
        assert time.monotonic() < deadline, "no response"
        data += conn.recv(4096)
    head, _, rest = data.partition(b"\r\n\r\n")
    fields = dict(line.split(b":", 1) for line in head.split(b"\r\n"))
    length = int(fields[b"Content-Length"])
    while len(rest) < length:
        rest += conn.recv(4096)
    return json.loads(rest[:length])


def session(shutdown_first: bool) -> tuple[int, str]:
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "qvr_lsp", "--tcp", f"127.0.0.1:{port}"],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                conn = socket.create_connection(("127.0.0.1", port), timeout=30)
                break
            except OSError:
                assert time.monotonic() < deadline, "server did not listen"
                time.sleep(0.05)
        with conn:
            conn.sendall(frame(INITIALIZE))
            assert "capabilities" in read_response(conn, deadline)["result"]
            if shutdown_first:
                conn.sendall(frame({"jsonrpc": "2.0", "id": 2, "method": "shutdown"}))
                assert read_response(conn, deadline)["id"] == 2
            conn.sendall(frame({"jsonrpc": "2.0", "method": "exit"}))
            code = server.wait(timeout=30)
        return code, server.stderr.read() if server.stderr else ""
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()


@pytest.mark.parametrize(("shutdown_first", "expected"), [(True, 0), (False, 1)])
def test_exit_over_tcp_ends_the_process_without_a_traceback(
    shutdown_first: bool, expected: int
) -> None:
    code, stderr = session(shutdown_first)
    assert code == expected
    assert "Traceback" not in stderr
