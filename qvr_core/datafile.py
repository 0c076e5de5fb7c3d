"""A data file read once, whole, as bytes (torch-free, so the language server can read it).

The language server reads the file a run asks for inside the workspace and
hands the bytes to the worker, so the worker never opens a path a client
named and what it parses is what the server checked (no time-of-check to
time-of-use gap). `qvr_core.runs.data` parses and validates the bytes.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

DATA_SUFFIXES = (".pt", ".npz", ".csv", ".json")
MAX_DATA_BYTES = 1 << 30


class DataFileError(ValueError):
    """The file cannot be read, is not a regular file, or is too large."""


@dataclass(frozen=True)
class DataFile:
    """The bytes of a data file; `name` names it in messages and its suffix picks the format."""

    name: str
    content: bytes


def read_file(path: str | Path, limit: int = MAX_DATA_BYTES) -> DataFile:
    """Read a regular file whole (not a FIFO or a device), refusing one over `limit` bytes.

    Opened non-blocking and checked with fstat on the open descriptor, so a
    FIFO cannot block the reader and the file checked is the file read.
    """
    p = Path(path)
    try:
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as e:
        raise DataFileError(f"cannot read data file {p}: {e.strerror or e}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise DataFileError(f"data file {p} is not a regular file")
        if info.st_size > limit:
            raise DataFileError(
                f"data file {p} is {info.st_size:,} bytes, over the limit of {limit:,}"
            )
        with os.fdopen(fd, "rb", closefd=False) as f:
            content = f.read(limit + 1)
    except OSError as e:
        raise DataFileError(f"cannot read data file {p}: {e.strerror or e}") from None
    finally:
        os.close(fd)
    if len(content) > limit:
        raise DataFileError(f"data file {p} grew over the limit of {limit:,} bytes while read")
    return DataFile(str(p), content)
