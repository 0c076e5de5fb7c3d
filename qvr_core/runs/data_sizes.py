"""What reading a data file holds in memory, known before its values are decoded.

`qvr_core.runs.data` reads a file in two steps: first its sizes, from what the
format says ahead of its values, then its values, only when what reading will
hold fits the run's memory budget:

- `.npz`: the zip directory and each member's `.npy` header give every
  array's shape and dtype (an object dtype is refused there: no pickle is
  ever loaded);
- `.pt`: the zip directory gives the bytes of every storage record and of the
  pickle, all that `torch.load` materialises; the tensors' shapes, known once
  loaded and before any value is touched, give what converting them takes (a
  view can stand for more numbers than its storage holds);
- `.csv`, `.json`: separators counted in the bytes (C speed, no objects made)
  bound the number of values and the parser's objects before parsing.

What reading holds (`Need`) is the file's bytes, the arrays as stored, the
parser's own objects, and `PER_NUMBER` bytes for each number: the copies the
run makes of its data (a cast to its dtype, a rounding, a mask). Over the
budget the file is refused with `RunTooLargeError`, one line naming what is big.
"""

from __future__ import annotations

import io
import math
import zipfile
from dataclasses import dataclass

import numpy as np

from qvr_core.host.datafile import printable, quoted
from qvr_core.host.npy_headers import dtype_name, read_header
from qvr_core.inference.errors import InferenceError, RunTooLargeError
from qvr_core.runtime.errors import shown_error
from qvr_core.text.units import format_bytes

#: Per number, besides the number as read: the run's copy of it (8 bytes at most: an
#: int64 index or a float64), a working copy as large (a cast, a rounding, the value
#: the run conforms) and the one-byte mask of the finiteness check.
PER_NUMBER = 17
#: One entry of a zip directory as Python's `zipfile` (or torch's reader) holds it.
ZIP_ENTRY = 1024
#: What one byte of a `.pt` pickle can make (an empty dict is one opcode, 64 bytes).
PICKLE_BYTE = 64
#: One header cell of a CSV: the parsed cell, its column record, its index tuple.
CSV_HEADER_CELL = 320
#: One CSV value: its slot in the rows read (8 bytes) and in the arrays by key (8).
CSV_VALUE = 16
#: What `json.loads` makes, at most: per number (a float is 24 bytes and its slot in a
#: list 8, with the list's spare room), per string (51 bytes for a short one; its
#: characters are the text's), per array, per object and per key (measured with
#: tracemalloc on lists of each).
JSON_NUMBER = 40
JSON_STRING = 64
JSON_ARRAY = 112
JSON_OBJECT = 240
JSON_KEY = 160
#: Per JSON number once parsed: the walk that tells integers from reals and its array.
JSON_VALUE = 16

_CENTRAL_ENTRY = b"PK\x01\x02"


@dataclass(frozen=True)
class Need:
    """What reading a file holds at its peak, in bytes, and what is big in words."""

    total: int
    what: str

    def check(self, name: str, budget: int) -> None:
        """Refuse the file (`RunTooLargeError`, one line) when over `budget`."""
        if self.total > budget:
            raise RunTooLargeError(
                f"{printable(name, 320)}: reading it needs about {format_bytes(self.total)} "
                f"({self.what}), over the memory budget of {format_bytes(budget)}; give a "
                "smaller data file or raise the memory budget"
            )


def text_bytes(content: bytes) -> int:
    """The most a decoded text takes: a byte a character when ASCII, else up to four."""
    return len(content) if content.isascii() else 4 * len(content)


# ------------------------------------------------------------------ .npz


@dataclass(frozen=True)
class NpyMember:
    """One array of an `.npz`, from its `.npy` header."""

    key: str
    info: zipfile.ZipInfo
    shape: tuple[int, ...]
    dtype: np.dtype[np.generic]
    fortran_order: bool
    version: tuple[int, int]

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.numel * self.dtype.itemsize

    def describe(self) -> str:
        return (
            f"{quoted(self.key)}: {self.numel:,} {dtype_name(self.dtype)} numbers of shape "
            f"{self.shape}, {format_bytes(self.nbytes)} as stored"
        )


def npz_members(archive: zipfile.ZipFile, name: str) -> list[NpyMember]:
    """Every member's key, shape and dtype from its header, none of its values read;
    a member that is not a `.npy` array of numbers is refused by its key."""
    shown = printable(name)
    members: list[NpyMember] = []
    seen: set[str] = set()
    for info in archive.infolist():
        if info.is_dir():
            continue
        if not info.filename.endswith(".npy"):
            raise InferenceError(
                f"{shown}: {quoted(info.filename)} is not an array (an .npz holds .npy members)"
            )
        key = info.filename[: -len(".npy")]
        if key in seen:
            raise InferenceError(f"{shown}: {quoted(key)} is in the archive twice")
        seen.add(key)
        with archive.open(info) as f:
            try:
                shape, fortran_order, dtype, version = read_header(f)
            except (ValueError, OSError, EOFError) as e:
                raise InferenceError(
                    f"{shown}: {quoted(key)} is not a .npy array ({shown_error(e)})"
                ) from None
        if dtype.hasobject:
            raise InferenceError(
                f"cannot read {shown}: {quoted(key)} holds Python objects, which are never "
                "loaded (no pickles); save numbers"
            )
        if dtype.kind not in "biuf" or dtype.subdtype is not None or dtype.itemsize > 8:
            raise InferenceError(
                f"{shown}: {quoted(key)} holds {dtype_name(dtype)} values; data must be numbers"
            )
        if any(n < 0 for n in shape):
            raise InferenceError(f"{shown}: {quoted(key)} has a negative size in {shape}")
        members.append(NpyMember(key, info, tuple(shape), dtype, bool(fortran_order), version))
    return members


