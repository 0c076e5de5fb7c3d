"""Reading source files a workspace may have planted: regular files only, bounded, confined.

Every `.qvr` file the tools read without the user typing its text (the
command line's arguments, the server's workspace symbols and commands) is
read here, so a cloned repository cannot make them hang or run out of memory:

- only a regular file is read: a FIFO, a device (`/dev/stdin`, `/dev/zero`),
  a socket or a directory is refused before it is opened, and again after it
  is opened (non-blocking, so a FIFO swapped in meanwhile cannot block);
- a symbolic link is followed only when its target lies inside the given
  roots (the workspace), and the file opened is the one that was checked;
- at most `limit` bytes are read, within `timeout` seconds;
- the text must be UTF-8.

Anything else raises `UnreadableFile`, whose message says why in words a
user can act on.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Iterable
from pathlib import Path

#: A 5,000-line model is some 200 KB; nothing written by hand comes near this.
MAX_SOURCE_BYTES = 8 * 1024 * 1024
READ_TIMEOUT_SECONDS = 10.0
CHUNK_BYTES = 1 << 20

_OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)  # a FIFO opens at once instead of waiting for a writer
    | getattr(os, "O_NOCTTY", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_BINARY", 0)
)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


class UnreadableFile(Exception):
    """The file is missing, special, too large, outside the roots or not UTF-8 text."""

    def __init__(self, path: str | os.PathLike[str], reason: str) -> None:
        super().__init__(f"{os.fspath(path)}: {reason}")
        self.path = os.fspath(path)
        self.reason = reason


def kind_of(mode: int) -> str:
    """What a file of this mode is, in words ("a FIFO (named pipe)")."""
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def inside(path: str | os.PathLike[str], roots: Iterable[str | os.PathLike[str]]) -> bool:
    """Whether the real path of `path` (links resolved) lies in one of the real `roots`."""
    real = Path(os.path.realpath(path))
    return any(real.is_relative_to(os.path.realpath(root)) for root in roots)


def regular_file(
    path: str | os.PathLike[str],
    roots: Iterable[str | os.PathLike[str]] | None = None,
    limit: int = MAX_SOURCE_BYTES,
) -> tuple[str, os.stat_result]:
    """The real path of `path` and its status, once it passes the rules above.

    Nothing is opened: a caller that caches by modification time can decide
    not to read. `roots=None` follows links anywhere (the user named the file
    and its target alike); otherwise the target must lie inside a root.
    """
    real = os.path.realpath(path)
    if roots is not None:
        roots = list(roots)
        if not inside(real, roots):
            where = f" (it leads to {real})" if real != os.path.abspath(path) else ""
            raise UnreadableFile(path, f"it is outside the workspace{where}")
    try:
        status = os.stat(real)
    except FileNotFoundError:
        raise UnreadableFile(path, "no such file") from None
    except OSError as exc:
        raise UnreadableFile(path, exc.strerror or str(exc)) from None
    if not stat.S_ISREG(status.st_mode):
        raise UnreadableFile(path, f"it is {kind_of(status.st_mode)}, not a regular file")
    if status.st_size > limit:
        raise UnreadableFile(path, _too_large(status.st_size, limit))
    return real, status


def read_text(
    path: str | os.PathLike[str],
    roots: Iterable[str | os.PathLike[str]] | None = None,
    *,
    limit: int = MAX_SOURCE_BYTES,
    timeout: float = READ_TIMEOUT_SECONDS,
    universal_newlines: bool = False,
) -> str:
    """The UTF-8 text of `path`, read under the rules above.

    `universal_newlines` turns `\\r\\n` and `\\r` into `\\n`, as `open()` does
    by default; otherwise the text is exactly the file's.
    """
    real, checked = regular_file(path, roots, limit)
    data = _read_bytes(path, real, checked, limit, timeout)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UnreadableFile(
            path, f"it is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})"
        ) from None
    if universal_newlines:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text


def command_line_roots(path: str | os.PathLike[str]) -> list[str]:
    """Where a file named on the command line may lead: the working directory when the
    path lies in it, else the path's own folder.

    `qvr check *.qvr` in a cloned repository must not print `~/.aws/credentials`
    because `x.qvr` links to it; a link within the project is followed.
    """
    absolute = os.path.abspath(path)
    cwd = os.getcwd()
    inside_cwd = os.path.commonpath([absolute, cwd]) == cwd
    return [cwd if inside_cwd else os.path.dirname(absolute)]


def _read_bytes(
    shown: str | os.PathLike[str], real: str, checked: os.stat_result, limit: int, timeout: float
) -> bytes:
    """Open the checked file (not whatever is there now) and read at most `limit` bytes."""
    try:
        fd = os.open(real, _OPEN_FLAGS | _NOFOLLOW)
    except OSError as exc:
        raise UnreadableFile(shown, exc.strerror or str(exc)) from None
    try:
        opened = os.fstat(fd)
        if not stat.S_ISREG(opened.st_mode):
            raise UnreadableFile(shown, f"it is {kind_of(opened.st_mode)}, not a regular file")
        if (opened.st_dev, opened.st_ino) != (checked.st_dev, checked.st_ino):
            raise UnreadableFile(shown, "it was replaced while being opened")
        deadline = time.monotonic() + timeout
        chunks: list[bytes] = []
        size = 0
        while chunk := os.read(fd, CHUNK_BYTES):
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:
                raise UnreadableFile(shown, _too_large(size, limit, at_least=True))
            if time.monotonic() > deadline:
                raise UnreadableFile(shown, f"reading it took longer than {timeout:g} s")
        return b"".join(chunks)
    except OSError as exc:
        raise UnreadableFile(shown, exc.strerror or str(exc)) from None
    finally:
        os.close(fd)


def _too_large(size: int, limit: int, at_least: bool = False) -> str:
    more = "at least " if at_least else ""
    return f"it is {more}{_megabytes(size)}, more than the {_megabytes(limit)} a source may be"


def _megabytes(size: int) -> str:
    return f"{size / (1024 * 1024):.1f} MB" if size >= 1024 * 1024 else f"{size} bytes"
