"""A server's folder of kept runs is its own, and a new server removes the folders of
servers that are gone, never a live one's, a link, or anything else (more in
`tests/security/test_kept_runs_cleanup.py`)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

from qvr_lsp.runs.keep_dirs import KEEP_DIR_PREFIX, make_keep_dir, remove_abandoned, remove_keep_dir


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


def _gone_servers_folder(base: Path) -> Path:
    """A folder made by a server process that has ended."""
    made = subprocess.run(
        [sys.executable, "-c", "import sys; from qvr_lsp.runs.keep_dirs import make_keep_dir; "
         "print(make_keep_dir(sys.argv[1]))", str(base)],
        check=True, capture_output=True, text=True, cwd=Path(__file__).resolve().parents[2],
    )  # fmt: skip
    return Path(made.stdout.strip())


def test_only_the_folders_of_servers_that_are_gone_are_removed(tmp_path: Path) -> None:
    alive = Path(make_keep_dir(str(tmp_path)))
    dead = _gone_servers_folder(tmp_path)  # it removed none: `alive` is live
    (dead / "inner").mkdir(parents=True)
    (dead / "inner" / "run.nc").write_bytes(b"x")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("mine")
    link = tmp_path / f"{KEEP_DIR_PREFIX}{_dead_pid()}-{'a' * 32}"
    link.symlink_to(outside, target_is_directory=True)
    other = tmp_path / f"{KEEP_DIR_PREFIX}notapid-zzz"
    other.mkdir()
    a_file = tmp_path / f"{KEEP_DIR_PREFIX}{_dead_pid()}-{'b' * 32}"
    a_file.write_text("a file")

    assert remove_abandoned(tmp_path) == [dead]
    assert not dead.exists()
    assert alive.is_dir() and other.is_dir() and a_file.is_file()
    assert link.is_symlink() and (outside / "keep.txt").read_text() == "mine"
    remove_keep_dir(str(alive))
    assert not alive.exists()


def test_making_a_folder_removes_the_dead_ones_first(tmp_path: Path) -> None:
    dead = _gone_servers_folder(tmp_path)
    made = Path(make_keep_dir(str(tmp_path)))
    assert not dead.exists() and made.is_dir()
    remove_keep_dir(str(made))


def test_a_missing_base_removes_nothing(tmp_path: Path) -> None:
    assert remove_abandoned(tmp_path / "missing") == []
