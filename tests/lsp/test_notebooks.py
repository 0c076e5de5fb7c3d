"""`%%qvr` cells of a notebook over LSP 3.17's notebook document sync
(`qvr_lsp/protocol/notebook_cells.py`): each such cell a QVR document under its own URI, with
the cell's own lines and columns; other cells left alone."""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types as lsp

from qvr_core.text.cells import qvr_text
from tests.inference.qvr_sources import REGRESSION
from tests.lsp.support import (
    CONFIG,
    WAIT_SECONDS,
    RecordingClient,
    codes,
    diagnostics_for,
    position_of,
    pulling_capabilities,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")

GOOD = "%%qvr --run\n" + REGRESSION.removeprefix("\n")  # a regression model after the magic
BAD = GOOD.replace("observe y : Y <- reg", "observe y : Y <- gre")  # QVR101 on line 6
PYTHON = "import numpy as np\nx = np.zeros(3)\n"

_notebooks = itertools.count(1)


def cell_uri(n: int, i: int) -> str:
    """A cell's URI as VS Code makes it (code-server's, with its authority): the fragment
    names the cell, percent-encoded (`W0sZmlsZQ==` -> `W0sZmlsZQ%3D%3D`). pygls keys its
    documents by the unquoted URI; the server answers under the URI the client sent."""
    path = f"/tmp/qvr-tests/notebook-{n}.ipynb"
    return f"vscode-notebook-cell://127.0.0.1:8080{path}#W{i}sZmlsZQ%3D%3D"


def notebook(client, *cells: str) -> tuple[str, list[str]]:
    """Open a notebook of Python cells (each `cells` text); its URI and its cells'."""
    n = next(_notebooks)
    uri = f"file:///tmp/qvr-tests/notebook-{n}.ipynb"
    cell_uris = [cell_uri(n, i) for i in range(len(cells))]
    client.notebook_document_did_open(
        lsp.DidOpenNotebookDocumentParams(
            notebook_document=lsp.NotebookDocument(
                uri=uri,
                notebook_type="jupyter-notebook",
                version=1,
                cells=[lsp.NotebookCell(lsp.NotebookCellKind.Code, c) for c in cell_uris],
            ),
            cell_text_documents=[
                lsp.TextDocumentItem(c, "python", 1, text)
                for c, text in zip(cell_uris, cells, strict=True)
            ],
        )
    )
    return uri, cell_uris


def edit_cell(client, uri: str, cell: str, version: int, text: str) -> None:
    client.notebook_document_did_change(
        lsp.DidChangeNotebookDocumentParams(
            notebook_document=lsp.VersionedNotebookDocumentIdentifier(version, uri),
            change=lsp.NotebookDocumentChangeEvent(
                cells=lsp.NotebookDocumentCellChanges(
                    text_content=[
                        lsp.NotebookDocumentCellContentChanges(
                            lsp.VersionedTextDocumentIdentifier(version, cell),
                            [lsp.TextDocumentContentChangeWholeDocument(text)],
                        )
                    ]
                )
            ),
        )
    )


async def cleared(client, uri: str) -> None:
    """Wait until the last publication for `uri` is empty."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + WAIT_SECONDS
    while True:
        mine = [p for p in client.published if p.uri == uri]
        if mine and not mine[-1].diagnostics:
            return
        assert loop.time() < deadline, f"diagnostics of {uri} never cleared"
        await asyncio.sleep(0.01)


async def test_a_cell_is_qvr_when_its_first_line_is_the_magic() -> None:
    assert qvr_text("%%qvr\nobject X : Real 1\n") == "# qvr\nobject X : Real 1\n"
    assert qvr_text(GOOD).splitlines()[0] == "# qvr --run"  # the same length: same columns
    assert [len(line) for line in qvr_text(GOOD).splitlines()] == [
        len(x) for x in GOOD.splitlines()
    ]
    for other in (PYTHON, "%%qvrx\n", " %%qvr\n", "x = 1\n%%qvr\n", ""):
        assert qvr_text(other) is None


async def test_the_server_reads_cells_by_the_rule_jupyterlab_qvr_reads_them_by() -> None:
    """The cases jupyterlab-extension/test/extractor.test.ts checks the extension against:
    a cell is QVR, and the same document, in VS Code and in JupyterLab."""
    cases = json.loads((Path(__file__).parent / "qvr_cells.json").read_text())["cases"]
    assert len(cases) >= 10
    for case in cases:
        assert qvr_text(case["cell"]) == case["qvr"], case["cell"]


async def test_a_qvr_cell_gets_its_diagnostics_on_its_own_lines(client) -> None:
    _, (python, cell) = notebook(client, PYTHON, BAD)
    published = await diagnostics_for(client, cell, 1)
    assert codes(published) == ["QVR101"]
    assert published.diagnostics[0].range.start.line == 5  # the cell's line of `gre`
    assert not [p for p in client.published if p.uri == python]  # a Python cell: not ours


async def test_hover_in_a_cell_reads_the_cells_positions(client) -> None:
    _, (cell,) = notebook(client, GOOD)
    await diagnostics_for(client, cell, 1)
    hover = await client.text_document_hover_async(
        lsp.HoverParams(lsp.TextDocumentIdentifier(cell), position_of(GOOD, "reg\n", delta=1))
    )
    assert hover is not None and isinstance(hover.contents, lsp.MarkupContent)
    assert "reg" in hover.contents.value and "X -> Y" in hover.contents.value


@pytest_lsp.fixture(config=CONFIG, scope="module")
async def puller(lsp_client: RecordingClient) -> AsyncIterator[None]:
    """A session whose client pulls diagnostics, as VS Code 1.67+ does: pushed nothing."""
    await lsp_client.initialize_session(lsp.InitializeParams(capabilities=pulling_capabilities()))
    yield
    await lsp_client.shutdown_session()


async def test_a_client_that_pulls_asks_for_a_cells_diagnostics(puller: RecordingClient) -> None:
    """VS Code's extension pulls each `%%qvr` cell's diagnostics itself once the notebook's
    open or change has gone out (vscode-extension/src/server/notebookCells.ts)."""
    _, (python, cell) = notebook(puller, PYTHON, BAD)
    report = await puller.text_document_diagnostic_async(
        lsp.DocumentDiagnosticParams(lsp.TextDocumentIdentifier(cell))
    )
    assert isinstance(report, lsp.RelatedFullDocumentDiagnosticReport)
    assert [str(d.code) for d in report.items] == ["QVR101"]
    assert report.items[0].range.start.line == 5
    other = await puller.text_document_diagnostic_async(
        lsp.DocumentDiagnosticParams(lsp.TextDocumentIdentifier(python))
    )
    assert isinstance(other, lsp.RelatedFullDocumentDiagnosticReport) and not other.items
    assert puller.published == []


async def test_editing_a_cell_checks_it_again_and_leaving_qvr_clears_it(client) -> None:
    uri, (cell,) = notebook(client, BAD)
    assert codes(await diagnostics_for(client, cell, 1)) == ["QVR101"]
    edit_cell(client, uri, cell, 2, GOOD)
    assert codes(await diagnostics_for(client, cell, 2)) == []
    edit_cell(client, uri, cell, 3, BAD)
    assert codes(await diagnostics_for(client, cell, 3)) == ["QVR101"]
    edit_cell(client, uri, cell, 4, PYTHON)  # no longer a %%qvr cell
    await cleared(client, cell)


async def test_closing_the_notebook_clears_its_cells(client) -> None:
    uri, (cell,) = notebook(client, BAD)
    assert codes(await diagnostics_for(client, cell, 1)) == ["QVR101"]
    client.notebook_document_did_close(
        lsp.DidCloseNotebookDocumentParams(
            lsp.NotebookDocumentIdentifier(uri), [lsp.TextDocumentIdentifier(cell)]
        )
    )
    await cleared(client, cell)
