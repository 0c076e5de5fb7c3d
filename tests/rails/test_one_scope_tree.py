"""One scope tree: the checked model's (`check.model.Node`, built by `scope_tree`).

The runtime, the exports and sizing each once nested the checker's flat steps into a tree
of their own and worked out again what a scope reads; a copy drifts from the others. A
class with a `step` and a `body` (a node of a step tree) anywhere else in the core is such
a copy.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import ROOT

HOME = Path("qvr_core/check/model.py")


def _annotated_fields(node: ast.ClassDef) -> set[str]:
    return {
        s.target.id
        for s in node.body
        if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
    }


def _copies() -> list[str]:
    out = []
    for path in sorted((ROOT / "qvr_core").rglob("*.py")):
        relative = path.relative_to(ROOT)
        if relative == HOME:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and {"step", "body"} <= _annotated_fields(node):
                out.append(f"{relative}:{node.lineno} class {node.name}")
    return out


def test_no_module_but_the_checked_model_builds_a_tree_of_steps() -> None:
    assert _copies() == []


def test_the_rule_finds_a_copy() -> None:
    """The check itself: a node class with a step and a body is found."""
    copy = ast.parse("class _Node:\n    step: int\n    body: list[int]\n")
    (cls,) = [n for n in ast.walk(copy) if isinstance(n, ast.ClassDef)]
    assert {"step", "body"} <= _annotated_fields(cls)
