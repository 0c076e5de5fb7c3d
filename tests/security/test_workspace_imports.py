"""A workspace's own Python files never run: not in the server, not in an inference worker.

The server is started the way editors start it, in the workspace; the
workspace holds modules named like the ones the server and the worker import
(third-party and standard library alike), each of which would leave a marker.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest
from lsprotocol import types as lsp

from tests.security.support import TINY, planted, served, trap

SERVER_MODULES = ("argparse", "json", "logging", "cattrs", "lsprotocol", "pygls", "lark")
WORKER_MODULES = ("torch", "numpy", "sympy", "opt_einsum")


@pytest.fixture
def hostile(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "workspace"
    marker = tmp_path / "markers"
    root.mkdir()
    marker.mkdir()
    for module in SERVER_MODULES + WORKER_MODULES:
        trap(root, module, marker)
    (root / "tiny.qvr").write_text(TINY)
    return root, marker


@pytest.mark.asyncio(loop_scope="function")
async def test_run_inference_in_a_workspace_with_a_torch_py_imports_none(hostile):
    root, marker = hostile
    async with served(root) as client:
        uri = (root / "tiny.qvr").as_uri()
        summary = await asyncio.wait_for(
            client.workspace_execute_command_async(
                lsp.ExecuteCommandParams(
                    command="qvr.runInference", arguments=[{"uri": uri, "steps": 3}]
                )
            ),
            120,
        )
        assert summary["status"] == "completed"
    assert planted(marker) == []


def test_python_m_qvr_lsp_started_in_the_workspace_imports_none(hostile):
    root, marker = hostile
    done = subprocess.run(
        [sys.executable, "-m", "qvr_lsp", "--help"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "language server" in done.stdout
    assert planted(marker) == []


def test_the_large_document_check_started_in_the_workspace_imports_none(hostile, monkeypatch):
    """A document over the size limit is checked in a child process; it starts like the
    workers, so the workspace's `lark.py` (which the checker would import) never runs."""
    from qvr_lsp.large_check import check_in_child

    root, marker = hostile
    monkeypatch.chdir(root)
    found = asyncio.run(check_in_child("object A : FinSet 2\nobject A : FinSet 3\n", False, bool))
    assert found is not None and "QVR102" in [d.code for d in found]
    assert planted(marker) == []
