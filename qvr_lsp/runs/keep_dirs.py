"""The server's private folders of kept runs (`kept_runs`), and those of dead servers.

Each server process makes one `qvr-runs-<pid>-<token>` folder under the system's
temporary directory (mode 0700) and removes it when it exits. A server killed by a
signal cannot, so a new folder is made only after removing the folders of servers that
are gone. A folder is removed only when all of these hold:

- qvr made it: a real folder (never a link) of this user, named `qvr-runs-<pid>-<token>`,
  holding the marker file `MARKER` (a regular file of this user) whose content is that
  same random token. A user's own folder that happens to have such a name has no
  marker naming its token, and is left alone.
- its server is gone: the live server holds an exclusive `flock` on the marker for as
  long as it runs (the kernel drops it when the process ends, however it ends). A lock
  is seen from every process of the machine, also from another PID namespace (a
  container sharing `/tmp`), where the process id in the name means nothing: the id
  is only a hint for people, never what decides.

Without `fcntl` (Windows) nothing is removed but the server's own folder.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
import stat
import tempfile
from pathlib import Path

try:
    import fcntl

    _LOCKS = True
except ImportError:  # pragma: no cover - Windows: no flock, no clean-up of others' folders
    _LOCKS = False

KEEP_DIR_PREFIX = "qvr-runs-"
#: The marker file in each folder: its token, locked by the live server.
MARKER = ".qvr-kept-runs"
_NAME = re.compile(rf"{re.escape(KEEP_DIR_PREFIX)}(\d+)-([0-9a-f]{{32}})")
#: The markers this process holds locked (folder -> open file descriptor), one a folder.
_held: dict[str, int] = {}


def make_keep_dir(base: str | None = None) -> str:
    """A new private folder for this process's kept runs (0700, its marker locked for as
    long as this process runs), after removing dead servers' folders."""
    where = Path(base or tempfile.gettempdir())
    remove_abandoned(where)
    while True:
        token = secrets.token_hex(16)
        folder = where / f"{KEEP_DIR_PREFIX}{os.getpid()}-{token}"
        try:
            os.mkdir(folder, 0o700)
        except FileExistsError:  # pragma: no cover - 128 random bits
            continue
        break
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(folder / MARKER, flags, 0o600)
    try:
        if _LOCKS:
            # Locked before the token is written: a clean-up that opened the marker first
            # reads no token and leaves the folder; this waits for it to let go.
            fcntl.flock(fd, fcntl.LOCK_EX)
        os.write(fd, token.encode("ascii"))
    except BaseException:
        os.close(fd)
        shutil.rmtree(folder, ignore_errors=True)
        raise
    _held[str(folder)] = fd
    return str(folder)


def remove_keep_dir(folder: str) -> None:
    """Remove this process's `folder` of kept runs and let go of its lock."""
    shutil.rmtree(folder, ignore_errors=True)
    fd = _held.pop(folder, None)
    if fd is not None:
        os.close(fd)


def remove_abandoned(base: Path) -> list[Path]:
    """Remove the kept-run folders in `base` that qvr made and whose server no longer
    runs; returns them."""
    removed: list[Path] = []
    if not _LOCKS or not hasattr(os, "getuid"):
        return removed
    try:
        entries = list(os.scandir(base))
    except OSError:
        return removed
    for entry in entries:
        found = _NAME.fullmatch(entry.name)
        if found is None or entry.path in _held:
            continue
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
            continue
        if _abandoned(Path(entry.path), found.group(2)):
            removed.append(Path(entry.path))
    return removed


def _abandoned(folder: Path, token: str) -> bool:
    """Remove `folder` if its marker names `token` and no process holds its lock; whether
    it was removed. The lock is held while removing, so a server cannot start using the
    folder meanwhile."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(folder / MARKER, flags)
    except OSError:  # no marker (not qvr's), a link, or gone meanwhile
        return False
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid():
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # a live server holds it
            return False
        if os.read(fd, 64) != token.encode("ascii"):
            return False
        shutil.rmtree(folder, ignore_errors=True)
        return True
    finally:
        with contextlib.suppress(OSError):
            os.close(fd)
