"""A workspace's own Python files never run: not in the server, not in an inference worker.

The server is started the way editors start it, in the workspace; the
workspace holds modules named like the ones the server and the worker import
(third-party and standard library alike), each of which would leave a marker.
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

ROOT = Path(__file__).resolve().parents[2]
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


def server_help(root: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    """`python [flags] -m qvr_lsp --help` started in `root`, as an editor would start it."""
    command = [sys.executable, *flags, "-m", "qvr_lsp", "--help"]
    return subprocess.run(command, cwd=root, capture_output=True, text=True, timeout=60)


def test_python_m_qvr_lsp_started_in_the_workspace_imports_none(hostile):
    root, marker = hostile
    done = server_help(root)
    assert done.returncode == 0, done.stderr
    assert "language server" in done.stdout
    assert planted(marker) == []


def test_the_large_document_check_started_in_the_workspace_imports_none(hostile, monkeypatch):
    """A document over the size limit is checked in a child process; it starts like the
    workers, so the workspace's `lark.py` (which the checker would import) never runs."""
    from qvr_lsp.analysis.large_check import check_in_child

    root, marker = hostile
    monkeypatch.chdir(root)
    found = asyncio.run(check_in_child("object A : FinSet 2\nobject A : FinSet 3\n", False, bool))
    assert found is not None and "QVR102" in [d.code for d in found]
    assert planted(marker) == []


# --------------------------------------------------- the server's own launch (#24)


def trap_package(folder: Path, package: str, marker: Path) -> None:
    """A `package/` in `folder` that leaves a marker if it is ever imported."""
    (folder / package).mkdir()
    (folder / package / "__init__.py").write_text(
        f"open({str(marker / package)!r}, 'w').write('imported from the workspace')\n"
        "raise SystemExit('a workspace package was imported')\n"
    )


@pytest.fixture
def shadowing(hostile: tuple[Path, Path]) -> tuple[Path, Path]:
    """The hostile workspace, with packages named like qvr's own."""
    root, marker = hostile
    for package in ("qvr_lsp", "qvr_core"):
        trap_package(root, package, marker)
    return root, marker


def test_the_qvr_lsp_script_in_a_workspace_with_a_qvr_lsp_package_runs_the_real_one(shadowing):
    """Editors start `qvr-lsp` (its sys.path[0] is its own folder, never the workspace)."""
    root, marker = shadowing
    script = Path(sys.executable).with_name("qvr-lsp")
    if not script.exists():
        pytest.skip("qvr-lsp is not installed beside this interpreter")
    done = subprocess.run(
        [str(script), "--help"], cwd=root, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "language server" in done.stdout
    assert planted(marker) == []


def test_python_safe_path_m_qvr_lsp_in_such_a_workspace_runs_the_real_one(shadowing):
    """The other launch editors use: `python -P -m qvr_lsp` (the VS Code extension's)."""
    root, marker = shadowing
    done = server_help(root, "-P")
    assert done.returncode == 0, done.stderr
    assert "language server" in done.stdout
    assert planted(marker) == []


def test_python_m_qvr_lsp_never_imports_the_workspaces_qvr_core(hostile):
    """Without -P, the workspace is first on sys.path while `qvr_lsp` itself is found; its
    `__init__` takes it off before it imports qvr_core or anything else."""
    root, marker = hostile
    trap_package(root, "qvr_core", marker)
    done = subprocess.run(
        [sys.executable, "-m", "qvr_lsp", "--help"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert planted(marker) == []


def test_the_server_takes_the_working_directory_off_its_path_however_started(hostile):
    """`qvr lsp`, a wrapper script, PYTHONPATH=.: the server's start drops '' and every
    entry that names the working directory (unless it is qvr's own folder)."""
    root, _marker = hostile
    probe = (
        "import os, sys\n"
        "sys.path[:0] = ['', '.', os.getcwd(), 'relative/dir']\n"
        "import qvr_lsp\n"
        "qvr_lsp._drop_working_directory(always=True)\n"
        "print('\\n'.join(sys.path))\n"
    )
    done = subprocess.run(
        [sys.executable, "-P", "-c", probe],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), "."])},
    )
    assert done.returncode == 0, done.stderr
    entries = done.stdout.splitlines()
    assert "" not in entries and "." not in entries and "relative/dir" not in entries
    assert not any(os.path.realpath(e) == os.path.realpath(root) for e in entries)
    assert str(ROOT) in entries  # what names somewhere else stays


def test_safe_path_keeps_a_checkout_of_qvr_and_absolute_entries_elsewhere():
    from qvr_lsp import safe_path

    entries = ["", ".", "rel", "/work/ws", "/work/ws/", "/usr/lib/python3", "/work/qvr"]
    assert safe_path(entries, "/work/ws", "/work/qvr") == ["/usr/lib/python3", "/work/qvr"]
    assert safe_path(entries, "/work/qvr", "/work/qvr") == entries  # running from a checkout
