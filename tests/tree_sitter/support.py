"""The tree-sitter grammar of QVR as the tests use it: compiled once per session, loaded
with the `tree-sitter` package, and queried the way editors query it."""

from __future__ import annotations

import ctypes
import importlib.util
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

import pytest

ROOT = Path(__file__).resolve().parents[2]
GRAMMAR_DIR = ROOT / "editors" / "tree-sitter-qvr"
SOURCES = (GRAMMAR_DIR / "src" / "parser.c", GRAMMAR_DIR / "src" / "scanner.c")
QUERIES = GRAMMAR_DIR / "queries"

if TYPE_CHECKING:
    import tree_sitter

NO_TREE_SITTER = "the tree-sitter package is not installed (pip install -e '.[test]')"


def tree_sitter_module() -> ModuleType:
    """The `tree_sitter` package, or a skip that says it is missing."""
    module: ModuleType = pytest.importorskip("tree_sitter", reason=NO_TREE_SITTER)
    return module


def generator() -> ModuleType:
    """scripts/gen_tree_sitter.py, loaded as a module (scripts/ is not a package)."""
    spec = importlib.util.spec_from_file_location(
        "gen_tree_sitter", ROOT / "scripts" / "gen_tree_sitter.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def compile_parser(out: Path) -> Path:
    """`src/` compiled into a shared library at `out` (skips without a C compiler)."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler (cc or gcc) to build the tree-sitter parser")
    include = GRAMMAR_DIR / "src"
    command = [cc, "-shared", "-fPIC", "-O2", f"-I{include}", *map(str, SOURCES), "-o", str(out)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"{' '.join(command)}:\n{done.stderr[-3000:]}"
    return out


def load_language(library: Path) -> tree_sitter.Language:
    """The `tree_sitter_qvr` language of a compiled parser, as a `tree_sitter.Language`."""
    ts = tree_sitter_module()
    lib = ctypes.cdll.LoadLibrary(str(library))
    lib.tree_sitter_qvr.restype = ctypes.c_void_p
    capsule_new = ctypes.pythonapi.PyCapsule_New
    capsule_new.restype = ctypes.py_object
    capsule_new.argtypes = (ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p)
    capsule = capsule_new(lib.tree_sitter_qvr(), b"tree_sitter.Language", None)
    language: tree_sitter.Language = ts.Language(capsule)
    return language


def problems(node: tree_sitter.Node) -> Iterator[tree_sitter.Node]:
    """The ERROR and MISSING nodes under `node`, and each node that holds a MISSING hidden
    token (a line end or a change of indentation, which no tree shows as a node)."""
    if node.is_error or node.is_missing:
        yield node
        return
    if not node.has_error:
        return
    inner = [child for child in node.children if child.has_error or child.is_missing]
    if not inner:
        yield node
    for child in inner:
        yield from problems(child)


def describe(node: tree_sitter.Node) -> str:
    row, col = node.start_point
    if node.is_missing:
        kind = f"MISSING {node.type}"
    elif node.is_error:
        kind = "ERROR"
    else:
        kind = f"{node.type} without its line end"
    return f"{kind} at {row + 1}:{col + 1}"


def winners(
    query: tree_sitter.Query, root: tree_sitter.Node, *, first_wins: bool = False
) -> dict[tuple[int, int], str]:
    """The capture each captured byte range ends up with: the last matching pattern's
    (Neovim, Zed), or the first's (Helix, `first_wins`)."""
    best: dict[tuple[int, int], tuple[int, str]] = {}
    cursor: tree_sitter.QueryCursor = tree_sitter_module().QueryCursor(query)
    for pattern, captures in cursor.matches(root):
        for name, nodes in captures.items():
            for node in nodes:
                key = (node.start_byte, node.end_byte)
                held = best.get(key)
                later = held is None or (pattern < held[0] if first_wins else pattern >= held[0])
                if later:
                    best[key] = (pattern, name)
    return {key: name for key, (_, name) in best.items()}
