"""Nodes with errors are marked in the one graph, and every renderer draws the mark."""

from __future__ import annotations

import shutil

import pytest

from qvr_core.check import check
from qvr_core.graph import build_graph, graph_nodes, render_svg, to_dot, to_mermaid
from qvr_core.graph.marks import mark_errors
from qvr_core.text import rules
from qvr_core.text.diagnostics import make
from tests.graph.conftest import EXAMPLES, MermaidParse, checked

QVR201 = "errors/QVR201_dimension_mismatch.qvr"
COMBINE = "bidirectional_rnn_lm.h.backbone.combine"


def _marked(graph) -> dict[str, tuple[str, ...]]:
    return {n.id: n.errors for n in graph_nodes(graph) if n.errors}


def test_the_failing_composition_marks_only_the_node_it_points_at() -> None:
    marked = _marked(build_graph(checked(QVR201)))
    assert list(marked) == [COMBINE]
    (message,) = marked[COMBINE]
    assert message.startswith("QVR201: cannot compose")
    assert "128" in message and "96" in message


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.qvr")), ids=lambda p: p.stem)
def test_examples_without_errors_have_no_marks(path) -> None:
    assert _marked(build_graph(check(path.read_text("utf-8")))) == {}


def test_an_error_over_a_whole_declaration_marks_the_nodes_inside_it() -> None:
    module = checked("vanilla_rnn_lm.qvr")
    graph = build_graph(module)
    let = next(d for d in module.ast.decls if d.name.text == "backbone")
    mark_errors(graph, [make(rules.DIMENSION_MISMATCH, "all of it", let.span)])
    assert sorted(_marked(graph)) == [
        "vanilla_rnn_lm.h.backbone.scan_cell",
        "vanilla_rnn_lm.h.backbone.tok_embed",
    ]


def test_warnings_do_not_mark() -> None:
    module = checked("vanilla_rnn_lm.qvr")
    graph = build_graph(module)
    let = next(d for d in module.ast.decls if d.name.text == "backbone")
    mark_errors(graph, [make(rules.UNUSED_DECLARATION, "unused", let.span)])
    assert _marked(graph) == {}


def test_mermaid_puts_the_node_in_the_error_class(mermaid_parse: MermaidParse) -> None:
    text = to_mermaid(build_graph(checked(QVR201)))
    result = mermaid_parse({"qvr201": text})["qvr201"]
    assert result["ok"], result["error"]
    assert [v for v, classes in result["classes"].items() if "error" in classes] == [COMBINE]


def test_dot_draws_a_red_dashed_border_with_the_message_as_tooltip() -> None:
    text = to_dot(build_graph(checked(QVR201)))
    (line,) = [
        line for line in text.splitlines() if line.strip().startswith(f'"{COMBINE}" [label=')
    ]
    assert 'color="#d32f2f"' in line and 'style="dashed,rounded"' in line
    assert 'tooltip="QVR201: cannot compose' in line
    others = [line for line in text.splitlines() if "[label=" in line and COMBINE not in line]
    assert not any("d32f2f" in line for line in others)


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz is not installed")
def test_svg_carries_the_message_on_the_marked_node() -> None:
    svg = render_svg(to_dot(build_graph(checked(QVR201))))
    assert 'xlink:title="QVR201: cannot compose' in svg
    assert svg.count('stroke="#d32f2f"') >= 1
