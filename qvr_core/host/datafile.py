"""A data file read once, whole, as bytes (torch-free, so the language server can read it).

The language server reads the file a run asks for inside the workspace and
hands the bytes to the worker, so the worker never opens a path a client
named and what it parses is what the server checked (no time-of-check to
time-of-use gap). `qvr_core.runs.data` parses and validates the bytes.

What a file holds (its name, its keys, a CSV's header cells) is shown in
messages through `printable` and `quoted`: a control character cannot reach a
terminal and a key cannot form a link in the editor's notification.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from qvr_core.text.units import format_bytes

DATA_SUFFIXES = (".pt", ".npz", ".csv", ".json")
MAX_DATA_BYTES = 1 << 30
#: The most characters of one name a message shows (a key can be any length).
MAX_SHOWN = 80
#: Characters escaped with a backslash even though printable: `(` and `<` would let a
#: key such as `[x](command:...)` or `<command:...>` form a link where the message is
#: rendered (a VS Code notification links `[text](command:...)`, markdown links
#: `<scheme:...>`), and a backtick would open inline code there.
_MARKUP = frozenset("`()<>")


def printable(text: str, limit: int = MAX_SHOWN) -> str:
    """`text` safe to show in a one-line message: every character that is not printable
    (control characters, NUL, ANSI escapes, line breaks, bidirectional overrides) as a
    Python-style escape, markup characters backslashed, at most `limit` characters."""
    out = []
    for i, ch in enumerate(text):
        if i == limit:
            out.append("...")
            break
        if ch in _MARKUP:
            out.append("\\" + ch)
        elif ch.isprintable():
            out.append(ch)
        elif ord(ch) < 0x100:
            out.append(f"\\x{ord(ch):02x}")
        elif ord(ch) < 0x10000:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    return "".join(out)


def quoted(key: str) -> str:
    """A key or a header cell in a message: `'x'`, made `printable`."""
    return f"'{printable(key)}'"


def quoted_list(keys: Iterable[str], limit: int = 8) -> str:
    """`'a', 'b'`: keys `quoted`, the first `limit` of them and how many more."""
    keys = list(keys)
    shown = ", ".join(quoted(k) for k in keys[:limit])
    return shown + (f" and {len(keys) - limit:,} more" if len(keys) > limit else "")


class DataFileError(ValueError):
    """The file cannot be read, is not a regular file, or is too large."""


class DataFileTooLargeError(DataFileError):
    """The file is over the size limit or the memory budget: refused before it is read."""


@dataclass(frozen=True)
class DataFile:
    """The bytes of a data file; `name` names it in messages and its suffix picks the format."""

    name: str
    content: bytes


def read_file(
    path: str | Path, limit: int = MAX_DATA_BYTES, *, budget: int | None = None
) -> DataFile:
    """Read a regular file whole (not a FIFO or a device), refusing one over `limit` bytes
    or, given a memory `budget`, over the budget (the bytes alone would not fit it)."""
    p = Path(path)
    with _opened(p, limit, budget) as (f, size, limit, over, shown):
        content = _read_up_to(f, size, limit)
    if len(content) > limit:
        raise DataFileTooLargeError(f"data file {shown} grew over {over} while read")
    return DataFile(str(p), content)


def check_file(path: str | Path, limit: int = MAX_DATA_BYTES) -> int:
    """The size of a file `read_file` would read now, without reading it (what a server
    checks when a run is asked for, to refuse at once); DataFileError otherwise."""
    with _opened(Path(path), limit, None) as (_, size, _, _, _):
        return size


@contextmanager
def _opened(
    p: Path, limit: int, budget: int | None
) -> Iterator[tuple[BinaryIO, int, int, str, str]]:
    """The file open for reading, checked to be regular and within `limit` (or the budget):
    (file, size, the limit that applies, how it is named, the path as shown).

    Opened non-blocking and checked with fstat on the open descriptor, so a
    FIFO cannot block the reader and the file checked is the file read.
    """
    shown = printable(str(p), limit=4 * MAX_SHOWN)
    over = f"the limit of {limit:,} bytes"
    if budget is not None and budget < limit:
        limit, over = budget, f"the memory budget of {format_bytes(budget)}"
    try:
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as e:
        raise DataFileError(f"cannot read data file {shown}: {e.strerror or e}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise DataFileError(f"data file {shown} is not a regular file")
        if info.st_size > limit:
            raise DataFileTooLargeError(f"data file {shown} is {info.st_size:,} bytes, over {over}")
        with os.fdopen(fd, "rb", closefd=False) as f:
            yield f, info.st_size, limit, over, shown
    except OSError as e:
        raise DataFileError(f"cannot read data file {shown}: {e.strerror or e}") from None
    finally:
        os.close(fd)


def _read_up_to(f: BinaryIO, size: int, limit: int) -> bytes:
    """The file's bytes, at most `limit` and one: `size` (what fstat said) at once, then
    whatever it grew by (a buffer is never larger than the file, nor the limit)."""
    chunks = [f.read(size + 1)]
    total = len(chunks[0])
    while total <= limit:
        more = f.read(min(1 << 20, limit + 1 - total))
        if not more:
            break
        chunks.append(more)
        total += len(more)
    return b"".join(chunks)
