"""A real headless Neovim asks the real server for a diagram, directly and through a code lens.

Neovim loads the configuration of docs/editors.md (tests/nvim/init.lua);
`nvim_diagram.lua` requests `qvr.diagram` with `workspace/executeCommand`
and runs the "Show diagram" lens through the `vim.lsp.commands` mappings that
docs/editors.md gives, read from that page.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.docs_blocks import lua_block

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
INIT = ROOT / "tests" / "nvim" / "init.lua"
FILE = ROOT / "examples" / "vanilla_rnn_lm.qvr"
TIMEOUT_MS = 30000

pytestmark = pytest.mark.skipif(shutil.which("nvim") is None, reason="nvim is not installed")


def documented_mappings() -> str:
    """The Lua block of docs/editors.md's "Code lenses" section: the mappings a user copies."""
    return lua_block("### Code lenses")


def test_neovim_requests_a_diagram(tmp_path: Path) -> None:
    out = tmp_path / "result.json"
    mappings = tmp_path / "mappings.lua"
    mappings.write_text(documented_mappings(), encoding="utf-8")
    env = {
        **os.environ,
        "QVR_NVIM_MAPPINGS": str(mappings),
        "QVR_LSP_CMD": f"{sys.executable} -m qvr_lsp",
        "QVR_NVIM_OUT": str(out),
        "QVR_NVIM_FILE": str(FILE),
        "QVR_TIMEOUT_MS": str(TIMEOUT_MS),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
    }
    command = ["nvim", "--headless", "--clean", "-u", str(INIT)]
    command += ["-c", f"luafile {HERE / 'nvim_diagram.lua'}"]
    proc = subprocess.run(
        command, env=env, cwd=ROOT, capture_output=True, text=True, timeout=3 * TIMEOUT_MS / 1000
    )
    assert out.exists(), f"Neovim wrote no result (rc {proc.returncode}): {proc.stderr[-2000:]}"
    result = json.loads(out.read_text())

    assert "error" not in result, result.get("error")
    assert result["attached"]
    assert result.get("diagram_error") is None
    assert result["format"] == "mermaid"
    assert result["text"].startswith("flowchart LR\n")
    assert "vanilla_rnn_lm.h.backbone.scan_cell" in result["node_ids"]
    assert result["first_range"]["start"]["line"] >= 0
    assert result["lenses"] == ["Run inference", "Show diagram"]
    # the documented mapping shows what the lens's command answers: the diagram's text,
    # in a scratch window beside the file (it once sent the request and dropped the answer)
    assert result["lens_shown"]
    assert result["lens_diagram"]["text"] == result["text"]
    assert result["lens_diagram"]["buftype"] == "nofile"
    assert result["lens_diagram"]["windows"] == 2
