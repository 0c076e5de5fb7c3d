"""`python -m qvr_lsp` in a workspace imports nothing of it, whatever it is named (#46).

`test_workspace_imports.py` plants the modules a run touches; here the
workspace holds a trap for every top-level module the server imports (asked of
the server itself, so a new import is covered the day it is added) and
packages named like qvr's own, and a whole session runs: start, open, hover.

The VS Code extension starts the server in the folder of its interpreter or
script (`launchDirectory`, vscode-extension/src/server/discovery.ts), never in
the workspace: with a `PYTHONPATH` that holds an empty entry Python imports
the working directory's modules before its own, `-P` or not, before any line
of the server runs. The last test shows both halves of that.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest
from lsprotocol import types as lsp

from tests.security.support import TINY, planted, served, trap

OURS = ("qvr", "qvr_cli", "qvr_core")

#: What the server imports once it has served a hover (its deferred modules included).
SERVER_IMPORTS = """
import sys
before = set(sys.modules)
import importlib
from qvr_lsp import cli
from qvr_lsp.analysis.handlers import deferred_imports
from qvr_lsp.app import HANDLERS, build
session = build()
for name in deferred_imports(HANDLERS):
    importlib.import_module(name)
import qvr_core.check
top = {m.split(".")[0] for m in sys.modules} - {m.split(".")[0] for m in before}
print("\\n".join(sorted(top - set(sys.builtin_module_names))))
"""


def server_imports() -> list[str]:
    done = subprocess.run(
        [sys.executable, "-P", "-c", SERVER_IMPORTS],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return done.stdout.split()


def trap_package(folder: Path, package: str, marker: Path) -> None:
    (folder / package).mkdir()
    (folder / package / "__init__.py").write_text(
        f"open({str(marker / package)!r}, 'w').write('imported from the workspace')\n"
    )


@pytest.mark.asyncio(loop_scope="function")
async def test_a_session_of_python_m_qvr_lsp_in_a_workspace_of_traps_imports_none(tmp_path):
    root, marker = tmp_path / "workspace", tmp_path / "markers"
    root.mkdir()
    marker.mkdir()
    names = server_imports()
    assert {"pygls", "lsprotocol", "cattrs", "json", "asyncio"} <= set(names)
    for name in names:
        if name not in ("qvr_lsp", *OURS):
            trap(root, name, marker)
    for package in OURS:
        trap_package(root, package, marker)
    (root / "tiny.qvr").write_text(TINY)
    async with served(root) as client:
        uri = (root / "tiny.qvr").as_uri()
        client.text_document_did_open(
            lsp.DidOpenTextDocumentParams(lsp.TextDocumentItem(uri, "qvr", 1, TINY))
        )
        line = TINY.split("\n").index("let backbone = embed >> scan(cell)")
        hovered = await asyncio.wait_for(
            client.text_document_hover_async(
                lsp.HoverParams(lsp.TextDocumentIdentifier(uri), lsp.Position(line, 6))
            ),
            60,
        )
        assert hovered is not None and "backbone" in str(hovered.contents)
    assert planted(marker) == []


def test_an_empty_pythonpath_entry_reads_the_working_directory_so_editors_start_elsewhere(
    tmp_path,
):
    root, marker = tmp_path / "workspace", tmp_path / "markers"
    root.mkdir()
    marker.mkdir()
    # imported while Python starts (or by runpy's imports), before any line of the server
    trap(root, "collections", marker)
    env = {**os.environ, "PYTHONPATH": os.pathsep + str(tmp_path / "elsewhere")}
    command = [sys.executable, "-P", "-m", "qvr_lsp", "--help"]
    subprocess.run(command, cwd=root, env=env, capture_output=True, timeout=60)
    assert planted(marker) == ["collections"]  # Python's doing, `-P` or not
    (marker / "collections").unlink()
    beside = Path(sys.executable).parent  # where the extension starts it
    done = subprocess.run(command, cwd=beside, env=env, capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert planted(marker) == []