def npz_need(content: bytes, members: list[NpyMember]) -> Need:
    """The file, its directory, every array as stored and `PER_NUMBER` a number."""
    total = directory_need(content).total
    total += sum(m.numel * (m.dtype.itemsize + PER_NUMBER) for m in members)
    big = max(members, key=lambda m: m.nbytes, default=None)
    return Need(total, big.describe() if big is not None else "no arrays")


# ------------------------------------------------------------------ .pt


def pt_need(content: bytes, name: str, budget: int) -> Need:
    """What `torch.load` materialises: every record of the archive (storages, the
    pickle) and the pickle's objects. A file that is not a zip archive is refused, and
    a directory over the budget before it is read."""
    shown = printable(name)
    if not content.startswith(b"PK\x03\x04"):
        raise InferenceError(
            f"{shown}: not a torch.save archive (a zip; torch.save writes one since torch 1.6)"
        )
    directory = directory_need(content, copies=2)  # zipfile's here, torch's reader's
    directory.check(name, budget)
    try:
        with zipfile.ZipFile(io.BytesIO(content)) as archive:
            infos = archive.infolist()
    except (zipfile.BadZipFile, ValueError, OSError, EOFError) as e:
        raise InferenceError(f"cannot read {shown}: {shown_error(e)}") from None
    records = sum(i.file_size for i in infos)
    pickled = sum(i.file_size for i in infos if i.filename.endswith(".pkl"))
    biggest = max(infos, key=lambda i: i.file_size, default=None)
    what = (
        f"{len(infos):,} records of {format_bytes(records)} in all, the largest "
        f"{quoted(biggest.filename)} of {format_bytes(biggest.file_size)}"
        if biggest is not None
        else "an empty archive"
    )
    return Need(directory.total + records + pickled * PICKLE_BYTE, what)


def directory_need(content: bytes, copies: int = 1) -> Need:
    """The file's bytes and `copies` of its zip directory as a reader holds it."""
    entries = content.count(_CENTRAL_ENTRY) + 1
    return Need(
        len(content) + copies * entries * ZIP_ENTRY,
        f"a zip directory of up to {entries:,} entries",
    )


# ------------------------------------------------------------------ text formats


def csv_need(content: bytes) -> Need:
    """At most what reading a CSV holds: its text, its header's cells, and every value
    (a value ends at a comma or a line's end, so there are no more than those)."""
    lines = (
        content.count(b"\n") + content.count(b"\r") - content.count(b"\r\n") + 1
    )  # "\r\n" is one line end
    values = content.count(b",") + lines
    header = csv_header_cells(content)
    total = len(content) + text_bytes(content) + header * CSV_HEADER_CELL
    total += values * (CSV_VALUE + PER_NUMBER)
    return Need(
        total,
        f"up to {values:,} values in {format_bytes(len(content))} of CSV, {header:,} header cells",
    )


def csv_header_cells(content: bytes) -> int:
    """At most how many cells the header row has: its commas and one. The header ends
    at the first line end outside quotes (a quoted cell may hold a line break; a doubled
    quote inside one toggles twice, so the parity holds)."""
    pos, end = 0, len(content)
    while pos < len(content):
        quote = content.find(b'"', pos)
        ends = [i for i in (content.find(b"\n", pos), content.find(b"\r", pos)) if i >= 0]
        if ends and (quote < 0 or min(ends) < quote):
            end = min(ends)
            break
        if quote < 0:
            break
        closing = content.find(b'"', quote + 1)
        if closing < 0:
            break
        pos = closing + 1
    return content.count(b",", 0, end) + 1


def json_need(content: bytes) -> Need:
    """At most what `json.loads` and the arrays made from it hold: an element ends at a
    comma or a closing bracket (one for each opening one), and a string is two quotes
    (a key's too, so the numbers are no more than the elements less the strings)."""
    arrays, objects = content.count(b"["), content.count(b"{")
    keys, strings = content.count(b":"), content.count(b'"') // 2
    elements = content.count(b",") + arrays + objects + 1
    numbers = max(elements - strings, 0)
    total = len(content) + text_bytes(content)
    total += numbers * (JSON_NUMBER + JSON_VALUE + PER_NUMBER) + strings * JSON_STRING
    total += arrays * JSON_ARRAY + objects * JSON_OBJECT + keys * JSON_KEY
    return Need(total, f"up to {numbers:,} numbers in {format_bytes(len(content))} of JSON")


__all__ = [
    "PER_NUMBER",
    "Need",
    "NpyMember",
    "csv_header_cells",
    "csv_need",
    "directory_need",
    "json_need",
    "npz_members",
    "npz_need",
    "pt_need",
    "shown_error",
    "text_bytes",
]
