"""Neovim's own tree-sitter highlighter with the compiled QVR parser and the queries, set
up as docs/editors.md says (parser/qvr.so and queries/qvr/ on the runtimepath, and the
page's FileType block that starts the highlighter): a keyword, a family, a builtin type,
a number and a comment get their captures. Works with Neovim 0.7 (Debian 12's,
`vim.treesitter.highlighter.new`) and later ones (`vim.treesitter.start`)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.docs_blocks import lua_block
from tests.tree_sitter.support import QUERIES, ROOT

HERE = Path(__file__).resolve().parent
EXAMPLE = ROOT / "examples" / "models" / "eight_schools_noncentered.qvr"

pytestmark = pytest.mark.skipif(shutil.which("nvim") is None, reason="nvim is not installed")


def documented_setup() -> str:
    """The Lua block of docs/editors.md's "Tree-sitter highlighting" section."""
    return lua_block("### Tree-sitter highlighting")


def position(lines: list[str], line_start: str, word: str) -> tuple[int, int]:
    row = next(i for i, line in enumerate(lines) if line.startswith(line_start))
    return row, lines[row].index(word)


def test_neovim_highlights_qvr_with_the_parser_and_queries(
    tmp_path: Path, parser_library: Path
) -> None:
    runtime = tmp_path / "runtime"
    (runtime / "parser").mkdir(parents=True)
    shutil.copy(parser_library, runtime / "parser" / "qvr.so")
    shutil.copytree(QUERIES, runtime / "queries" / "qvr")
    setup = tmp_path / "setup.lua"
    setup.write_text(documented_setup(), encoding="utf-8")

    lines = EXAMPLE.read_text(encoding="utf-8").splitlines()
    where = {
        "program": position(lines, "program", "program"),
        "sample": position(lines, "    sample tau", "sample"),
        "family": position(lines, "    sample tau", "HalfCauchy"),
        "builtin type": position(lines, "object School", "FinSet"),
        "comment": (0, 2),
        "number": position(lines, "object School", "8"),
    }
    out = tmp_path / "result.json"
    env = {
        **os.environ,
        "QVR_TS_OUT": str(out),
        "QVR_TS_RUNTIME": str(runtime),
        "QVR_TS_SETUP": str(setup),
        "QVR_TS_FILE": str(EXAMPLE),
        "QVR_TS_POSITIONS": ";".join(f"{r}:{c}" for r, c in where.values()),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
    }
    command = ["nvim", "--headless", "--clean", "-c", f"luafile {HERE / 'nvim_highlight.lua'}"]
    proc = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)
    assert out.exists(), f"Neovim wrote no result (rc {proc.returncode}): {proc.stderr[-2000:]}"
    result = json.loads(out.read_text())

    assert "error" not in result, result["error"]
    assert result["highlighting"] and result["query_loaded"] and not result["has_error"]
    captures = {what: result["captures"][f"{r}:{c}"] for what, (r, c) in where.items()}
    assert "keyword" in captures["program"] and "keyword" in captures["sample"], captures
    assert "function.builtin" in captures["family"], captures
    assert "type.builtin" in captures["builtin type"], captures
    assert "comment" in captures["comment"] and "number" in captures["number"], captures
    # each capture is drawn with a highlight group (0.7: Keyword, Special, ...)
    assert result["groups"].get("keyword"), result["groups"]
    assert result["groups"].get("function.builtin"), result["groups"]
