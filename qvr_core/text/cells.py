"""Which text of a notebook cell is QVR: the one rule every reader of `%%qvr` cells uses.

A Jupyter notebook's `%%qvr` cells (the magic of `qvr/notebook.py`) are Python cells
whose first line names the magic and whose rest is QVR. Each is a QVR module of its own,
as the magic checks each cell alone. Its QVR text is the whole cell with the magic's line
made a comment of the same length (`%%qvr --run` -> `# qvr --run`), so every line and
column of that text is the cell's: the magic's `cell:LINE`, and the server's diagnostics,
hover, completion and diagram (for VS Code's notebook sync, `qvr_lsp/protocol/server.py`),
need no translation. jupyterlab-qvr (`jupyterlab-extension/src/extractor.ts`) reads cells
by the same rule in TypeScript, checked against the same cases
(`tests/lsp/qvr_cells.json`).
"""

from __future__ import annotations

MAGIC = "%%qvr"


def qvr_text(cell: str) -> str | None:
    """The QVR text of a cell: its magic line as a comment of the same length; None
    for a cell that is not `%%qvr`."""
    first = cell.split("\n", 1)[0]
    if first != MAGIC and not first.startswith((MAGIC + " ", MAGIC + "\t", MAGIC + "\r")):
        return None
    return "# " + cell[2:]
