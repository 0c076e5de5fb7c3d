"""What is generated stays fresh: `src/` is what tree-sitter's generator makes of
grammar.js, the registry's names are those in grammar.js and highlights.scm, the editors'
query copies are those scripts/gen_tree_sitter.py writes, and the editor configurations
name the grammar, the file type and this release."""

from __future__ import annotations

import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

from tests.conformance.shared import shared_dir
from tests.tree_sitter.support import GRAMMAR_DIR, ROOT, generator

gen_tree_sitter = generator()

GENERATED = ("parser.c", "grammar.json", "node-types.json", "tree_sitter/parser.h")


def test_the_registry_names_and_the_editor_copies_are_fresh() -> None:
    assert gen_tree_sitter.main(["--check"]) == 0, "run .venv/bin/python scripts/gen_tree_sitter.py"


def test_a_stale_list_is_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The check can fail: a family of functions one short is stale."""
    monkeypatch.setattr(gen_tree_sitter, "builtin_functions", lambda: ["exp"])
    assert gen_tree_sitter.main(["--check"]) == 1


def test_src_is_what_the_generator_makes_of_grammar_js(tmp_path: Path) -> None:
    shared = shared_dir()
    tool = shared / "tools" / "tree-sitter" / "tree-sitter-generate" if shared else None
    if tool is None or not tool.exists():
        pytest.skip("no ../shared/tools/tree-sitter/tree-sitter-generate to regenerate src/ with")
    if shutil.which("node") is None:
        pytest.skip("node is not installed (tree-sitter's generator evaluates grammar.js with it)")
    shutil.copy(GRAMMAR_DIR / "grammar.js", tmp_path / "grammar.js")
    done = subprocess.run(
        [str(tool), "generate"], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    stale = [
        name
        for name in GENERATED
        if (tmp_path / "src" / name).read_bytes() != (GRAMMAR_DIR / "src" / name).read_bytes()
    ]
    assert not stale, f"regenerate editors/tree-sitter-qvr/src ({stale} differ): see its README"


def test_the_editor_configurations_name_the_grammar_and_this_release() -> None:
    version = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]["version"]
    helix = tomllib.loads((GRAMMAR_DIR / "helix" / "languages.toml").read_text("utf-8"))
    (language,) = helix["language"]
    assert language["name"] == "qvr" and language["file-types"] == ["qvr"]
    assert language["language-servers"] == ["qvr-lsp"]
    assert helix["language-server"]["qvr-lsp"]["command"] == "qvr-lsp"
    assert [g["name"] for g in helix["grammar"]] == ["qvr"]

    zed = tomllib.loads((GRAMMAR_DIR / "zed" / "extension.toml").read_text("utf-8"))
    assert zed["version"] == version
    assert zed["grammars"]["qvr"]["path"] == str(GRAMMAR_DIR.relative_to(ROOT))
    config = tomllib.loads(
        (GRAMMAR_DIR / "zed" / "languages" / "qvr" / "config.toml").read_text("utf-8")
    )
    assert config["grammar"] == "qvr" and config["path_suffixes"] == ["qvr"]
