"""Writing a rewritten source file back in place, for `qvr fmt` and `qvr migrate`.

The write is atomic: the new text goes to a temporary file in the same folder
(flushed to disk), which is then renamed over the file. A full disk or an
interrupted write leaves the file as it was, never cut mid-line. The file
keeps its permission bits (and its owner where this process may set it); a
symbolic link stays a link and its target is rewritten; a file with several
hard links gets a new inode (the other names keep the old text), as with
most editors' safe writes. Just before the rename
the file is read again: when it no longer holds the text the command read (an
editor saved it meanwhile), nothing is written and the command says so, rather
than losing that edit.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
import sys


class FileChanged(Exception):
    """The file no longer holds the text that was read from it."""


def write_back(path: str, text: str, done: str, *, original: str | None = None) -> int:
    """Write `text` to `path` as it is (no newline translation) and print `done`; exit status
    0, or 2 with one line on stderr when the file cannot be written or (with `original`,
    the text it was read as) changed since it was read; it is then left as it is."""
    try:
        replace_text(path, text, original)
    except FileChanged:
        print(
            f"qvr: {path} changed since it was read; left as it is (run the command again)",
            file=sys.stderr,
        )
        return 2
    except OSError as exc:
        print(f"qvr: cannot write {path}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    print(done)
    return 0


def replace_text(path: str, text: str, original: str | None = None) -> None:
    """Put `text` (UTF-8) in place of the file at `path`, atomically (see the module
    docstring); FileChanged when `original` is given and the file no longer holds it."""
    target = os.path.realpath(path)  # a link is kept: its target gets the new text
    before = os.stat(target)
    expected = None if original is None else original.encode("utf-8")
    if expected is not None and _read(target) != expected:
        raise FileChanged(path)
    temporary = _create_beside(target, stat.S_IMODE(before.st_mode))
    try:
        fd = os.open(temporary, os.O_WRONLY)
        try:
            _write_all(fd, text.encode("utf-8"))
            os.fsync(fd)
        finally:
            os.close(fd)
        _keep_owner(temporary, before)
        if expected is not None and _read(target) != expected:  # as late as it can be
            raise FileChanged(path)
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    _sync_folder(os.path.dirname(target))


def _create_beside(target: str, mode: int) -> str:
    """A new empty file in the folder of `target`, with `mode` (kept whatever the umask)."""
    folder, name = os.path.split(target)
    for _ in range(100):
        temporary = os.path.join(folder, f".{name}.{secrets.token_hex(4)}.tmp")
        try:
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            continue
        try:
            os.fchmod(fd, mode)
        except BaseException:
            os.close(fd)
            os.unlink(temporary)
            raise
        os.close(fd)
        return temporary
    raise FileExistsError(f"no free temporary name beside {target}")


def _write_all(fd: int, data: bytes) -> None:
    """All of `data` (os.write may write less than it was given)."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _read(path: str) -> bytes:
    with open(path, "rb") as fh:
        return fh.read()


def _keep_owner(path: str, before: os.stat_result) -> None:
    """The owner and group the file had, where this process may give them (root may)."""
    if not hasattr(os, "chown"):  # pragma: no cover - not on POSIX
        return
    status = os.stat(path)
    if (status.st_uid, status.st_gid) != (before.st_uid, before.st_gid):
        with contextlib.suppress(OSError):
            os.chown(path, before.st_uid, before.st_gid)


def _sync_folder(folder: str) -> None:
    """The rename on disk too (best effort: not every platform opens folders)."""
    with contextlib.suppress(OSError):
        fd = os.open(folder or ".", os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
