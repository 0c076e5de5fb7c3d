"""The layer contract in pyproject.toml ([tool.importlinter]) fails on an import that breaks it.

`./dev test` runs `lint-imports` on the real tree; here the same contracts run
on a skeleton of the packages with one bad import added, to show each kind
of rule is enforced (and that the skeleton without it passes).
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.conftest import ROOT

LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def core_layers() -> list[str]:
    """Every module the core's layer contract names, so a layer added there is in the skeleton."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = config["tool"]["importlinter"]["contracts"]
    (layers,) = (c["layers"] for c in contracts if c["id"] == "core-layers")
    return [name.strip() for layer in layers for name in re.split(r"[|:]", layer)]


def server_layers() -> list[str]:
    """Every package and root module the server's layer contract names."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = config["tool"]["importlinter"]["contracts"]
    (layers,) = (c["layers"] for c in contracts if c["id"] == "server-layers")
    return [name.strip() for layer in layers for name in re.split(r"[|:]", layer)]


def server_modules() -> list[str]:
    """Every module of `qvr_lsp` the server's contracts name (its layers, the modules that
    may not import a feature)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = {c["id"]: c for c in config["tool"]["importlinter"]["contracts"]}
    named = server_layers()
    named += [m.removeprefix("qvr_lsp.") for m in contracts["features-composed"]["source_modules"]]
    return sorted(set(named))


def skeleton_files() -> list[str]:
    """One empty file per package, per core layer and per server module the contracts
    name, a package where the real one is."""
    files = [f"{package}/__init__.py" for package in ("qvr", "qvr_cli", "qvr_lsp", "qvr_core")]
    for package, names in (("qvr_core", core_layers()), ("qvr_lsp", server_modules())):
        for name in names:
            is_package = (ROOT / package / name).is_dir()
            files.append(f"{package}/{name}/__init__.py" if is_package else f"{package}/{name}.py")
    for module in forbidden_sources():  # a module of a package the layers name
        path = module.replace(".", "/")
        if not (ROOT / path).is_dir() and f"{path}.py" not in files:
            files.append(f"{path}.py")
    return files


def forbidden_sources() -> list[str]:
    """Every module a forbidden contract of the core names as a source."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = config["tool"]["importlinter"]["contracts"]
    return [
        m
        for c in contracts
        if c["type"] == "forbidden"
        for m in c["source_modules"]
        if m.startswith("qvr_core.")
    ]


SKELETON = skeleton_files()

# (module to add, its import): each breaks one rule of docs/architecture.md.
VIOLATIONS = {
    "syntax imports check": ("qvr_core/syntax/bad.py", "from qvr_core.check import x"),
    "check imports the runtime": ("qvr_core/check/bad.py", "import qvr_core.runtime"),
    "graph imports ide": ("qvr_core/graph/bad.py", "from qvr_core.ide import x"),
    "runtime imports inference lazily": (
        "qvr_core/runtime/bad.py",
        "def f():\n    import qvr_core.inference",
    ),
    "the core imports the server": ("qvr_core/bad.py", "import qvr_lsp"),
    "the server imports the command line": ("qvr_lsp/bad.py", "import qvr_cli"),
    "the notebook package imports the command line": ("qvr/bad.py", "import qvr_cli"),
    "the server imports the notebook package": ("qvr_lsp/bad.py", "import qvr"),
    # the composition root (qvr_lsp/app.py) wires the rooms: features | runs over the
    # analysis over the protocol (docs/architecture.md, "The language server")
    "a feature imports the composition root": ("qvr_lsp/features/bad.py", "import qvr_lsp.app"),
    "the analysis imports a feature": ("qvr_lsp/analysis/bad.py", "import qvr_lsp.features"),
    "the analysis imports the runs": ("qvr_lsp/analysis/bad.py", "import qvr_lsp.runs.worker"),
    "the protocol imports the analysis": (
        "qvr_lsp/protocol/bad.py",
        "def f():\n    from qvr_lsp.analysis import kinds",
    ),
    "a feature imports the runs": ("qvr_lsp/features/bad.py", "from qvr_lsp.runs import x"),
    "the runs import a feature": ("qvr_lsp/runs/bad.py", "import qvr_lsp.features.hover"),
    "the command line imports a feature": ("qvr_lsp/cli.py", "import qvr_lsp.features"),
    "extras imports the checker": ("qvr_core/host/extras.py", "import qvr_core.check"),
    "check imports torch": ("qvr_core/check/bad.py", "import torch"),
    "ide imports numpy": ("qvr_core/ide/bad.py", "import numpy as np"),
    "the core imports pygls": ("qvr_core/syntax/bad.py", "from pygls import server"),
    "the builtins import the checker": ("qvr_core/builtins/bad.py", "import qvr_core.check"),
    # the runtime compiles the checker's output (check/lowered.py), never syntax nodes
    "the runtime imports the syntax tree": (
        "qvr_core/runtime/bad.py",
        "from qvr_core.syntax import ast",
    ),
}


#: Violations that more than one contract names: the core importing the server breaks the
#: packages' layers and, said outright, `core-without-server`.
BROKEN = {"the core imports the server": 2}


def lint(tree: Path) -> subprocess.CompletedProcess[str]:
    """`lint-imports` with the project's contracts over the packages found in `tree`."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", str(ROOT / "pyproject.toml"), "--no-cache"],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def skeleton(tmp_path: Path) -> Path:
    for name in SKELETON:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text('"""skeleton"""\n', encoding="utf-8")
    return tmp_path


