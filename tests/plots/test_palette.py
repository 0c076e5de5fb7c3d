"""The figures' chain colours are the editor's run view's, read from its stylesheet."""

from __future__ import annotations

import re

from qvr_core.posterior.palette import CHAIN_COLOURS
from tests.conftest import ROOT

STYLESHEET = ROOT / "vscode-extension" / "media" / "webview.css"
CHAINS = ROOT / "vscode-extension" / "browser" / "loss" / "chains.ts"
#: `svg .chain-3 { stroke: var(--vscode-charts-red, #d62728); }` or `stroke: #17becf;`
RULE = re.compile(r"\.chain-(\d+)\s*\{\s*stroke:\s*(?:var\([^,]+,\s*)?(#[0-9a-fA-F]{6})")


def test_the_palette_is_the_run_views() -> None:
    rules = {int(n): colour.lower() for n, colour in RULE.findall(STYLESHEET.read_text("utf-8"))}
    assert sorted(rules) == list(range(len(rules)))  # chain-0, chain-1, ... without a gap
    assert tuple(rules[n] for n in sorted(rules)) == CHAIN_COLOURS


def test_the_run_view_cycles_through_as_many_colours() -> None:
    found = re.search(r"const CHAIN_COLOURS = (\d+);", CHAINS.read_text("utf-8"))
    assert found is not None
    assert int(found.group(1)) == len(CHAIN_COLOURS)
