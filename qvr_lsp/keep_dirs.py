"""The server's private folders of kept runs (`kept_runs`), and those of dead servers.

Each server process makes one `qvr-runs-<pid>-*` folder under the system's temporary
directory (mode 0700) and removes it when it exits. A server killed by a signal
cannot, so a new folder is made only after removing the folders of servers that are
gone: ours (same owner), real folders (never a link), named with a process id that no
longer runs. A live process with that id keeps its folder, whoever it is.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import tempfile
from pathlib import Path

KEEP_DIR_PREFIX = "qvr-runs-"
_NAME = re.compile(rf"{re.escape(KEEP_DIR_PREFIX)}(\d+)-[A-Za-z0-9_]+")


def make_keep_dir(base: str | None = None) -> str:
    """A new private folder for this process's kept runs, after removing dead ones'."""
    remove_abandoned(Path(base or tempfile.gettempdir()))
    return tempfile.mkdtemp(prefix=f"{KEEP_DIR_PREFIX}{os.getpid()}-", dir=base)  # 0700


def remove_abandoned(base: Path) -> list[Path]:
    """Remove the kept-run folders in `base` of servers that no longer run; returns them."""
    removed: list[Path] = []
    try:
        entries = list(os.scandir(base))
    except OSError:
        return removed
    for entry in entries:
        found = _NAME.fullmatch(entry.name)
        if found is None:
            continue
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
            continue
        if _running(int(found.group(1))):
            continue
        shutil.rmtree(entry.path, ignore_errors=True)
        removed.append(Path(entry.path))
    return removed


def _running(pid: int) -> bool:
    if pid <= 0:
        return True  # not a process id: leave it
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    return True
