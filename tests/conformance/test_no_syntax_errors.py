"""`qvr check --json` over every shared-corpus file and every example: no QVR001.

A form quivers accepts that qvr does not type is names-only (QVR011), never a syntax
error; only the example that shows QVR001 on purpose has one.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from qvr_cli.main import main
from tests.conformance.shared import corpus

ROOT = Path(__file__).resolve().parents[2]
#: The one file that is a syntax error on purpose (the gallery of diagnostics).
DELIBERATE = ROOT / "examples" / "errors" / "QVR001_syntax_error.qvr"


def _files() -> list[Path]:
    examples = [p for p in sorted((ROOT / "examples").glob("**/*.qvr")) if p != DELIBERATE]
    return examples + [f.path for f in corpus()]


def test_no_corpus_file_or_example_is_a_syntax_error(capsys: pytest.CaptureFixture[str]) -> None:
    files = _files()
    assert len(files) > 50  # the examples, and the corpus where ../shared has it
    capsys.readouterr()
    main(["check", "--json", *map(str, files)])
    records = json.loads(capsys.readouterr().out)
    assert {r["path"] for r in records} & {str(p) for p in files}  # it read them
    errors = [
        (r["path"], r["range"]["start"]["line"] + 1, r["message"])
        for r in records
        if r["code"] == "QVR001"
    ]
    assert errors == []


def test_the_deliberate_example_is_still_one(capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    main(["check", "--json", str(DELIBERATE)])
    assert "QVR001" in {r["code"] for r in json.loads(capsys.readouterr().out)}
