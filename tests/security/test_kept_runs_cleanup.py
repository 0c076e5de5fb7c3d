"""The clean-up of dead servers' kept-run folders (`qvr_lsp.runs.keep_dirs`) removes only what
qvr made and whose server is gone: never a user's own folder that has the name, never a
live server's folder whose process id means nothing here (another PID namespace: a
container sharing /tmp), and always a dead server's folder, whatever process now has
its old id."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from qvr_lsp.runs.keep_dirs import KEEP_DIR_PREFIX, remove_abandoned

ROOT = Path(__file__).resolve().parents[2]
MAKE = (
    "import sys\n"
    "from qvr_lsp.runs.keep_dirs import make_keep_dir\n"
    "print(make_keep_dir(sys.argv[1]), flush=True)\n"
    "sys.stdin.read()\n"  # alive, and holding the folder, until the test closes stdin
)


def _dead_pid() -> int:
    """The id of a process that has ended."""
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], check=True,
                          capture_output=True, text=True)  # fmt: skip
    return int(done.stdout)


@contextmanager
def _server_folder(base: Path) -> Iterator[Path]:
    """The kept-run folder of another live server process, for the block."""
    child = subprocess.Popen(
        [sys.executable, "-c", MAKE, str(base)],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None and child.stdin is not None
        yield Path(child.stdout.readline().strip())
    finally:
        assert child.stdin is not None
        child.stdin.close()
        child.wait(timeout=60)


def _renamed(folder: Path, pid: int) -> Path:
    """`folder` named with `pid` instead of its maker's id (its token kept)."""
    suffix = folder.name.removeprefix(KEEP_DIR_PREFIX).split("-", 1)[1]
    return folder.rename(folder.with_name(f"{KEEP_DIR_PREFIX}{pid}-{suffix}"))


def test_a_users_own_folder_with_the_name_is_never_removed(tmp_path: Path) -> None:
    token = "0123456789abcdef" * 2
    plain = tmp_path / f"{KEEP_DIR_PREFIX}{_dead_pid()}-{token}"
    plain.mkdir()
    (plain / "notes.txt").write_text("mine")
    forged = tmp_path / f"{KEEP_DIR_PREFIX}{_dead_pid()}-{'f' * 32}"
    forged.mkdir()
    (forged / ".qvr-kept-runs").write_text(token)  # a marker, not naming this folder
    assert remove_abandoned(tmp_path) == []
    assert (plain / "notes.txt").read_text() == "mine" and forged.is_dir()


def test_a_live_servers_folder_stays_whatever_its_process_id_says(tmp_path: Path) -> None:
    with _server_folder(tmp_path) as folder:
        seen_elsewhere = _renamed(folder, _dead_pid())  # the id of no process here
        assert remove_abandoned(tmp_path) == []
        assert seen_elsewhere.is_dir()


def test_a_gone_servers_folder_is_removed_though_its_id_runs_again(tmp_path: Path) -> None:
    with _server_folder(tmp_path) as folder:
        (folder / "run.nc").write_bytes(b"x")
    reused = _renamed(folder, os.getpid())  # its id now names a live process: this one
    assert remove_abandoned(tmp_path) == [reused]
    assert not reused.exists()
