"""A saved run's file sized from its headers, before any of its values is read.

`qvr compare` and `qvr plot` read the files `qvr run --output` writes: InferenceData
in netCDF (HDF5, which ArviZ opens with h5netcdf) or, without ArviZ, an `.npz` of
`group/variable` arrays. Such a file says how large its arrays are before it holds
them: an HDF5 dataset declares its shape and dtype in its metadata (a dataset
never written is a few bytes on disk whatever its shape: a 140 KB file can declare
3 GB), an `.npz` member's `.npy` header its shape and dtype (a 3 MB archive of
compressed zeros can hold 3 GB). So what reading may hold is known from those
alone (`size_run_file`, h5py's metadata and `numpy.lib.format`'s header readers,
no value decoded), and a file over the memory budget (`qvr run --data`'s:
`resources.default_budget`, or `--memory-budget`) is refused in one line naming the
file, the largest variable and the bytes (`RunFileTooLargeError`).

What reading holds (`RunFileSize.total`) is every variable as loaded (a number as
a float64 at least: xarray decodes scaled integers to floats), every attribute,
each object's bookkeeping, and the working copies the command makes of a group's
numbers (`working`: `az.loo` makes some four of the log-likelihood). It is an
upper bound: ArviZ opens the groups lazily and a command loads only what it reads.

An `.npz` member is refused unless it is a `.npy` array of a `group/variable` key
(numpy's reader returns any other member whole, as bytes), and one whose header
declares more bytes than the member holds is refused before an array is made for it.
"""

from __future__ import annotations

import math
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np

from qvr_core.host.datafile import printable, quoted
from qvr_core.host.npy_headers import dtype_name, read_header
from qvr_core.runtime.errors import shown_error
from qvr_core.text.units import format_bytes

#: Bytes a number takes once loaded, at least (xarray decodes scaled integers to float64).
LOADED_NUMBER = 8
#: Bytes of one Python object an element of a variable-length or object dtype becomes.
OBJECT_ELEMENT = 64
#: Bookkeeping of one group, variable or attribute as xarray and h5py hold it.
PER_OBJECT = 4096
#: Bookkeeping of one entry of a zip directory as Python's `zipfile` holds it.
ZIP_ENTRY = 1024


class RunFileError(Exception):
    """A run's file that cannot be compared: unreadable, or without what is needed."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


class RunFileTooLargeError(RunFileError):
    """A run's file whose arrays, by their headers, would not fit the memory budget."""


@dataclass(frozen=True)
class Stored:
    """One array of a run's file as its header declares it: `group/name`, shape, dtype."""

    group: str
    name: str
    shape: tuple[int, ...]
    dtype: np.dtype[Any]

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        """Bytes as stored (what the header declares)."""
        return self.numel * self.dtype.itemsize

    @property
    def loaded(self) -> int:
        """Bytes once read: at least a float64 a number, a Python object an object."""
        if self.dtype.hasobject:
            return self.numel * max(self.dtype.itemsize, OBJECT_ELEMENT)
        if self.dtype.kind in "biufc":
            return self.numel * max(self.dtype.itemsize, LOADED_NUMBER)
        return self.nbytes

    def describe(self) -> str:
        where = f"{self.group}/{self.name}" if self.group else self.name
        return (
            f"{quoted(where)}: {self.numel:,} {_dtype(self.dtype)} values of shape "
            f"{self.shape}, {format_bytes(self.nbytes)} by its header"
        )


@dataclass(frozen=True)
class RunFileSize:
    """What reading a run's file may hold at its peak, from its headers."""

    variables: tuple[Stored, ...]
    #: attributes and the bookkeeping of every object, in bytes
    overhead: int
    #: extra bytes a number of a group (by name) takes in the command's working copies
    working: Mapping[str, int]

    def need_of(self, v: Stored) -> int:
        return v.loaded + v.numel * self.working.get(v.group, 0)

    @property
    def total(self) -> int:
        return self.overhead + sum(self.need_of(v) for v in self.variables)

    def variables_of(self, group: str) -> list[Stored]:
        return [v for v in self.variables if v.group == group]

    def check(self, path: str, budget: int, held: int = 0) -> None:
        """Refuse the file (`RunFileTooLargeError`, one line) when it and the `held`
        bytes of the files before it are over `budget`."""
        if self.total + held <= budget:
            return
        big = max(self.variables, key=self.need_of, default=None)
        what = big.describe() if big is not None else "its attributes and objects"
        besides = f" besides the {format_bytes(held)} of the runs before it" if held else ""
        raise RunFileTooLargeError(
            path,
            f"reading it needs about {format_bytes(self.total)} ({what}){besides}, over the "
            f"memory budget of {format_bytes(budget)}: give a smaller run file or raise "
            "--memory-budget",
        )


