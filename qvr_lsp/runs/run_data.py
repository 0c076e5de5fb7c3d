"""The data file of a run: checked when the run is asked for, read when it starts, held once.

Runs wait for a worker (`worker_slots`). Each run used to read its data file
when it was asked for and hold the bytes while it waited, then encode them
(base64 in a JSON line) on the event loop: eight runs of one 248 MB file
queued behind another held 4.5 GB and stalled the server for seconds. Now:

- when a run is asked for, its path is resolved inside the workspace
  (`datapaths`) and the file checked without reading it (`check_data_file`:
  a regular file, within the limit), so a refusal still comes at once;
- when its worker starts, the file is read in a thread through `DataFiles`,
  which holds each file once, by its real path, device, inode, modification
  time and size: runs of the same unchanged file share one copy, dropped
  when the last of them has handed it to its worker;
- the bytes go to the worker raw, after the request's JSON line, written by a
  thread (`inference_runs`), never encoded or copied on the event loop.

The worker never opens a path the client named: it parses the bytes the
server read (see `qvr_core.host.datafile`).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from qvr_core.host.datafile import DataFile, DataFileError, check_file, read_file


@dataclass(frozen=True)
class DataSource:
    """A data file a run will read: its real path, checked when the run was asked for."""

    path: Path
    size: int
    limit: int

    @property
    def name(self) -> str:
        """How the run names it (`DataFile.name`, as `read_file` gives it)."""
        return str(self.path)


def check_data_file(path: Path, limit: int) -> DataSource:
    """`path` as `read_file` would accept it, without reading it (DataFileError otherwise)."""
    return DataSource(path, check_file(path, limit), limit)


Key = tuple[str, int, int, int, int]


def _key(path: Path) -> Key:
    try:
        st = os.stat(path)
    except OSError as e:
        raise DataFileError(f"cannot read data file {path}: {e.strerror or e}") from None
    return (str(path), st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size)


@dataclass
class _Held:
    reading: asyncio.Future[DataFile]
    users: int = 0


class DataFiles:
    """Data files being handed to workers, each held once however many runs use it."""

    def __init__(self) -> None:
        self._held: dict[Key, _Held] = {}
        self.reads = 0  # files read so far (for the tests: one per distinct file in use)

    @property
    def held(self) -> int:
        """How many distinct files are held now."""
        return len(self._held)

    async def acquire(self, source: DataSource) -> tuple[DataFile, Callable[[], None]]:
        """The file's bytes, read in a thread unless another run holds them already, and
        the function that lets them go (call it once the worker has them).

        Raises DataFileError when the file can no longer be read (it changed
        into something `read_file` refuses, or went away).
        """
        key = await asyncio.to_thread(_key, source.path)
        held = self._held.get(key)
        if held is None:
            self.reads += 1
            reading = asyncio.ensure_future(asyncio.to_thread(read_file, source.path, source.limit))
            held = self._held[key] = _Held(reading)
        held.users += 1
        released = False

        def release() -> None:
            nonlocal released
            if released:
                return
            released = True
            held.users -= 1
            if held.users == 0 and self._held.get(key) is held:
                del self._held[key]
                if not held.reading.done():  # nobody waits: let the result go
                    held.reading.add_done_callback(_retrieve)

        try:
            return await asyncio.shield(held.reading), release
        except BaseException:
            release()
            raise


def _retrieve(future: asyncio.Future[DataFile]) -> None:
    """Take a result nobody waits for (so that asyncio does not log its exception)."""
    if not future.cancelled():
        future.exception()
