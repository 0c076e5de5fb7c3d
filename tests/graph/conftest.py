"""Fixtures for the graph tests: checked examples and mermaid's real parser under Node."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from qvr_core.check import check
from qvr_core.check.module import CheckedModule

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
MERMAID_CHECK = Path(__file__).resolve().parent / "mermaid_check"

MermaidParse = Callable[[dict[str, str]], dict[str, dict]]


def checked(name: str) -> CheckedModule:
    return check((EXAMPLES / name).read_text(encoding="utf-8"))


@pytest.fixture(scope="session")
def mermaid_parse() -> MermaidParse:
    """Parse {name: text} with mermaid's own parser; returns mermaid's view of each text.

    Needs `npm ci` in tests/graph/mermaid_check (the project's test set-up does it).
    """
    node = shutil.which("node")
    if node is None:
        pytest.skip("Node.js is not installed: the Mermaid syntax check needs it")
    if not (MERMAID_CHECK / "node_modules" / "mermaid").is_dir():
        pytest.fail(
            "mermaid is not installed for the syntax check: run "
            "`npm ci --prefix tests/graph/mermaid_check` first"
        )

    def parse(texts: dict[str, str]) -> dict[str, dict]:
        proc = subprocess.run(
            [node, str(MERMAID_CHECK / "parse.mjs")],
            input=json.dumps(texts).encode(),
            capture_output=True,
            timeout=120,
            cwd=MERMAID_CHECK,
            check=False,
        )
        if not proc.stdout:
            pytest.fail(f"the mermaid parser did not run: {proc.stderr.decode()}")
        return json.loads(proc.stdout)

    return parse
