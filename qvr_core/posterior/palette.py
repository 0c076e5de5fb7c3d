"""The chain colours of the editor's run view, so a figure's chain 1 is the editor's chain 1.

The run view colours chain N by the class `chain-N` of
`vscode-extension/media/webview.css` (its fallback when the theme has no chart
colours); `tests/plots/test_palette.py` reads that file so the two cannot drift.
"""

from __future__ import annotations

#: `.chain-0` to `.chain-7` of the run view; later chains repeat them.
CHAIN_COLOURS: tuple[str, ...] = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#bcbd22",
    "#17becf",
    "#e377c2",
)
