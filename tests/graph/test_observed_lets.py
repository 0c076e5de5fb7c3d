"""The diagram of a regression on transformed data and literal indices: an observed let
is drawn as the data it is (one observed node, computed from its data names), and a
let reading `beta[0]` and `beta[1]` depends on `beta`."""

from __future__ import annotations

from qvr_core.check import check
from qvr_core.graph.build import build_graph, graph_clusters, graph_nodes
from qvr_core.graph.nodes import ClusterKind, NodeKind
from tests.check.test_transformed_data import EARNINGS


def test_an_observed_let_is_one_observed_node_computed_from_its_data() -> None:
    graph = build_graph(check(EARNINGS))
    nodes = {n.id: n for n in graph_nodes(graph)}
    observed = [n for n in nodes.values() if n.label == "log_earn"]
    assert len(observed) == 1  # no latent-looking value beside the observation
    (log_earn,) = observed
    assert log_earn.kind is NodeKind.OBSERVE and log_earn.observed
    assert log_earn.detail == "~ Normal, = log(earn)"
    assert nodes["earnings.earn"].kind is NodeKind.INPUT
    assert nodes["earnings.earn"].detail == "data"
    for source in ("earnings.earn", "earnings.mu", "earnings.sigma"):
        assert (source, log_earn.id) in graph.edges, source
    (row,) = [c for c in graph_clusters(graph) if c.kind is ClusterKind.PLATE and "Row" in c.label]
    assert log_earn.cluster == row.id


def test_a_let_of_literal_indices_reads_the_vector_it_indexes() -> None:
    graph = build_graph(check(EARNINGS))
    nodes = {n.id: n for n in graph_nodes(graph)}
    assert nodes["earnings.mu"].kind is NodeKind.VALUE
    assert ("earnings.beta", "earnings.mu") in graph.edges
    assert ("earnings.inter", "earnings.mu") in graph.edges
    # the covariate let of the data is a value computed from its data names
    assert nodes["earnings.inter"].detail == "= height * male"
    assert ("earnings.height", "earnings.inter") in graph.edges
