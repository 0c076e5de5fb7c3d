"""`qvr export FILE --to T [--program P] [-o OUT]` and `qvr check --target T`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from qvr_cli.main import main
from qvr_core.export import TARGETS
from tests.conftest import EXAMPLES

EIGHT = str(EXAMPLES / "models" / "eight_schools_noncentered.qvr")
NETWORK = str(EXAMPLES / "errors" / "QVR701_not_exportable.qvr")
FIRST_LINE = {"stan": "//", "numpyro": "#", "pymc": "#"}


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_export_prints_the_program_with_a_header_naming_qvr_and_the_source(name, capsys) -> None:
    assert main(["export", EIGHT, "--to", name]) == 0
    out = capsys.readouterr().out
    first, second = out.splitlines()[:2]
    assert first.startswith(FIRST_LINE[name]) and "`eight_schools`" in first
    assert "eight_schools_noncentered.qvr" in first and "exported by qvr" in second
    # the data interface is named as in the QVR program
    for data in ("sigma", "y"):
        assert data in out


def test_export_writes_a_file_and_says_so(tmp_path: Path, capsys) -> None:
    out = tmp_path / "eight.stan"
    assert main(["export", EIGHT, "--to", "stan", "-o", str(out)]) == 0
    assert "parameters {" in out.read_text()
    captured = capsys.readouterr()
    assert captured.out == "" and f"wrote Stan code for eight_schools to {out}" in captured.err


def test_export_never_writes_over_its_source(tmp_path: Path, capsys) -> None:
    src = tmp_path / "m.qvr"
    src.write_text(Path(EIGHT).read_text())
    assert main(["export", str(src), "--to", "stan", "-o", str(src)]) == 2
    assert src.read_text() == Path(EIGHT).read_text()
    assert "over its source" in capsys.readouterr().err


def test_what_a_target_cannot_express_is_located_and_nothing_is_written(
    tmp_path: Path, capsys
) -> None:
    out = tmp_path / "net.py"
    assert main(["export", NETWORK, "--to", "numpyro", "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert "QVR701_not_exportable.qvr:8:9: warning[QVR701]: not exportable to NumPyro" in err
    assert "program of morphisms" in err and "nothing written" in err
    assert not out.exists()


def test_a_file_with_errors_exports_nothing(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "bad.qvr"
    bad.write_text(Path(EIGHT).read_text().replace("observe y : School", "observe y : Schol"))
    assert main(["export", str(bad), "--to", "stan"]) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and "error[QVR101]" in captured.err


def test_the_program_must_be_clear(tmp_path: Path, capsys) -> None:
    assert main(["export", EIGHT, "--to", "stan", "--program", "nope"]) == 2
    assert "has no program 'nope'" in capsys.readouterr().err
    two = tmp_path / "two.qvr"
    text = Path(EIGHT).read_text().replace("export eight_schools", "")
    program = text[text.index("program eight_schools") :]
    two.write_text(text + "\n" + program.replace("program eight_schools", "program other"))
    assert main(["export", str(two), "--to", "stan"]) == 2
    assert "2 programs to export (eight_schools, other)" in capsys.readouterr().err
    assert main(["export", str(two), "--to", "stan", "--program", "other"]) == 0


def test_unreadable_file_and_unknown_target_are_one_line(capsys) -> None:
    assert main(["export", "/no/such.qvr", "--to", "stan"]) == 2
    assert "cannot read /no/such.qvr" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main(["export", EIGHT, "--to", "bugs"])
    assert exc.value.code == 2


def test_check_with_a_target_reports_what_it_cannot_express(capsys) -> None:
    assert main(["check", NETWORK]) == 0
    assert capsys.readouterr().out == ""
    assert main(["check", NETWORK, "--target", "stan"]) == 1
    out = capsys.readouterr().out
    assert "8:9: warning[QVR701]: not exportable to Stan" in out
    assert main(["check", EIGHT, "--target", "pymc"]) == 0
    assert capsys.readouterr().out == ""


def test_check_json_carries_the_target_and_program(capsys) -> None:
    assert main(["check", NETWORK, "--target", "numpyro", "--json"]) == 1
    records = json.loads(capsys.readouterr().out)
    assert [r["code"] for r in records] == ["QVR701"]
