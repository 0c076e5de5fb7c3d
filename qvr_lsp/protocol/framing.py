"""The read loop: the client's frames (`Content-Length` headers, a JSON body), bounded.

pygls 2.x reads frames in `pygls.io_.run_async`, which trusts its client:

- a header line longer than the stream's limit raised out of the loop (on a
  pipe, the server ended without a word; over TCP the connection hung);
- a frame without `Content-Length` was not skipped: its body was read as
  header lines, swallowing the header of the frame after it;
- a huge `Content-Length` was waited for, and held as its bytes came.

`FrameReader` reads the same frames with every part bounded and finds its
way back to the next frame after a bad one:

- a header line over `MAX_HEADER_LINE_BYTES` is dropped in pieces (an error
  in the log); a `Content-Length` header at its end (junk with no line end
  before a frame) still starts that frame;
- a frame without `Content-Length` is skipped (an error in the log);
- a `Content-Length` over `MAX_MESSAGE_BYTES` is refused: its body dropped in
  pieces, never held whole; a frame header among those bytes (a client that
  claimed more than it sent) is where reading goes on;
- a body that is not JSON and holds a frame header (a `Content-Length` longer
  than its body) is answered ParseError, and the frame inside it is read.

A JSON body can never hold a raw `Content-Length: N` followed by a line end
(a string cannot hold a raw line end, and that text is no JSON outside a
string), so a header found inside a refused or unreadable body is a real one.

`serve` is the loop itself (pygls's, over a `FrameReader`): the server's stdio,
on a pipe or not, and its TCP connections use it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import threading
from collections.abc import Awaitable, Callable
from typing import Any

from pygls.exceptions import JsonRpcException
from pygls.protocol import JsonRPCProtocol

log = logging.getLogger("qvr_lsp.protocol.framing")

#: A header line is `Content-Length: 123` or `Content-Type: ...`; nothing sane comes near.
MAX_HEADER_LINE_BYTES = 64 * 1024
#: The largest body read. Documents over `analysis.analyzer.LARGE_DOCUMENT_CHARS` (1 million
#: characters) are served (checked in a child process), and `bench/large_document.py`
#: opens a 10 MB one; JSON's escapes can make a text's body several times its size.
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
#: How much is read at a time, and at most held while dropping a refused body.
CHUNK_BYTES = 256 * 1024
#: The end of an over-long header line that is kept: room for a `Content-Length` header.
_TAIL_BYTES = 256
#: Problems logged in a row before the rest are only counted (`FrameReader._complain`).
_COMPLAINTS = 5
#: Digits past this are no length anyone can send (and int() refuses 4,300 of them).
_MAX_DIGITS = 18

#: A Content-Length header ending a line (the line may start with junk: what is left
#: of a frame that could not be read).
_LENGTH = re.compile(rb"content-length[ \t]*:[ \t]*(\d+)[ \t]*\r?\n?\Z", re.IGNORECASE)
#: Where a frame starts, among bytes that belong to no frame.
_FRAME_START = re.compile(rb"content-length[ \t]*:[ \t]*\d+[ \t]*\r\n", re.IGNORECASE)
#: The same, in a body that was cut short by the next frame (its digits may lie beyond).
_HEADER_NAME = re.compile(rb"content-length[ \t]*:", re.IGNORECASE)

Read = Callable[[int], Awaitable[bytes]]
"""Up to n bytes of the stream, b"" at its end (`asyncio.StreamReader.read`)."""


class FrameReader:
    """The bodies of the frames of a byte stream, every part of a frame bounded."""

    def __init__(
        self,
        read: Read,
        *,
        max_line: int = MAX_HEADER_LINE_BYTES,
        max_body: int = MAX_MESSAGE_BYTES,
        chunk: int = CHUNK_BYTES,
    ) -> None:
        self._read = read
        self.max_line = max_line
        self.max_body = max_body
        self.chunk = chunk
        self._buffer = bytearray()
        self._troubles = 0  # problems logged since the last frame read whole

    async def next_body(self) -> bytes | None:
        """The next frame's body; None when the stream ends."""
        length: int | None = None
        while True:
            got = await self._line()
            if got is None:
                return None
            line, dropped = got
            if dropped:
                self._complain(
                    "discarded a header line of %d bytes (the limit is %d)",
                    dropped + len(line),
                    self.max_line,
                )
            elif not line.strip():  # the blank line that ends the headers
                if length is None:
                    self._complain("skipped a frame without Content-Length")
                    continue
                if length > self.max_body:
                    self._complain(
                        "refused a message of %d bytes (the limit is %d)", length, self.max_body
                    )
                    if not await self._skip(length):
                        return None
                    length = None
                    continue
                body = await self._exactly(length)
                self._read_whole()
                return body
            found = _LENGTH.search(line)
            if found is None:
                continue  # Content-Type, or the rest of a frame that could not be read
            if found.start() > 0 and not dropped:
                self._complain("discarded %d bytes before a frame's header", found.start())
            digits = found.group(1).lstrip(b"0") or b"0"
            length = int(digits) if len(digits) <= _MAX_DIGITS else 10**_MAX_DIGITS

    def take_back(self, body: bytes) -> bool:
        """After `body` proved unreadable: read again from the frame header inside it, if
        it holds one (its frame's Content-Length was longer than it). Whether it did."""
        found = _HEADER_NAME.search(body)
        if found is None:
            return False
        self._complain("a message swallowed the frame after it; reading that frame")
        self._buffer[:0] = body[found.start() :]
        return True

    def _complain(self, message: str, *args: object) -> None:
        """Log a problem: the first few of a stretch of bad frames (a client that sends
        nothing but junk must not flood the log, nor the client's window through it)."""
        self._troubles += 1
        if self._troubles <= _COMPLAINTS:
            log.error(message, *args)

    def _read_whole(self) -> None:
        """A frame was read whole: say how many problems went unlogged before it."""
        if self._troubles > _COMPLAINTS:
            log.error(
                "%d more problems with the frames before this one", self._troubles - _COMPLAINTS
            )
        self._troubles = 0

    async def _fill(self, size: int | None = None) -> bool:
        data = await self._read(size or self.chunk)
        if not data:
            return False
        self._buffer += data
        return True

    async def _line(self) -> tuple[bytes, int] | None:
        """The next line, with its end, and how many of its first bytes were dropped (a
        line over the limit keeps only its last `_TAIL_BYTES`). None at the stream's end."""
        dropped = 0
        searched = 0
        while True:
            end = self._buffer.find(b"\n", searched)
            if end >= 0:
                line = bytes(self._buffer[: end + 1])
                del self._buffer[: end + 1]
                if len(line) > self.max_line:
                    dropped += len(line) - _TAIL_BYTES
                    line = line[-_TAIL_BYTES:]
                return line, dropped
            if len(self._buffer) > self.max_line:
                cut = len(self._buffer) - _TAIL_BYTES
                del self._buffer[:cut]
                dropped += cut
            searched = len(self._buffer)
            if not await self._fill():
                return None

    async def _exactly(self, n: int) -> bytes | None:
        while len(self._buffer) < n:
            if not await self._fill(max(self.chunk, n - len(self._buffer))):
                return None
        body = bytes(self._buffer[:n])
        del self._buffer[:n]
        return body

    async def _skip(self, n: int) -> bool:
        """Drop the next `n` bytes, at most a chunk held at a time, stopping early at a frame
        header among them. False when the stream ends first."""
        keep = _TAIL_BYTES  # a header may begin in the last bytes of what was read
        while n > 0:
            if not self._buffer and not await self._fill():
                return False
            window = bytes(self._buffer[:n])
            found = _FRAME_START.search(window)
            if found is not None:
                self._complain(
                    "found a frame header after %d bytes of the refused message", found.start()
                )
                del self._buffer[: found.start()]
                return True
            if len(window) == n:
                del self._buffer[:n]
                return True
            drop = max(0, len(window) - keep)
            del self._buffer[:drop]
            n -= drop
            if not await self._fill():
                return False
        return True


ErrorHandler = Callable[[Exception, type[JsonRpcException]], Any]


async def serve(
    stop: threading.Event,
    frames: FrameReader,
    protocol: JsonRPCProtocol,
    error_handler: ErrorHandler,
) -> None:
    """pygls's `run_async` over `frames`: decode each body and hand it to `protocol`.

    A body that is not JSON goes to `error_handler` (the server answers ParseError),
    as do the exceptions of `handle_message`.
    """
    while not stop.is_set():
        # The loop turns before the next message is read, as it did with pygls's reader:
        # a request handled just now starts (and sees the document as it was when it
        # came) before an edit that followed it in the pipe is applied.
        await asyncio.sleep(0)
        body = await frames.next_body()
        if body is None:
            break
        try:
            message = json.loads(body, object_hook=protocol.structure_message)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:  # not JSON, not UTF-8
            frames.take_back(body)
            error_handler(exc, JsonRpcException)
            continue
        except Exception as exc:
            log.exception("Unable to read message")
            error_handler(exc, JsonRpcException)
            continue
        try:
            protocol.handle_message(message)
        except Exception as exc:
            log.exception("Unable to handle message")
            error_handler(exc, JsonRpcException)
