"""`qvr diagram FILE [--name N] [--format mermaid|dot|svg] [-o OUT]`."""

from __future__ import annotations

import shutil

import pytest

from qvr_cli.main import main
from tests.graph.conftest import EXAMPLES

VANILLA = str(EXAMPLES / "vanilla_rnn_lm.qvr")


def test_prints_mermaid_by_default(capsys) -> None:
    assert main(["diagram", VANILLA]) == 0
    out = capsys.readouterr().out
    assert out.startswith("flowchart LR\n")
    assert "-->" in out


def test_writes_dot_to_a_file(tmp_path, capsys) -> None:
    out = tmp_path / "model.dot"
    assert main(["diagram", VANILLA, "--format", "dot", "-o", str(out)]) == 0
    assert out.read_text().startswith('digraph "qvr" {')
    assert capsys.readouterr().out == ""


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz is not installed")
def test_writes_svg(tmp_path) -> None:
    out = tmp_path / "model.svg"
    assert main(["diagram", VANILLA, "-f", "svg", "-o", str(out)]) == 0
    assert "</svg>" in out.read_text()


def test_name_draws_one_let(capsys) -> None:
    assert main(["diagram", VANILLA, "--name", "backbone"]) == 0
    out = capsys.readouterr().out
    assert "backbone.scan_cell" in out and "vanilla_rnn_lm" not in out


def test_unknown_name_exits_2_with_the_choices(capsys) -> None:
    assert main(["diagram", VANILLA, "--name", "nope"]) == 2
    err = capsys.readouterr().err
    assert "no program or let named 'nope'" in err and "backbone, vanilla_rnn_lm" in err


def test_file_with_errors_is_drawn_and_exits_1(capsys) -> None:
    path = EXAMPLES / "errors" / "QVR201_dimension_mismatch.qvr"
    assert main(["diagram", str(path)]) == 1
    captured = capsys.readouterr()
    assert captured.out.startswith("flowchart LR")
    assert (
        "error[QVR201]" in captured.err
        and "the diagram shows what could be checked" in captured.err
    )


def test_unreadable_file_exits_2(tmp_path, capsys) -> None:
    assert main(["diagram", str(tmp_path / "missing.qvr")]) == 2
    assert "cannot read" in capsys.readouterr().err
