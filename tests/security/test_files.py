"""`qvr_core.host.files`: what a planted file can and cannot make the tools read."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from qvr_core.host import files
from qvr_core.host.files import UnreadableFile, read_text

MODEL = "object A : Real 2\n"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "good.qvr").write_text(MODEL)
    return root


def refused(path: Path, roots: list[Path] | None, **limits: int) -> str:
    """The reason `path` is refused, which must come at once."""
    started = time.monotonic()
    with pytest.raises(UnreadableFile) as info:
        read_text(path, roots, **limits)
    assert time.monotonic() - started < 2.0
    return info.value.reason


def test_a_regular_file_and_a_link_inside_the_workspace_are_read(ws):
    (ws / "sub").mkdir()
    (ws / "sub" / "link.qvr").symlink_to(ws / "good.qvr")
    assert read_text(ws / "good.qvr", [ws]) == MODEL
    assert read_text(ws / "sub" / "link.qvr", [ws]) == MODEL


def test_a_fifo_is_refused_without_blocking(ws):
    os.mkfifo(ws / "x.qvr")
    assert "FIFO" in refused(ws / "x.qvr", [ws])
    assert "FIFO" in refused(ws / "x.qvr", None)


@pytest.mark.parametrize("device", ["/dev/stdin", "/dev/zero", "/dev/null", "/dev/tty"])
def test_links_to_devices_are_refused(ws, device):
    if not os.path.exists(os.path.realpath(device)):
        pytest.skip(f"{device} does not exist here")
    (ws / "dev.qvr").symlink_to(device)
    assert "outside the workspace" in refused(ws / "dev.qvr", [ws])
    reason = refused(ws / "dev.qvr", None)  # followed: still not a regular file
    assert "not a regular file" in reason


def test_a_link_out_of_the_workspace_is_refused(ws, tmp_path):
    secret = tmp_path / "secret.qvr"
    secret.write_text("object Secret : Real 1\n")
    (ws / "out.qvr").symlink_to(secret)
    (ws / "dir").symlink_to(tmp_path)  # a linked folder leads out too
    assert "outside the workspace" in refused(ws / "out.qvr", [ws])
    assert "outside the workspace" in refused(ws / "dir" / "secret.qvr", [ws])
    assert "outside the workspace" in refused(secret, [ws])


def test_a_directory_named_like_a_source_is_refused(ws):
    (ws / "d.qvr").mkdir()
    assert "a directory" in refused(ws / "d.qvr", [ws])


def test_size_cap(ws):
    (ws / "big.qvr").write_bytes(b"#" * 5000)
    assert "more than the 4096 bytes" in refused(ws / "big.qvr", [ws], limit=4096)
    assert read_text(ws / "big.qvr", [ws], limit=5000) == "#" * 5000


def test_a_file_that_grows_while_read_stops_at_the_cap(ws, monkeypatch):
    (ws / "grows.qvr").write_bytes(b"#" * 100)
    monkeypatch.setattr(files, "CHUNK_BYTES", 64)
    real_read = os.read

    def endless(fd: int, n: int) -> bytes:  # a file system that never reports the end
        return real_read(fd, n) or b"#" * n

    monkeypatch.setattr(files.os, "read", endless)
    assert "at least" in refused(ws / "grows.qvr", [ws], limit=1000)


def test_not_utf8_is_refused_with_the_offset(ws):
    (ws / "latin.qvr").write_bytes(b"object A : Real 2 # caf\xe9\n")
    assert refused(ws / "latin.qvr", [ws]) == "it is not UTF-8 text (byte 0xe9 at offset 23)"


def test_missing(ws):
    assert refused(ws / "nothing.qvr", [ws]) == "no such file"


def test_line_endings_are_kept_unless_asked(ws):
    (ws / "crlf.qvr").write_bytes(b"a\r\nb\rc\n")
    assert read_text(ws / "crlf.qvr", [ws]) == "a\r\nb\rc\n"
    assert read_text(ws / "crlf.qvr", [ws], universal_newlines=True) == "a\nb\nc\n"


def test_a_fifo_with_a_writer_is_still_refused(ws):
    """Even with a writer attached (so a blocking open would succeed), nothing is read."""
    fifo = ws / "x.qvr"
    os.mkfifo(fifo)
    stop = threading.Event()

    def writer() -> None:
        fd = os.open(fifo, os.O_RDWR)  # holds the FIFO open without waiting for a reader
        stop.wait(5)
        os.close(fd)

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        assert "FIFO" in refused(fifo, None)
    finally:
        stop.set()
        thread.join()


def test_command_line_roots(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert files.command_line_roots("a/b.qvr") == [str(tmp_path)]
    assert files.command_line_roots("/elsewhere/c.qvr") == ["/elsewhere"]