def test_the_skeleton_keeps_every_contract(tmp_path: Path) -> None:
    result = lint(skeleton(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


@pytest.mark.parametrize("rule", sorted(VIOLATIONS))
def test_a_bad_import_breaks_a_contract(tmp_path: Path, rule: str) -> None:
    name, source = VIOLATIONS[rule]
    tree = skeleton(tmp_path)
    (tree / name).write_text(source + "\n", encoding="utf-8")
    result = lint(tree)
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"{BROKEN.get(rule, 1)} broken" in result.stdout, result.stdout
    assert name.removesuffix(".py").replace("/", ".") in result.stdout


def string_imports(path: Path) -> list[str]:
    """The first argument of every `import_module(...)` or `__import__(...)` call, as source."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and node.args:
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if called in ("import_module", "__import__"):
                found.append(ast.unparse(node.args[0]))
    return found


def test_no_package_imports_another_by_string() -> None:
    """Imports by string hide edges from the contracts; only these load their own package."""
    by_module = {}
    for package in ("qvr_core", "qvr_lsp", "qvr_cli"):
        for path in sorted((ROOT / package).rglob("*.py")):
            if found := string_imports(path):
                by_module[path.relative_to(ROOT).as_posix()] = found
    assert by_module == {
        # lazy exports of its own submodules, so importing the package skips torch
        "qvr_core/runtime/__init__.py": ["_EXPORTS[name]"],
        # what the handlers import on first use, loaded ahead after the first diagnostics
        # (each is also imported by name where it is used, so no edge is hidden)
        "qvr_lsp/analysis/warmup.py": ["name"],
        # `qvr COMMAND` loads that command's module alone (a run skipped 341 modules,
        # 0.26 s); each is imported by name under TYPE_CHECKING, so no edge is hidden
        "qvr_cli/main.py": ["SUBCOMMANDS[name][0]"],
    }
    from qvr_core import runtime

    assert all(m.startswith("qvr_core.runtime.") for m in runtime._EXPORTS.values())


def test_every_package_and_root_module_of_the_core_is_in_a_layer() -> None:
    """A package or module added at the core's root joins the layer contract (issue 48),
    and no layer lets its members import each other (`:`, the escape hatch)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = config["tool"]["importlinter"]["contracts"]
    (layers,) = (c["layers"] for c in contracts if c["id"] == "core-layers")
    assert not [layer for layer in layers if ":" in layer]
    children = {
        p.stem if p.suffix == ".py" else p.name
        for p in (ROOT / "qvr_core").iterdir()
        if (p.suffix == ".py" and p.stem != "__init__") or (p / "__init__.py").is_file()
    }
    assert children == set(core_layers())


def test_every_package_and_root_module_of_the_server_is_in_a_layer() -> None:
    """A room or a root module added to the server joins its layer contract (issue 53):
    `protocol` < `analysis` < `features | runs` < `app` < `cli` < `__main__`."""
    children = {
        p.stem if p.suffix == ".py" else p.name
        for p in (ROOT / "qvr_lsp").iterdir()
        if (p.suffix == ".py" and p.stem != "__init__") or (p / "__init__.py").is_file()
    }
    assert children == set(server_layers())
