"""`./dev test` fails on a type error: mypy runs with the settings in pyproject.toml.

Each test type-checks a small temporary module with the project's settings
and shows a kind of mistake mypy now catches; the last one keeps every
`type: ignore` in the packages explained.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest
from mypy import api

from tests.conftest import ROOT

PACKAGES = ("qvr_core", "qvr_lsp", "qvr_cli")


def mypy(tmp_path: Path, source: str) -> tuple[int, str]:
    """Type-check one module with the project's settings: (exit status, report)."""
    module = tmp_path / "probe.py"
    module.write_text(textwrap.dedent(source), encoding="utf-8")
    config = str(ROOT / "pyproject.toml")
    cache = str(ROOT / ".mypy_cache")  # warm from ./dev test's own mypy run
    out, err, status = api.run(["--config-file", config, "--cache-dir", cache, str(module)])
    return status, out + err


def test_a_well_typed_module_passes(tmp_path: Path) -> None:
    status, report = mypy(tmp_path, "def double(n: int) -> int:\n    return 2 * n\n")
    assert status == 0, report


@pytest.mark.parametrize(
    ("mistake", "source", "expected"),
    [
        (
            "a wrong return type",
            "def name(n: int) -> str:\n    return n\n",
            "[return-value]",
        ),
        (
            "a function without annotations",
            "def double(n):\n    return 2 * n\n",
            "[no-untyped-def]",
        ),
        (
            "an ignore that hides nothing",
            "n: int = 1  # type: ignore[assignment]  # stale\n",
            "[unused-ignore]",
        ),
        (
            "an ignore without its error code",
            "n: int = 'one'  # type: ignore\n",
            "[ignore-without-code]",
        ),
        (
            "a dispatch that forgets a kind of step",
            """
            from typing import assert_never

            from qvr_core.syntax import ast

            def keyword(step: ast.Step) -> str:
                match step:
                    case ast.SampleStep():
                        return "sample"
                    case ast.ObserveStep():
                        return "observe"
                    case ast.LetStep() | ast.DestructureStep():
                        return "let"
                    case _:
                        assert_never(step)
            """,
            '"ReturnStep',  # the kinds left out, first in the message
        ),
        (
            "a handler whose snapshot kind gives another view (qvr_lsp/app.py's table)",
            """
            from lsprotocol import types as lsp

            from qvr_lsp.analysis.handlers import Request
            from qvr_lsp.analysis.kinds import SENT_TEXT
            from qvr_lsp.features import hover

            entry = Request(lsp.TEXT_DOCUMENT_HOVER, SENT_TEXT, hover.hover)
            """,
            '"Callable[[Session, HoverParams, Lookup]',  # the view the kind gives
        ),
    ],
)
def test_mypy_fails_on(tmp_path: Path, mistake: str, source: str, expected: str) -> None:
    status, report = mypy(tmp_path, source)
    assert status == 1, report
    assert expected in report, report


IGNORE = re.compile(r"#\s*type:\s*ignore(?P<rest>.*)$")
EXPLAINED = re.compile(r"^\[[a-z-]+(, [a-z-]+)*\]  # \S.{3,}")


def test_every_type_ignore_names_its_code_and_says_why() -> None:
    """`# type: ignore[code]  # why`: mypy checks the code is needed, the comment says why."""
    bare = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                found = IGNORE.search(line)
                if found and not EXPLAINED.match(found.group("rest")):
                    bare.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not bare, "explain these ignores:\n" + "\n".join(bare)
