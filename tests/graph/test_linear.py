"""Drawing grows linearly: a `fan` of thousands of uses of one morphism, long chains.

A `fan` of 8,000 branches took 5.7 s (100,000 over 90 s): the id allocator
searched `cell`, `cell_2`, ... from the start for every branch. The tests
count the allocator's lookups rather than time anything.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from qvr_core.check import check
from qvr_core.graph import build_graph, graph_nodes, to_dot, to_mermaid
from qvr_core.graph.nodes import IdAllocator, NodeKind
from qvr_core.syntax.parser import MAX_TREE_DEPTH

HEAD = (
    "object Token : FinSet 16\n"
    "object Hidden : Real 4\n"
    "morphism embed : Token -> Hidden [role=embed]\n"
    "morphism cell : Hidden -> Hidden [role=kernel] ~ Normal\n"
)


class CountingSet(set):
    lookups = 0

    def __contains__(self, item: object) -> bool:
        CountingSet.lookups += 1
        return super().__contains__(item)


def naive_ids(paths: list[tuple[str, ...]]) -> list[str]:
    """The ids the allocator must give: a repeated path gets _2, _3... skipping taken ones."""
    used: set[str] = set()
    out = []
    for path in paths:
        base = ".".join(path)
        candidate, n = base, 1
        while candidate in used:
            n += 1
            candidate = f"{base}_{n}"
        used.add(candidate)
        out.append(candidate)
    return out


@given(st.lists(st.tuples(st.sampled_from(["a", "a_2", "a_3", "b", "b_2_2", "b_2"])), max_size=40))
def test_ids_are_the_naive_ones(paths: list[tuple[str, ...]]) -> None:
    ids = IdAllocator()
    assert [ids.make(*p) for p in paths] == naive_ids(paths)


def test_repeated_paths_cost_a_bounded_number_of_lookups_each() -> None:
    ids = IdAllocator()
    ids._used = CountingSet()  # type: ignore[assignment]
    CountingSet.lookups = 0
    n = 5_000
    made = [ids.make("let", "cell") for _ in range(n)]
    assert made[:3] == ["let.cell", "let.cell_2", "let.cell_3"] and len(set(made)) == n
    assert CountingSet.lookups <= 2 * n  # it was n * n / 2


def test_a_wide_fan_draws_every_branch_once() -> None:
    n = 3_000
    module = check(HEAD + f"let wide = embed >> fan({', '.join(['cell'] * n)})\n")
    graph = build_graph(module)
    cells = [node for node in graph_nodes(graph) if node.label == "cell"]
    assert len(cells) == n and cells[1].id == cells[0].id + "_2"
    assert all(node.kind is NodeKind.MORPHISM for node in cells)
    assert to_mermaid(graph).count("-->") >= 2 * n
    assert to_dot(graph).count("->") >= 2 * n


def test_the_longest_chain_the_parser_accepts_is_drawn() -> None:
    terms = MAX_TREE_DEPTH - 1  # `embed >>` is the first term
    module = check(HEAD + f"let long = embed >> {' >> '.join(['cell'] * terms)}\n")
    assert not [d for d in module.diagnostics if d.code in ("QVR000", "QVR001")]
    graph = build_graph(module)
    assert sum(1 for node in graph_nodes(graph) if node.label == "cell") == terms
