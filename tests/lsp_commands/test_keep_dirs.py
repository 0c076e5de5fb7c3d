"""A server's folder of kept runs is its own, and a new server removes the folders of
servers that are gone, never a live one's, a link, or anything else."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

from qvr_lsp.keep_dirs import KEEP_DIR_PREFIX, make_keep_dir, remove_abandoned


def _dead_pid() -> int:
    """The id of a process that has ended."""
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], check=True,
                          capture_output=True, text=True)  # fmt: skip
    return int(done.stdout)


def test_a_new_folder_is_private_and_named_by_this_process(tmp_path: Path) -> None:
    folder = Path(make_keep_dir(str(tmp_path)))
    assert folder.parent == tmp_path
    assert folder.name.startswith(f"{KEEP_DIR_PREFIX}{os.getpid()}-")
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700


def test_only_the_folders_of_servers_that_are_gone_are_removed(tmp_path: Path) -> None:
    dead = tmp_path / f"{KEEP_DIR_PREFIX}{_dead_pid()}-abc123"
    (dead / "inner").mkdir(parents=True)
    (dead / "inner" / "run.nc").write_bytes(b"x")
    alive = tmp_path / f"{KEEP_DIR_PREFIX}{os.getpid()}-def456"
    alive.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("mine")
    link = tmp_path / f"{KEEP_DIR_PREFIX}{_dead_pid()}-link99"
    link.symlink_to(outside, target_is_directory=True)
    other = tmp_path / f"{KEEP_DIR_PREFIX}notapid-zzz"
    other.mkdir()
    a_file = tmp_path / f"{KEEP_DIR_PREFIX}{_dead_pid()}-file00"
    a_file.write_text("a file")

    assert remove_abandoned(tmp_path) == [dead]
    assert not dead.exists()
    assert alive.is_dir() and other.is_dir() and a_file.is_file()
    assert link.is_symlink() and (outside / "keep.txt").read_text() == "mine"


def test_making_a_folder_removes_the_dead_ones_first(tmp_path: Path) -> None:
    dead = tmp_path / f"{KEEP_DIR_PREFIX}{_dead_pid()}-old000"
    dead.mkdir()
    made = Path(make_keep_dir(str(tmp_path)))
    assert not dead.exists() and made.is_dir()


def test_a_missing_base_removes_nothing(tmp_path: Path) -> None:
    assert remove_abandoned(tmp_path / "missing") == []
