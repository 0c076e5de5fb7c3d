"""`%%qvr` cells of a notebook as QVR documents (LSP 3.17's notebook document sync).

A Jupyter notebook's `%%qvr` cells (the magic of `qvr/notebook.py`) are Python cells
whose first line names the magic and whose rest is QVR. The server asks for the
Python cells of every notebook (`notebookDocumentSync`); pygls keeps each cell's text
as the notebook's changes arrive, and the server opens each cell that starts with
`%%qvr` as a QVR document of its own, under the cell's URI: one cell, one module, as
the magic checks each cell alone. The magic's line becomes a comment of the same
length (`%%qvr --run` -> `# qvr --run`), so every line and column of the document is
the cell's: diagnostics, hover, completion and the diagram need no translation, and
the cell's diagnostics show in it. A cell that stops starting with `%%qvr` is closed
(its diagnostics cleared); any other cell is left alone.
"""

from __future__ import annotations

MAGIC = "%%qvr"


def qvr_text(cell: str) -> str | None:
    """The QVR document of a cell: its magic line as a comment of the same length; None
    for a cell that is not `%%qvr`."""
    first = cell.split("\n", 1)[0]
    if first != MAGIC and not first.startswith((MAGIC + " ", MAGIC + "\t", MAGIC + "\r")):
        return None
    return "# " + cell[2:]
