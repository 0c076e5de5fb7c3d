"""SVG through Graphviz: rendered when `dot` is there, a clear error when it is not."""

from __future__ import annotations

import shutil

import pytest

from qvr_core.graph import SvgRenderError, draw, render_svg
from tests.graph.conftest import checked

needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz is not installed")


@needs_dot
def test_draw_svg_renders_the_dot_text() -> None:
    diagram = draw(checked("vanilla_rnn_lm.qvr"), format="svg")
    assert diagram.format == "svg"
    assert diagram.text.lstrip().startswith("<?xml") and "</svg>" in diagram.text
    assert "vanilla_rnn_lm.h.backbone.scan_cell" in diagram.text  # node ids become titles


def test_missing_dot_says_what_to_install_and_what_else_to_use() -> None:
    with pytest.raises(SvgRenderError) as info:
        render_svg("digraph { a -> b }", dot="qvr-no-such-dot")
    message = str(info.value)
    assert "not on PATH" in message and "install Graphviz" in message and "mermaid" in message


@needs_dot
def test_invalid_dot_reports_graphviz_message() -> None:
    with pytest.raises(SvgRenderError, match="Graphviz failed"):
        render_svg("digraph { a -> }")


def test_slow_dot_is_stopped_by_the_timeout(tmp_path) -> None:
    slow = tmp_path / "slow-dot"
    slow.write_text("#!/bin/sh\nsleep 30\n")
    slow.chmod(0o755)
    with pytest.raises(SvgRenderError, match=r"longer than 0\.5 s"):
        render_svg("digraph {}", dot=str(slow), timeout=0.5)
