"""Malformed framing on stdin never ends the server or stops its answers (#46).

pygls's read loop ended the server at a header line over 1 MiB (silently),
read the body of a frame without Content-Length as header lines (losing the
next frame with it), and waited for the bytes of a huge Content-Length for
ever (holding them as they came). `qvr_lsp.protocol.framing` reads the frames instead:
each case below is written to the real server's stdin as raw bytes, and a
request after it must be answered.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from qvr_lsp.protocol.framing import FrameReader
from tests.lsp.raw import RawServer

URI = "file:///framing/unsaved.qvr"
TEXT = "object A : Real 3\nlet f = A\n"


class LoggedServer(RawServer):
    """`RawServer` with the server's log in a file, to read what it said about a frame."""

    def __init__(self, log: Path) -> None:
        self.log = log
        super().__init__("--log-level", "INFO", "--log-file", str(log))

    def write(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def logged(self) -> str:
        return self.log.read_text() if self.log.exists() else ""


@pytest.fixture
def server(tmp_path: Path) -> Iterator[LoggedServer]:
    raw = LoggedServer(tmp_path / "server.log")
    yield raw
    raw.close()


def body(message: dict[str, Any]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", **message}).encode()


def frame(message: dict[str, Any]) -> bytes:
    data = body(message)
    return b"Content-Length: %d\r\n\r\n" % len(data) + data


def assert_serving(server: LoggedServer) -> None:
    """initialize is answered, and so is a hover in a document opened after it."""
    answer = server.initialize()
    assert "capabilities" in answer["result"], answer
    server.notify(
        "textDocument/didOpen",
        {"textDocument": {"uri": URI, "languageId": "qvr", "version": 1, "text": TEXT}},
    )
    position = {"line": 0, "character": 7}
    server.request(
        "hover", "textDocument/hover", {"textDocument": {"uri": URI}, "position": position}
    )
    hover = server.response("hover")
    assert "A" in json.dumps(hover["result"]), hover
    assert server.proc.poll() is None


def test_a_one_megabyte_header_line_is_discarded_and_the_next_frame_served(server):
    server.write(b"X-Padding: " + b"a" * (1 << 20) + b"\r\n")
    assert_serving(server)
    assert "header line" in server.logged()


def test_a_long_line_of_junk_ending_in_a_header_resyncs_on_that_header(server):
    """No line end between the junk and the next frame's header: the frame is still read."""
    server.write(b"a" * (1 << 20))
    assert_serving(server)


def test_a_frame_without_content_length_is_skipped(server):
    lost = body({"id": "lost", "method": "initialize", "params": {"capabilities": {}}})
    server.write(b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n" + lost)
    assert_serving(server)
    assert "without Content-Length" in server.logged()


def test_a_huge_content_length_is_refused_and_the_next_frame_served(server):
    """The client claims 10 GB and sends a few bytes: the frame after them is found."""
    server.write(b"Content-Length: 10000000000\r\n\r\n" + b'{"jsonrpc": "2.0"}')
    assert_serving(server)
    assert "10000000000" in server.logged()


def test_a_content_length_with_too_many_digits_is_refused(server):
    server.write(b"Content-Length: " + b"9" * 5000 + b"\r\n\r\n{}")
    assert_serving(server)


def test_bad_frames_in_a_row_then_a_session(server):
    server.write(b"\r\n\r\n")  # blank lines, no headers
    server.write(b"garbage without a line end")
    server.write(b"Content-Length: 99999999999\r\n\r\n")
    server.write(b"X-Padding: " + b"b" * 300_000 + b"\r\n\r\n" + body({"id": 1, "method": "x"}))
    assert_serving(server)


def test_a_frame_longer_than_its_body_is_found_again_in_what_it_swallowed(server):
    """A Content-Length larger than its body reads the next frames into it: the body is
    not JSON, and the frame inside it is served."""
    short = b'{"jsonrpc": "2.0", "method": "initialized", "params": {}}'
    initialize = frame({"id": 0, "method": "initialize", "params": {"capabilities": {}}})
    overrun = len(initialize) // 2  # the swallowed part ends inside the next frame's body
    server.write(b"Content-Length: %d\r\n\r\n" % (len(short) + overrun) + short + initialize)
    answer = server.response(0)
    assert "capabilities" in answer["result"], answer


def test_after_all_that_the_server_still_exits_cleanly(server):
    server.write(b"Content-Length: 10000000000\r\n\r\n")
    server.write(b"X-Padding: " + b"c" * (1 << 20) + b"\r\n")
    assert_serving(server)
    assert server.close() == 0


# ------------------------------------------------------------ the reader itself


class Source:
    """A byte stream handed out `step` bytes at a time; records what the reader held."""

    def __init__(self, data: bytes, step: int) -> None:
        self.data = data
        self.step = step
        self.at = 0
        self.frames: FrameReader | None = None
        self.held = 0

    async def read(self, n: int) -> bytes:
        if self.frames is not None:
            self.held = max(self.held, len(self.frames._buffer))
        piece = self.data[self.at : self.at + min(n, self.step)]
        self.at += len(piece)
        return piece


def bodies(data: bytes, step: int, **limits: int) -> tuple[list[bytes], Source]:
    source = Source(data, step)
    frames = source.frames = FrameReader(source.read, **limits)

    async def collect() -> list[bytes]:
        found = []
        while (got := await frames.next_body()) is not None:
            found.append(got)
        return found

    return asyncio.run(collect()), source


GOOD = frame({"id": 1, "method": "initialize", "params": {"capabilities": {}}})
GOOD_BODY = GOOD.split(b"\r\n\r\n", 1)[1]


@pytest.mark.parametrize("step", [1, 2, 7, 1 << 16])
def test_frames_split_anywhere_are_read_whole(step):
    data = (
        GOOD
        + b"content-length:%d\r\nContent-Type: x\r\n\r\n" % len(GOOD_BODY)
        + GOOD_BODY
        + b"\r\n\r\n"  # a frame with no headers at all
        + b"Content-Length: 50000\r\n\r\n"
        + b"z" * 100  # refused, and shorter than it claimed: the next frame is found
        + GOOD
        + b"x" * 5000  # junk with no line end, then a frame
        + GOOD
    )
    found, _ = bodies(data, step, max_line=1000, max_body=1000)
    assert found == [GOOD_BODY] * 4


@pytest.mark.parametrize("step", [1, 3, 1 << 16])
def test_a_refused_body_sent_in_full_is_dropped_without_being_held(step):
    big = json.dumps({"jsonrpc": "2.0", "method": "x", "params": "y" * 200_000}).encode()
    data = b"Content-Length: %d\r\n\r\n" % len(big) + big + GOOD
    found, source = bodies(data, step, max_body=10_000, chunk=4096)
    assert found == [GOOD_BODY]
    assert source.held <= 4096 + 512


def test_a_long_header_line_is_never_held_whole():
    data = b"X-Padding: " + b"p" * 1_000_000 + b"\r\n" + GOOD
    found, source = bodies(data, 1 << 16, max_line=4096, chunk=1 << 16)
    assert found == [GOOD_BODY]
    assert source.held <= 4096 + (1 << 16)


def test_an_unreadable_body_gives_back_the_frame_inside_it():
    short = b'{"jsonrpc": "2.0"}'
    data = b"Content-Length: %d\r\n\r\n" % (len(short) + 30) + short + GOOD

    async def run() -> list[bytes]:
        source = Source(data, 1 << 16)
        frames = FrameReader(source.read)
        first = await frames.next_body()
        assert first is not None and first.startswith(short)
        assert frames.take_back(first)
        second = await frames.next_body()
        assert second is not None
        return [second]

    assert asyncio.run(run()) == [GOOD_BODY]


def test_a_stream_of_junk_logs_a_few_lines_not_one_per_bad_frame(caplog):
    data = b"\r\n" * 10_000 + b"Content-Length: 99999999\r\n\r\n" + GOOD
    with caplog.at_level("ERROR", logger="qvr_lsp.protocol.framing"):
        found, _ = bodies(data, 1 << 16, max_body=1000)
    assert found == [GOOD_BODY]
    errors = [r.getMessage() for r in caplog.records if r.name == "qvr_lsp.protocol.framing"]
    assert 2 <= len(errors) <= 6, errors
    assert "more problems" in errors[-1]
