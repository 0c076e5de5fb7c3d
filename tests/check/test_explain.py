"""`qvr explain` and docs/diagnostics.md, which it generates (compared here, as ruff does)."""

from __future__ import annotations

from pathlib import Path

import pytest

from qvr_cli.main import main
from qvr_core.cli import explain
from qvr_core.text import rules

DOC = Path(__file__).resolve().parents[2] / "docs" / "diagnostics.md"


def test_docs_diagnostics_md_is_what_the_generator_writes() -> None:
    assert DOC.read_text(encoding="utf-8") == explain.page(), (
        "docs/diagnostics.md is stale: regenerate it with "
        "`.venv/bin/qvr explain --markdown > docs/diagnostics.md`"
    )


def test_the_page_has_every_rule_once_with_its_anchor_in_the_index() -> None:
    page = explain.page()
    for r in rules.RULES:
        assert page.count(f"\n## {r.code} {r.name}\n") == 1
        assert f"](#{explain.anchor(r)})" in page


def test_an_entry_shows_what_qvr_check_prints_for_its_example(
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = f"examples/errors/{rules.UNDEFINED_NAME.example}"
    assert main(["check", path]) == 1
    printed = capsys.readouterr().out.rstrip("\n")
    assert "error[QVR101]" in printed
    assert f"```text\n{printed}\n```" in explain.entry(rules.UNDEFINED_NAME)


def test_explain_prints_the_entry_by_code_or_name(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "QVR402"]) == 0
    by_code = capsys.readouterr().out
    assert by_code == explain.entry(rules.REBOUND_VARIABLE)
    assert by_code.startswith("## QVR402 rebound-variable\n")
    assert "error[QVR402]: 'h' is already bound in program lm" in by_code
    assert main(["explain", "rebound-variable"]) == 0
    assert capsys.readouterr().out == by_code


def test_explain_without_a_code_lists_every_rule(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain"]) == 0
    out = capsys.readouterr().out
    assert all(f"| [{r.code}]" in out for r in rules.RULES)


def test_an_unknown_code_exits_2_with_a_message(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "QVR999"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "no diagnostic 'QVR999'" in captured.err


def test_the_internal_error_entry_has_no_example() -> None:
    text = explain.entry(rules.INTERNAL_ERROR)
    assert "No example" in text and "```" not in text
