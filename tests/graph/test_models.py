"""Bayesian models drawn as plate diagrams: one graph, plates as boxes in every format."""

from __future__ import annotations

from qvr_core.check import check
from qvr_core.graph.build import build_graph, graph_clusters, graph_nodes
from qvr_core.graph.dot import to_dot
from qvr_core.graph.mermaid import to_mermaid
from qvr_core.graph.nodes import ClusterKind, NodeKind
from tests.check.test_models import EIGHT_SCHOOLS, MIXTURE


def test_eight_schools_draws_theta_and_y_in_the_school_plate() -> None:
    graph = build_graph(check(EIGHT_SCHOOLS))
    plates = [c for c in graph_clusters(graph) if c.kind is ClusterKind.PLATE]
    assert [c.label for c in plates] == ["plate School (8)"]
    inside = {n.label for n in graph_nodes(graph) if n.cluster == plates[0].id}
    assert inside == {"theta_raw", "theta", "y"}
    nodes = {n.label: n for n in graph_nodes(graph)}
    assert nodes["sigma"].kind is NodeKind.INPUT and nodes["sigma"].detail == "data"
    assert nodes["y"].kind is NodeKind.OBSERVE and nodes["y"].detail == "~ Normal"
    assert nodes["theta_raw"].type == "School -> R" and nodes["theta_raw"].dims == "8"
    assert ("eight_schools.theta", "eight_schools.y") in graph.edges
    assert ("eight_schools.sigma", "eight_schools.y") in graph.edges


def test_a_marginalised_scope_is_a_box_with_its_plates_inside() -> None:
    graph = build_graph(check(MIXTURE))
    clusters = {c.id: c for c in graph_clusters(graph)}
    (scope,) = [c for c in clusters.values() if c.kind is ClusterKind.MARGINAL]
    resp = next(c for c in clusters.values() if c.label == "plate Resp (100)")
    assert resp.parent == scope.id
    component = next(c for c in clusters.values() if c.label == "plate Component (3)")
    assert component.parent == "gmm"
    assert {n.label for n in graph_nodes(graph) if n.cluster == component.id} == {"mu", "sigma"}


def test_dot_draws_each_plate_as_a_cluster() -> None:
    dot = to_dot(build_graph(check(MIXTURE)))
    assert 'subgraph "cluster_gmm.plate.Component"' in dot
    assert 'label="plate Component (3)"' in dot
    assert 'subgraph "cluster_gmm.marginalize.cls"' in dot


def test_mermaid_draws_plates_as_subgraphs_that_mermaid_reads(mermaid_parse) -> None:  # type: ignore[no-untyped-def]
    texts = {"schools": to_mermaid(build_graph(check(EIGHT_SCHOOLS)))}
    texts["gmm"] = to_mermaid(build_graph(check(MIXTURE)))
    results = mermaid_parse(texts)
    for name, result in results.items():
        assert result["ok"], (name, result["error"])
    subgraphs = {sid: (title, set(members)) for sid, title, members in results["gmm"]["subgraphs"]}
    assert subgraphs["gmm.plate.Component"] == (
        "plate Component (3)",
        {"gmm.mu", "gmm.sigma"},
    )
    assert subgraphs["gmm.marginalize.cls"][1] == {"gmm.plate.Resp"}
    assert subgraphs["gmm.plate.Resp"][1] == {"gmm.r"}
    schools = {title: set(m) for _, title, m in results["schools"]["subgraphs"]}
    assert schools == {
        "plate School (8)": {"eight_schools.theta_raw", "eight_schools.theta", "eight_schools.y"}
    }
