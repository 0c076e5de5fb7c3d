"""One module imports ArviZ: `qvr_core/draws/arviz_adapter.py` (issue 51).

qvr pins `arviz<1`: ArviZ 1.0 replaced `InferenceData` with xarray's `DataTree` and moved
LOO, comparison and the plots into `arviz_stats` and `arviz_plots`. With every use behind
the adapter, lifting the bound is one change in one file; a module that imports `arviz`
itself (at its top, or inside a function, where the optional extra is imported late) is
one more place to find then.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import ROOT

ADAPTER = Path("qvr_core/draws/arviz_adapter.py")
PACKAGES = ("qvr_core", "qvr_lsp", "qvr", "qvr_cli")
#: ArviZ, and the packages ArviZ 1.x is made of
ARVIZ = ("arviz", "arviz_base", "arviz_stats", "arviz_plots")


def _arviz_imports(tree: ast.AST) -> list[int]:
    """The lines of `tree` that import ArviZ (`ARVIZ`) or a submodule, at any depth."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        if any(name.partition(".")[0] in ARVIZ for name in names):
            lines.append(node.lineno)
    return sorted(lines)


def _imports_elsewhere() -> list[str]:
    out = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            relative = path.relative_to(ROOT)
            if relative == ADAPTER:
                continue
            tree = ast.parse(path.read_text(encoding="utf-8"))
            out.extend(f"{relative}:{line} imports arviz" for line in _arviz_imports(tree))
    return out


def test_only_the_adapter_imports_arviz() -> None:
    assert (ROOT / ADAPTER).is_file()
    assert _imports_elsewhere() == []


def test_the_adapter_itself_imports_arviz() -> None:
    """The rule reads the adapter's own imports (its functions import ArviZ when called)."""
    assert _arviz_imports(ast.parse((ROOT / ADAPTER).read_text(encoding="utf-8")))


def test_the_rule_finds_an_import() -> None:
    """The check itself: each way of importing ArviZ is found, a look-alike is not."""
    source = (
        "import arviz as az\n"
        "from arviz.stats.ecdf_utils import ecdf_confidence_band\n"
        "def draw():\n"
        "    import os, arviz.plots\n"
        "    from arviz import plot_trace\n"
        "import arviz_fake\n"
        "from .arviz import x\n"
        "from arviz_stats import loo\n"
    )
    assert _arviz_imports(ast.parse(source)) == [1, 2, 4, 5, 8]
