"""`qvr check` on the command line: line ends, and output linear in the diagnostics."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from qvr_cli.main import main
from qvr_core.cli.report import WINDOW

CR_FILE = "object A : Real 3\r\rmorphism f : A -> A [role=kernel] ~ Normal\r\rexport f\r"


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8"))
    return path


def test_cr_line_ends_check_and_format_alike(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "cr.qvr", CR_FILE)
    assert main(["check", str(path)]) == 0
    assert main(["fmt", "--check", str(path)]) == 0
    broken = write(tmp_path, "broken.qvr", "object A : Real 3\rlet f = nope\r")
    capsys.readouterr()
    assert main(["check", "--json", str(broken)]) == 1
    (record,) = [r for r in json.loads(capsys.readouterr().out) if r["code"] == "QVR101"]
    assert record["range"]["start"] == {"line": 1, "character": 8}
    messy = write(tmp_path, "messy.qvr", "object A:Real 3\rexport A\r")
    assert main(["fmt", str(messy)]) == 0
    assert messy.read_bytes() == b"object A : Real 3\r\rexport A\r"


def one_line_program(names: int) -> str:
    return "object A : Real 2\nlet f = fan(" + ", ".join(f"u{i}" for i in range(names)) + ")\n"


def test_a_long_line_is_shown_as_a_window_around_each_caret(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sizes = []
    for names in (300, 3000):
        path = write(tmp_path, f"long{names}.qvr", one_line_program(names))
        capsys.readouterr()
        assert main(["check", str(path)]) == 1
        out = capsys.readouterr().out
        sizes.append(len(out))
        lines = out.split("\n")
        for i, line in enumerate(lines):
            match = re.search(r"error\[QVR101\]: undefined name '(u\d+)'", line)
            if not match:
                continue
            source, caret = lines[i + 1], lines[i + 2]
            assert len(source) <= len("    2 | ") + WINDOW + 2 * len("...")
            at = caret.index("^")
            assert source[at : at + len(match.group(1))] == match.group(1)
    # ten times the diagnostics, about ten times the output (it was the square)
    assert sizes[1] < 11 * sizes[0]
