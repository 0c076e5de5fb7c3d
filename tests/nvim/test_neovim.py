"""A real headless Neovim (Debian's package) against the real server.

Neovim loads tests/nvim/init.lua (the configuration docs/editors.md gives),
opens a file with a dimension error, waits for the diagnostic, asks for a
hover (on a sub-expression and on a let that does not type-check), pulls
diagnostics when this Neovim can, and writes what it saw to JSON; every wait is bounded.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
FILE = ROOT / "examples" / "errors" / "QVR201_dimension_mismatch.qvr"
TIMEOUT_MS = 30000

pytestmark = pytest.mark.skipif(shutil.which("nvim") is None, reason="nvim is not installed")


def run_neovim(
    tmp_path: Path, hovers: list[tuple[int, int]], init: Path = HERE / "init.lua", **extra: str
) -> dict:
    out = tmp_path / "result.json"
    env = {
        **os.environ,
        **extra,
        "QVR_LSP_CMD": f"{sys.executable} -m qvr_lsp",
        "QVR_NVIM_OUT": str(out),
        "QVR_NVIM_FILE": str(FILE),
        "QVR_HOVERS": ";".join(f"{line}:{col}" for line, col in hovers),
        "QVR_TIMEOUT_MS": str(TIMEOUT_MS),
        # Keep Neovim's state, log and shada out of the user's home.
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
    }
    command = ["nvim", "--headless", "--clean", "-u", str(init)]
    command += ["-c", f"luafile {HERE / 'driver.lua'}"]
    proc = subprocess.run(
        command, env=env, cwd=ROOT, capture_output=True, text=True, timeout=3 * TIMEOUT_MS / 1000
    )
    assert out.exists(), f"Neovim wrote no result (rc {proc.returncode}): {proc.stderr[-2000:]}"
    return json.loads(out.read_text())


def test_neovim_shows_the_dimension_error_and_hover(tmp_path: Path):
    lines = FILE.read_text(encoding="utf-8").splitlines()
    line = next(i for i, text in enumerate(lines) if text.startswith("let backbone"))
    fan = (line, lines[line].index("fan(") + 1)
    backbone = (line, lines[line].index("backbone") + 2)
    result = run_neovim(tmp_path, [fan, backbone])

    assert "error" not in result, result.get("error")
    assert result["filetype"] == "qvr"
    assert result["attached"] and result["got_diagnostics"]
    (mismatch,) = [d for d in result["diagnostics"] if d["code"] == "QVR201"]
    assert "64 + 64 = 128" in mismatch["message"] and "96" in mismatch["message"]
    assert mismatch["severity"] == 1  # vim.diagnostic.severity.ERROR
    assert mismatch["lnum"] == line

    hover, ill_typed = result["hovers"]
    assert hover["kind"] == "markdown"
    assert "fan(forward_path, backward_path) : [Token] -> FwdHidden * BwdHidden" in hover["value"]
    assert "`FwdHidden * BwdHidden = R^(64+64)`" in hover["value"]

    # The let that does not type-check: each part's dimensions and the mismatch in one line.
    assert "Its parts:" in ill_typed["value"]
    assert "(64 + 64 = 128)" in ill_typed["value"] and "`Combined = R^96`" in ill_typed["value"]
    (mismatch_line,) = [x for x in ill_typed["value"].splitlines() if "QVR201" in x]
    assert "128" in mismatch_line and "96" in mismatch_line

    # Pull diagnostics where this Neovim has them (0.10+); Debian's 0.7 is pushed to.
    assert result["server_pulls"]
    if result["pull_supported"]:
        assert result["pulled"]["kind"] == "full" and "QVR201" in result["pulled"]["codes"]
    else:
        assert "pulled" not in result


def test_the_nvim_lspconfig_definition_starts_the_server_on_path(tmp_path: Path):
    """editors/nvim-lspconfig/lsp/qvr.lua as Neovim reads it: `qvr-lsp` found on PATH
    (where `pip install qvr` puts it, beside this Python), attached to a `.qvr` file."""
    scripts = Path(sys.executable).parent
    if not (scripts / "qvr-lsp").exists():
        pytest.skip(f"qvr-lsp is not installed beside {sys.executable} (pip install -e .)")
    result = run_neovim(
        tmp_path,
        [],
        init=HERE / "lspconfig_init.lua",
        QVR_LSPCONFIG=str(ROOT / "editors" / "nvim-lspconfig" / "lsp" / "qvr.lua"),
        PATH=f"{scripts}{os.pathsep}{os.environ.get('PATH', '')}",
    )
    assert "error" not in result, result.get("error")
    assert result["attached"] and result["got_diagnostics"]
    assert "QVR201" in [d["code"] for d in result["diagnostics"]]
