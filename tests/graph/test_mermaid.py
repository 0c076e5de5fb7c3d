"""Mermaid text: the seeds' style, and mermaid's own parser reads back the same graph."""

from __future__ import annotations

import html

import networkx as nx
import pytest

from qvr_core.check import check
from qvr_core.graph import build_graph, to_mermaid
from qvr_core.graph.mermaid import escape
from tests.graph.conftest import EXAMPLES, MermaidParse, checked
from tests.graph.golden import assert_golden

EXAMPLE_PATHS = sorted(EXAMPLES.glob("*.qvr"))
ERROR_PATHS = sorted((EXAMPLES / "errors").glob("*.qvr"))

# Names that Mermaid's lexer treats as keywords, and labels with characters to escape.
AWKWARD = """\
object A : Real 2
object H : Real 2
morphism end : A -> A [role=kernel] ~ Normal
morphism cell : A * H -> H [role=kernel] ~ Normal
let style = end >> end
let graph = scan(end >> cell,# "a" <comment> inside the call
    reverse=true)
program subgraph : A -> A
    sample class <- style
    let o = class * 2 - class / 3
    return o
export subgraph
"""


def _decoded(label: str) -> str:
    """A label as mermaid will display it (it keeps entity codes in a private form)."""
    return html.unescape(label.replace("ﬂ°°", "&#").replace("ﬂ°", "&").replace("¶ß", ";"))


def test_vanilla_is_a_left_to_right_flowchart_in_the_seed_style() -> None:
    text = to_mermaid(build_graph(checked("vanilla_rnn_lm.qvr")))
    lines = text.splitlines()
    assert lines[0] == "flowchart LR"
    assert (
        '    vanilla_rnn_lm.h.backbone.scan_cell[["scan(cell)"]] --> vanilla_rnn_lm.h(("h"))'
        in lines
    )
    assert "    class vanilla_rnn_lm.next_token observe" in lines
    assert "    class vanilla_rnn_lm.h sample" in lines


def test_bidirectional_branch_edge_is_labelled_right_to_left() -> None:
    text = to_mermaid(build_graph(checked("bidirectional_rnn_lm.qvr")))
    reversed_lines = [line for line in text.splitlines() if "-->|" in line]
    assert reversed_lines == [
        '    bidirectional_rnn_lm.input[/"input"/] -->|right to left| '
        'bidirectional_rnn_lm.h.backbone.fan.backward_path.tok_embed["tok_embed"]'
    ]


@pytest.mark.parametrize("path", EXAMPLE_PATHS, ids=lambda p: p.stem)
def test_mermaid_matches_golden(path) -> None:
    assert_golden(f"{path.stem}.mmd", to_mermaid(build_graph(checked(path.name))))


BROKEN = 'flowchart LR\n    a["x" --> b\n'


@pytest.fixture(scope="module")
def parsed(mermaid_parse: MermaidParse) -> tuple[dict[str, nx.DiGraph], dict[str, dict]]:
    """The examples' graphs, and mermaid's reading of their text, of the error examples'
    text (keys "errors/NAME") and of `BROKEN` (key "broken"), in one run of the parser:
    Node loads mermaid once (about a second) for the three tests that read them."""
    sources = {p.stem: p.read_text(encoding="utf-8") for p in EXAMPLE_PATHS}
    sources["awkward"] = AWKWARD
    graphs = {name: build_graph(check(text)) for name, text in sources.items()}
    texts = {name: to_mermaid(g) for name, g in graphs.items()}
    for p in ERROR_PATHS:
        texts[f"errors/{p.stem}"] = to_mermaid(build_graph(check(p.read_text("utf-8"))))
    texts["broken"] = BROKEN
    return graphs, mermaid_parse(texts)


def test_mermaid_parser_reads_back_every_node_edge_and_label(
    parsed: tuple[dict[str, nx.DiGraph], dict[str, dict]],
) -> None:
    graphs, results = parsed
    for name, g in graphs.items():
        result = results[name]
        assert result["ok"], (name, result["error"])
        assert result["type"].startswith("flowchart")
        assert {k: _decoded(v) for k, v in result["vertices"].items()} == dict(
            g.nodes(data="label")
        ), name
        parsed_edges = {(u, v): label for u, v, label in result["edges"]}
        assert parsed_edges == {(u, v): d["label"] for u, v, d in g.edges(data=True)}, name


def test_mermaid_parser_accepts_files_with_errors(
    parsed: tuple[dict[str, nx.DiGraph], dict[str, dict]],
) -> None:
    results = {f"errors/{p.stem}": parsed[1][f"errors/{p.stem}"] for p in ERROR_PATHS}
    failed = {k: r["error"] for k, r in results.items() if not r["ok"]}
    assert failed == {}


def test_the_check_itself_rejects_broken_mermaid(
    parsed: tuple[dict[str, nx.DiGraph], dict[str, dict]],
) -> None:
    result = parsed[1]["broken"]
    assert not result["ok"] and "Parse error" in result["error"]


def test_awkward_names_keep_their_labels() -> None:
    g = build_graph(check(AWKWARD))
    labels = dict(g.nodes(data="label"))
    assert labels["graph_.scan"] == "scan(end >> cell, reverse=true)"  # without the comment
    assert labels["subgraph_.class.style.end"] == "end"
    assert "subgraph_.class.style.end_2" in labels


def test_escape_turns_markup_into_entity_codes() -> None:
    assert escape('a "b" <c> #d') == "a #quot;b#quot; #lt;c#gt; #35;d"
