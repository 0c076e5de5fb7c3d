"""`qvr fmt FILE... [--check]`: the editor's formatter on the command line."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

from qvr_cli.main import main

MESSY = "object A:Real 2\nexport A\n"
CANONICAL = "object A : Real 2\n\nexport A\n"


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8"))
    return path


def test_formats_files_in_place(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "a.qvr", MESSY)
    assert main(["fmt", str(path)]) == 0
    assert path.read_text() == CANONICAL
    assert f"reformatted {path}" in capsys.readouterr().out
    assert main(["fmt", str(path)]) == 0
    assert path.read_text() == CANONICAL


def test_check_exits_1_when_a_file_would_change(tmp_path: Path) -> None:
    messy = write(tmp_path, "a.qvr", MESSY)
    clean = write(tmp_path, "b.qvr", CANONICAL)
    assert main(["fmt", "--check", str(clean)]) == 0
    assert main(["fmt", "--check", str(messy), str(clean)]) == 1
    assert messy.read_text() == MESSY


def test_syntax_errors_and_unreadable_files_exit_2_and_change_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = write(tmp_path, "c.qvr", "morphism f : A A\n")
    assert main(["fmt", str(broken)]) == 2
    assert broken.read_text() == "morphism f : A A\n"
    assert "syntax error on line 1" in capsys.readouterr().err
    assert main(["fmt", str(tmp_path / "missing.qvr")]) == 2


def test_crlf_line_endings_are_kept(tmp_path: Path) -> None:
    path = write(tmp_path, "d.qvr", MESSY.replace("\n", "\r\n"))
    assert main(["fmt", str(path)]) == 0
    assert path.read_bytes() == CANONICAL.replace("\n", "\r\n").encode()


def test_stdin_to_stdout(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(MESSY))
    assert main(["fmt", "-"]) == 0
    assert capsys.readouterr().out == CANONICAL


def test_every_example_passes_check() -> None:
    root = Path(__file__).resolve().parents[2] / "examples"
    files = [str(p) for p in sorted(root.glob("*.qvr"))]
    assert main(["fmt", "--check", *files]) == 0
