"""`qvr fmt` and `qvr migrate` write in place atomically: a failed write (a full disk)
leaves the file whole, the mode is kept, a link stays a link, and a file changed
between reading and writing is not overwritten."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

import pytest

from qvr_cli.main import main
from qvr_core.cli import rewrite

MESSY = "object A:Real 2\nexport A\n"
CANONICAL = "object A : Real 2\n\nexport A\n"
OLD = "object A : FinSet 2\nlet f = A\nexport A\n"  # a top-level `let` (before 0.15)


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8"))
    return path


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


def full_disk_after(limit: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """`os.write` writes `limit` bytes in all, then fails as on a full disk."""
    real = os.write
    left = [limit]

    def write(fd: int, data: bytes | memoryview) -> int:
        if left[0] <= 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        n = real(fd, bytes(data[: left[0]]))
        left[0] -= n
        return n

    monkeypatch.setattr(os, "write", write)


@pytest.mark.parametrize("command", ["fmt", "migrate"])
def test_a_full_disk_leaves_the_file_whole(
    command: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    text = MESSY if command == "fmt" else OLD
    path = write(tmp_path, "a.qvr", text)
    full_disk_after(7, monkeypatch)  # the new text is cut mid-line
    assert main([command, str(path)]) == 2
    assert path.read_text(encoding="utf-8") == text
    err = capsys.readouterr().err
    assert f"cannot write {path}" in err and "No space left on device" in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert leftovers(tmp_path) == []


def test_the_mode_is_kept(tmp_path: Path) -> None:
    path = write(tmp_path, "a.qvr", MESSY)
    path.chmod(0o640)
    old = os.umask(0o077)  # a umask that would narrow a new file
    try:
        assert main(["fmt", str(path)]) == 0
    finally:
        os.umask(old)
    assert path.read_text(encoding="utf-8") == CANONICAL
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert leftovers(tmp_path) == []


def test_an_executable_file_stays_executable_after_migrate(tmp_path: Path) -> None:
    path = write(tmp_path, "a.qvr", OLD)
    path.chmod(0o755)
    assert main(["migrate", str(path)]) == 0
    assert "define f" in path.read_text(encoding="utf-8")
    assert stat.S_IMODE(path.stat().st_mode) == 0o755


def test_a_link_stays_a_link_and_its_target_is_rewritten(tmp_path: Path) -> None:
    target = write(tmp_path, "target.qvr", MESSY)
    link = tmp_path / "link.qvr"
    link.symlink_to(target.name)
    assert main(["fmt", str(link)]) == 0
    assert link.is_symlink() and target.read_text(encoding="utf-8") == CANONICAL


@pytest.mark.parametrize("command", ["fmt", "migrate"])
def test_a_file_changed_since_it_was_read_is_not_overwritten(
    command: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    text = MESSY if command == "fmt" else OLD
    path = write(tmp_path, "a.qvr", text)
    saved = "# saved in the editor meanwhile\n" + text
    real = rewrite.replace_text

    def edit_then_write(p: str, new: str, original: str | None = None) -> None:
        path.write_text(saved, encoding="utf-8")  # the editor saves between read and write
        real(p, new, original)

    monkeypatch.setattr(rewrite, "replace_text", edit_then_write)
    assert main([command, str(path)]) == 2
    assert path.read_text(encoding="utf-8") == saved
    err = capsys.readouterr().err
    assert f"{path} changed since it was read" in err and "Traceback" not in err
    assert leftovers(tmp_path) == []


def test_a_change_while_the_new_text_is_written_is_caught_before_the_rename(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path, "a.qvr", MESSY)
    real_fsync = os.fsync

    def fsync(fd: int) -> None:  # the temporary file is on disk: the editor saves now
        real_fsync(fd)
        if path.read_text(encoding="utf-8") == MESSY:
            path.write_text("# edited\n" + MESSY, encoding="utf-8")

    monkeypatch.setattr(os, "fsync", fsync)
    with pytest.raises(rewrite.FileChanged):
        rewrite.replace_text(str(path), CANONICAL, MESSY)
    assert path.read_text(encoding="utf-8") == "# edited\n" + MESSY
    assert leftovers(tmp_path) == []


def test_without_the_text_read_the_file_is_replaced_as_it_is(tmp_path: Path) -> None:
    path = write(tmp_path, "a.qvr", MESSY)
    rewrite.replace_text(str(path), CANONICAL)
    assert path.read_bytes() == CANONICAL.encode("utf-8")


def test_a_folder_that_cannot_be_written_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if os.geteuid() == 0:
        pytest.skip("root writes into read-only folders")
    folder = tmp_path / "ro"
    folder.mkdir()
    path = write(folder, "a.qvr", MESSY)
    folder.chmod(0o555)
    try:
        assert main(["fmt", str(path)]) == 2
    finally:
        folder.chmod(0o755)
    assert path.read_text(encoding="utf-8") == MESSY
    assert "cannot write" in capsys.readouterr().err
