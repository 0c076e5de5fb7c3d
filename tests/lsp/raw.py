"""A raw stdio connection to the real server: send bytes, read framed responses.

pytest-lsp's client validates what it sends, so malformed messages (bad
JSON, wrong types, out-of-range positions) are written here by hand.
"""

from __future__ import annotations

import json
import queue
import subprocess
import threading
from typing import Any

from tests.lsp.support import ROOT, SERVER_COMMAND

WAIT_SECONDS = 15.0


class RawServer:
    """The server as a subprocess; a reader thread collects every message it writes."""

    def __init__(self, *arguments: str) -> None:
        """`arguments` go to the server after its command (`--log-file`, ...)."""
        self.proc = subprocess.Popen(
            [*SERVER_COMMAND, *arguments],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=ROOT,
        )
        self.messages: queue.Queue[dict[str, Any]] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        out = self.proc.stdout
        assert out is not None
        while True:
            length = None
            while True:
                line = out.readline()
                if not line:
                    return
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
                elif line in (b"\r\n", b"\n") and length is not None:
                    break
            self.messages.put(json.loads(out.read(length)))

    def send_bytes(self, body: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def send(self, message: dict[str, Any]) -> None:
        self.send_bytes(json.dumps({"jsonrpc": "2.0", **message}).encode())

    def request(self, msg_id: Any, method: str, params: Any = None) -> None:
        message: dict[str, Any] = {"id": msg_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)

    def notify(self, method: str, params: Any = None) -> None:
        self.send({"method": method, "params": params})

    def response(self, msg_id: Any, timeout: float = WAIT_SECONDS) -> dict[str, Any]:
        """The response with `msg_id` (id None: an error with id null); skips notifications."""
        while True:
            message = self.messages.get(timeout=timeout)
            if "method" in message:
                continue  # a notification or a request from the server
            if message.get("id") == msg_id:
                return message

    def initialize(self) -> dict[str, Any]:
        self.request(0, "initialize", {"processId": None, "rootUri": None, "capabilities": {}})
        answer = self.response(0)
        self.notify("initialized", {})
        return answer

    def close(self) -> int:
        if self.proc.poll() is None:
            try:
                self.request("__shutdown__", "shutdown")
                self.notify("exit")
                return self.proc.wait(timeout=WAIT_SECONDS)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
        return self.proc.wait()
