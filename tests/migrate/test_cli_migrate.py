"""`qvr migrate FILE... --to 0.15|current [--check|--diff]`."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

from qvr_cli.main import main

OLD = "# kept\nobject A : FinSet 3\nlet f = identity(A)  # kept too\nexport f\n"
NEW = "# kept\nobject A : FinSet 3\ndefine f = identity(A)  # kept too\nexport f\n"


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8"))
    return path


@pytest.mark.parametrize("target", ["0.15", "current"])
def test_migrates_in_place_and_only_the_named_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], target: str
) -> None:
    path = write(tmp_path, "a.qvr", OLD)
    other = write(tmp_path, "b.qvr", OLD)
    assert main(["migrate", "--to", target, str(path)]) == 0
    assert path.read_text() == NEW
    assert other.read_text() == OLD
    out = capsys.readouterr().out
    assert f"migrated {path} (from quivers 0.11-0.14 (top-level let))" in out
    assert main(["migrate", str(path)]) == 0
    assert path.read_text() == NEW


def test_check_exits_1_and_changes_nothing(tmp_path: Path) -> None:
    old, new = write(tmp_path, "a.qvr", OLD), write(tmp_path, "b.qvr", NEW)
    assert main(["migrate", "--check", str(new)]) == 0
    assert main(["migrate", "--check", str(old), str(new)]) == 1
    assert old.read_text() == OLD


def test_diff_prints_a_unified_diff_and_changes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "a.qvr", OLD)
    assert main(["migrate", "--diff", str(path)]) == 1
    out = capsys.readouterr().out
    assert f"--- a/{path}" in out
    assert "-let f = identity(A)  # kept too\n+define f = identity(A)  # kept too\n" in out
    assert path.read_text() == OLD


def test_bad_files_exit_2_with_a_clear_message_and_no_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = write(tmp_path, "c.qvr", "morphism f : A A\n")
    assert main(["migrate", str(broken), str(tmp_path / "missing.qvr"), str(tmp_path)]) == 2
    assert broken.read_text() == "morphism f : A A\n"
    err = capsys.readouterr().err
    assert f"qvr: {broken}: not migrated: it does not parse (line 1:" in err
    assert "cannot read" in err and "Traceback" not in err


def test_constructs_with_no_rewrite_are_named_on_stderr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "d.qvr", "composition log_prob as algebra\nobject A : FinSet 2\n")
    main(["migrate", str(path)])
    assert f"{path}:1: left as written" in capsys.readouterr().err


def test_crlf_line_endings_are_kept(tmp_path: Path) -> None:
    path = write(tmp_path, "e.qvr", OLD.replace("\n", "\r\n"))
    assert main(["migrate", str(path)]) == 0
    assert path.read_bytes() == NEW.replace("\n", "\r\n").encode()


def test_stdin_to_stdout(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(OLD))
    assert main(["migrate", "-"]) == 0
    assert capsys.readouterr().out == NEW


def test_syntax_newer_than_the_target_is_named_not_rewritten(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = "object A : FinSet 3\nprogram p(x : Real) : A -> A\n    let y <- g(x)\n    return y\n"
    path = write(tmp_path, "f.qvr", text)
    assert main(["migrate", "--to", "0.15", str(path)]) == 0
    assert path.read_text() == text
    assert "keeps syntax newer than quivers 0.15 (call steps)" in capsys.readouterr().err
    assert main(["migrate", "--to", "current", str(path)]) == 0
    assert capsys.readouterr().err == ""
