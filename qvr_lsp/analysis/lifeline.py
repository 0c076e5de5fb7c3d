"""What a child process of the server does first: end with the server, stay in its memory.

The server starts two kinds of Python child: the inference worker
(`qvr_lsp.runs.worker`) and the check of a large document (`qvr_lsp.analysis.large_check`).
Each calls `die_with_parent()` and `limit_memory()` before anything else:

- it ends when the server ends, however the server ends (even by SIGKILL):
  nobody would read its result, and both can take minutes of CPU or
  gigabytes. On Linux the kernel sends SIGKILL when the parent dies
  (`PR_SET_PDEATHSIG`, set through `prctl`); everywhere a watchdog thread
  notices that the parent changed and exits.
- its address space is capped (`RLIMIT_AS`), so a text or a run that would
  exhaust the machine fails with MemoryError in the child instead.

The server passes its process id in `QVR_SERVER_PID` (a parent that died
before the child looked would otherwise go unnoticed). This module imports
nothing heavy: a child calls it before it imports the checker or torch.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import threading
import time

try:
    import resource
except ImportError:  # not on POSIX: no address-space limit to set
    resource = None  # type: ignore[assignment]  # the module or None: callers test it

MIB = 1024 * 1024
#: The server's process id, set by the server for its children.
SERVER_PID_VARIABLE = "QVR_SERVER_PID"
PR_SET_PDEATHSIG = 1
PARENT_POLL_SECONDS = 0.25
EXIT_ORPHANED = 3


def die_with_parent(interval: float = PARENT_POLL_SECONDS) -> int:
    """End this process when the server ends; returns the server's process id."""
    parent = server_pid()
    set_parent_death_signal()
    if os.getppid() != parent:  # it died before the signal was armed
        os._exit(EXIT_ORPHANED)
    watchdog = threading.Thread(
        target=watch_parent, args=(parent, interval), name="qvr-parent-watchdog", daemon=True
    )
    watchdog.start()
    return parent


def server_pid() -> int:
    value = os.environ.get(SERVER_PID_VARIABLE, "")
    return int(value) if value.isdigit() else os.getppid()


def set_parent_death_signal() -> bool:
    """Ask the kernel for SIGKILL when the parent ends (Linux); True when it was armed."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0)
    except (OSError, AttributeError):  # no libc to call: the watchdog still works
        return False


def watch_parent(parent: int, interval: float = PARENT_POLL_SECONDS) -> None:
    """Exit the process as soon as its parent is no longer `parent` (it was re-parented)."""
    while True:
        time.sleep(interval)
        if os.getppid() != parent:
            os._exit(EXIT_ORPHANED)


def limit_memory(megabytes: object) -> int | None:
    """Cap the address space at `megabytes` MiB (never above a hard limit already set).

    Anything but a positive whole number leaves the limit as it is. Returns
    the limit now in force, in MiB (None when there is none).
    """
    if resource is None:
        return None
    if isinstance(megabytes, int) and not isinstance(megabytes, bool) and megabytes > 0:
        limit = megabytes * MIB
        _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    return memory_limit_mb()


def memory_limit_mb() -> int | None:
    """The address-space limit of this process in MiB, or None when it has none."""
    if resource is None:
        return None
    soft, _hard = resource.getrlimit(resource.RLIMIT_AS)
    return None if soft == resource.RLIM_INFINITY else soft // MIB


def lower_priority(niceness: int) -> None:
    """Yield the CPU to the server (whose user is typing): batch work runs `niceness` lower."""
    with contextlib.suppress(OSError, AttributeError):  # not allowed here: run as we are
        os.nice(niceness)
