"""The import graphs of `qvr_core` (issue 48) and `qvr_lsp` (issue 53): no cycle, type-only
imports included.

The checker's passes once named each other's classes for their annotations (`Env`,
`ProgramChecker`, `ModelChecker` under `TYPE_CHECKING`), a cycle through type-only
imports; they name the protocols of `qvr_core/check/passes.py` now. The table modules,
sizing and the parser's tables once sat in a cycle through imports that ran (`resources`
reading `check.expressions`, the pending module's fallback importing `check`, the lark
tables and the cached ones importing each other)."""

from __future__ import annotations

import sys
from pathlib import Path

import grimp
import networkx as nx
import pytest


def _cycles(exclude_type_checking: bool, package: str = "qvr_core") -> list[frozenset[str]]:
    graph = grimp.build_graph(
        package,
        include_external_packages=False,
        exclude_type_checking_imports=exclude_type_checking,
        cache_dir=None,
    )
    edges = nx.DiGraph()
    for module in graph.modules:
        for imported in graph.find_modules_directly_imported_by(module):
            edges.add_edge(module, imported)
    return [frozenset(c) for c in nx.strongly_connected_components(edges) if len(c) > 1]


def test_no_cycle_among_the_imports_that_run() -> None:
    assert _cycles(exclude_type_checking=True) == []


def test_no_cycle_type_only_imports_included() -> None:
    """A pass that names another's class for an annotation joins a cycle; it names a
    protocol of `check/passes.py` instead."""
    assert _cycles(exclude_type_checking=False) == []


def test_the_server_imports_without_a_cycle_type_only_imports_included() -> None:
    """Issue 53: the server and its features once imported each other (the server
    registered them, they named its type); `qvr_lsp.app` composes them now, and the
    protocol, analysis and runs rooms below it import one way (`lint-imports` holds the
    rooms' order; this holds every module's, lazy and type-only imports included)."""
    assert _cycles(exclude_type_checking=False, package="qvr_lsp") == []


def test_a_cycle_through_a_type_only_import_is_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check can fail: a module that names another's class for an annotation while
    that one imports it back (the server and its features did) is a cycle here."""
    package = tmp_path / "rooms"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "server.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from rooms.features import F\n"
    )
    (package / "features.py").write_text("from rooms.server import x\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        assert _cycles(exclude_type_checking=False, package="rooms") == [
            frozenset({"rooms.server", "rooms.features"})
        ]
        assert _cycles(exclude_type_checking=True, package="rooms") == []
    finally:
        sys.modules.pop("rooms", None)