def size_run_file(path: str | Path, working: Mapping[str, int] | None = None) -> RunFileSize:
    """The arrays of a run's file (netCDF or `.npz`) as their headers declare them, none
    of their values read; `RunFileError` when the headers cannot be read or an `.npz`
    holds what `qvr run` never writes. `working`: extra bytes per number of a group."""
    p, shown = Path(path), shown_path(path)
    try:
        variables, overhead = _npz(p, shown) if p.suffix == ".npz" else _netcdf(p, shown)
    except RunFileError:
        raise
    except Exception as e:  # HDF5, zip and numpy each fail in their own words
        kind = "an .npz of a run" if p.suffix == ".npz" else "a netCDF file of InferenceData"
        raise RunFileError(
            shown, f"not {kind} ({shown_error(e)}): give a file written by qvr run --output"
        ) from None
    return RunFileSize(tuple(variables), overhead, dict(working or {}))


# ------------------------------------------------------------------ netCDF (HDF5)


def shown_path(path: str | Path) -> str:
    """A file's path as a message shows it (`printable`: no control character reaches a
    terminal)."""
    return printable(str(path), 320)


def _netcdf(path: Path, shown: str) -> tuple[list[Stored], int]:
    """Every dataset's shape and dtype and every attribute's, from HDF5's metadata (h5py
    reads no dataset's values until asked): those of the root group and of each group
    under it, what ArviZ opens (a group's own subgroups are never read). A variable is
    counted under each name it has (a link is read as often as it is named); a link to
    another file is refused, since reading it would open that file."""
    import h5py  # type: ignore[import-untyped]  # h5py ships no type information

    variables: list[Stored] = []
    overhead = 0
    with h5py.File(path, "r") as f:
        groups = [("", f)]
        for name in f:
            _local(h5py, f, "", name, shown)
            if isinstance(f.get(name), h5py.Group):
                groups.append((name, f[name]))
        for group_name, group in groups:
            overhead += PER_OBJECT + _attributes(group)
            for name in group:
                _local(h5py, group, group_name, name, shown)
                obj = group.get(name)  # None for a dangling soft link
                if isinstance(obj, h5py.Dataset):
                    overhead += PER_OBJECT + _attributes(obj)
                    shape = () if obj.shape is None else tuple(int(n) for n in obj.shape)
                    variables.append(Stored(group_name, name, shape, np.dtype(obj.dtype)))
    return variables, overhead


def _local(h5py: Any, group: Any, group_name: str, name: str, shown: str) -> None:
    if isinstance(group.get(name, getlink=True), h5py.ExternalLink):
        where = f"{group_name}/{name}" if group_name else name
        raise RunFileError(
            shown,
            f"{quoted(where)} links to another file: give a file written by qvr run --output",
        )


def _attributes(obj: Any) -> int:
    """The bytes of an object's attributes once read, from their shapes and dtypes."""
    total = 0
    for name in obj.attrs:
        attribute = obj.attrs.get_id(name)
        shape = attribute.shape or ()
        total += PER_OBJECT + Stored("", name, tuple(shape), np.dtype(attribute.dtype)).loaded
    return total


# ------------------------------------------------------------------ .npz


def _npz(path: Path, shown: str) -> tuple[list[Stored], int]:
    """Every member's key, shape and dtype from its `.npy` header (its first bytes
    decompressed, no more), checked against the size the zip declares for it."""
    variables: list[Stored] = []
    with zipfile.ZipFile(path) as archive:
        infos = [i for i in archive.infolist() if not i.is_dir()]
        for info in infos:
            variables.append(_member(archive, info, shown))
    return variables, len(infos) * ZIP_ENTRY


def _member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, shown: str) -> Stored:
    key = info.filename.removesuffix(".npy")
    group, _, name = key.partition("/")
    if not info.filename.endswith(".npy") or not group or not name:
        raise RunFileError(
            shown,
            f"{quoted(info.filename)} is not a group/variable.npy array: give a file written "
            "by qvr run --output",
        )
    with archive.open(info) as f:
        try:
            shape, dtype = _header(f)
        except (ValueError, OSError, EOFError, zipfile.BadZipFile) as e:
            raise RunFileError(
                shown, f"{quoted(key)} is not a .npy array ({shown_error(e)})"
            ) from None
        start = f.tell()
    if dtype.hasobject:
        raise RunFileError(
            shown, f"{quoted(key)} holds Python objects, which are never loaded (no pickles)"
        )
    stored = Stored(group, name, shape, dtype)
    if info.file_size < start + stored.nbytes:
        raise RunFileError(
            shown,
            f"{quoted(key)} declares {stored.nbytes:,} bytes but its member holds "
            f"{max(info.file_size - start, 0):,}: the file is damaged",
        )
    return stored


def _header(f: IO[bytes]) -> tuple[tuple[int, ...], np.dtype[Any]]:
    shape, _, dtype, _ = read_header(f)
    if any(n < 0 for n in shape):
        raise ValueError(f"a negative size in {shape}")
    return shape, dtype


def _dtype(dtype: np.dtype[Any]) -> str:
    return printable(dtype_name(dtype))


__all__ = [
    "RunFileError",
    "RunFileSize",
    "RunFileTooLargeError",
    "Stored",
    "shown_path",
    "size_run_file",
]
