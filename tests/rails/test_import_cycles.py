"""The import graphs of `qvr_core` (issue 48): no cycle among the imports that run, and
the one cycle left through type-only imports kept to the checker's passes; and of
`qvr_lsp` (issue 53): no cycle at all.

The passes name each other's classes for their annotations (`Env`, `ProgramChecker`,
`ModelChecker` under `TYPE_CHECKING`); an interface module of protocols would end that
cycle too. Until then it may not grow: a module that joins it, or a second cycle, fails
here. The table modules, sizing and the parser's tables once sat in it through imports
that ran (`resources` reading `check.expressions`, the pending module's fallback
importing `check`, the lark tables and the cached ones importing each other)."""

from __future__ import annotations

import grimp
import networkx as nx

#: The checker's passes, in a cycle through type-only imports alone (to empty).
PASSES = frozenset(
    f"qvr_core.check.{m}"
    for m in (
        "call_steps",
        "checker",
        "computations",
        "declarations",
        "expressions",
        "family_steps",
        "model_steps",
        "programs",
        "unchecked",
    )
)


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


def test_the_type_only_cycle_is_the_checker_s_passes_and_does_not_grow() -> None:
    cycles = _cycles(exclude_type_checking=False)
    assert len(cycles) <= 1
    assert all(c <= PASSES for c in cycles), sorted(set().union(*cycles) - PASSES)


def test_the_server_imports_without_a_cycle_type_only_imports_included() -> None:
    """Issue 53: the server and its features once imported each other (the server
    registered them, they named its type); `qvr_lsp.app` composes them now."""
    assert _cycles(exclude_type_checking=False, package="qvr_lsp") == []
