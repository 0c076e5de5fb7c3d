"""DOT text: clusters for programs and lets, typed labels, escaping, and a clean `dot -Tsvg`."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from qvr_core.check import check
from qvr_core.graph import build_graph, to_dot
from qvr_core.graph.dot import quote
from tests.graph.conftest import EXAMPLES, checked
from tests.graph.golden import assert_golden
from tests.graph.test_mermaid import AWKWARD

needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz is not installed")


def _dot_svg(text: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        ["dot", "-Tsvg"], input=text.encode(), capture_output=True, timeout=60, check=False
    )


@needs_dot
@pytest.mark.parametrize(
    "path",
    sorted(EXAMPLES.glob("*.qvr")) + sorted((EXAMPLES / "errors").glob("*.qvr")),
    ids=lambda p: p.stem,
)
def test_dot_renders_to_svg_without_warnings(path) -> None:
    proc = _dot_svg(to_dot(build_graph(check(path.read_text(encoding="utf-8")))))
    assert proc.returncode == 0, proc.stderr.decode()
    assert proc.stderr == b"", proc.stderr.decode()
    assert proc.stdout.startswith(b"<?xml")


@needs_dot
def test_awkward_names_render_without_warnings() -> None:
    proc = _dot_svg(to_dot(build_graph(check(AWKWARD)), 'title "quoted" \\ back'))
    assert (proc.returncode, proc.stderr) == (0, b"")


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.qvr")), ids=lambda p: p.stem)
def test_dot_matches_golden(path) -> None:
    assert_golden(f"{path.stem}.dot", to_dot(build_graph(checked(path.name)), path.stem))


def test_programs_and_lets_are_clusters_with_typed_labels() -> None:
    text = to_dot(build_graph(checked("bidirectional_rnn_lm.qvr")))
    assert 'subgraph "cluster_bidirectional_rnn_lm" {' in text
    assert 'subgraph "cluster_bidirectional_rnn_lm.h.backbone" {' in text
    assert 'label="let backbone : [Token] -> Combined\\n[FinSet 256] -> R^128";' in text
    assert (
        '"bidirectional_rnn_lm.h.backbone.fan" [label="fan\\n[Token] -> FwdHidden * BwdHidden'
        '\\n[FinSet 256] -> R^(64+64)"' in text
    )


def test_sites_are_distinguished_and_the_backward_branch_is_labelled() -> None:
    text = to_dot(build_graph(checked("bidirectional_rnn_lm.qvr")))
    assert '"bidirectional_rnn_lm.h" [label="h\\nCombined\\nR^128", shape=ellipse];' in text
    assert (
        '"bidirectional_rnn_lm.masked_token" [label="masked_token\\nToken\\nFinSet 256", '
        'shape=ellipse, style="filled", fillcolor="#d9d9d9"];' in text
    )
    assert (
        '"bidirectional_rnn_lm.input" -> "bidirectional_rnn_lm.h.backbone.fan.backward_path'
        '.tok_embed" [label="right to left", style="dashed"];' in text
    )


def test_values_show_their_formula() -> None:
    text = to_dot(build_graph(checked("rlstm_lm.qvr"), "rlstm_cell"))
    assert '"rlstm_cell.ij" [label="ij = i * j\\nHidden\\nR^64"' in text


def test_quote_escapes_quotes_backslashes_and_newlines() -> None:
    assert quote('a "b"\\c\nd') == '"a \\"b\\"\\\\c\\nd"'
