"""jupyter-lsp starts qvr's server for JupyterLab: its entry point, its spec and the
server the spec starts, as jupyterlab-lsp then talks to it (one `.qvr` virtual document
per `%%qvr` cell; the whole of it in the real JupyterLab of jupyterlab-extension/e2e)."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest_lsp
from jupyter_lsp import LanguageServerManager
from jupyter_lsp.schema import LANGUAGE_SERVER_SPEC_MAP
from pytest_lsp import ClientServerConfig

from qvr.jupyter_lsp import LANGUAGE, spec
from qvr_core.text.cells import qvr_text
from tests.lsp.support import (
    RecordingClient,
    codes,
    diagnostics_for,
    example,
    initialize_params,
    make_client,
    open_document,
)

ROOT = Path(__file__).resolve().parents[2]
ARGV = spec()["qvr-lsp"]["argv"]
assert isinstance(ARGV, list)


def test_the_spec_is_valid_for_jupyter_lsp() -> None:
    assert list(LANGUAGE_SERVER_SPEC_MAP.iter_errors(spec())) == []
    (entry,) = spec().values()
    assert entry["languages"] == [LANGUAGE]
    # the interpreter that runs Jupyter (qvr's environment), never a PATH lookup; -P keeps
    # the notebook's folder off sys.path
    assert entry["argv"] == [sys.executable, "-P", "-m", "qvr_lsp"]
    assert entry["requires_documents_on_disk"] is False


def test_jupyterlab_qvr_names_the_language_the_spec_serves() -> None:
    """The extension's documents are matched to a server by language: the two must agree."""
    extractor = (ROOT / "jupyterlab-extension" / "src" / "extractor.ts").read_text()
    assert f'readonly language = "{LANGUAGE}";' in extractor


def test_jupyter_lsp_finds_qvr_lsp_by_its_entry_point() -> None:
    manager = LanguageServerManager()
    manager.initialize()
    assert manager.language_servers["qvr-lsp"]["argv"] == ARGV


@pytest_lsp.fixture(config=ClientServerConfig(server_command=ARGV, client_factory=make_client))
async def lab_client(lsp_client: RecordingClient) -> AsyncIterator[RecordingClient]:
    await lsp_client.initialize_session(initialize_params("vscode"))
    yield lsp_client
    await lsp_client.shutdown_session()


async def test_the_server_it_starts_checks_a_cells_virtual_document(
    lab_client: RecordingClient, tmp_path: Path
) -> None:
    """A `%%qvr` cell as jupyterlab-lsp sends it: a document of its own, under the
    notebook's `.virtual_documents` folder, the magic's line a comment."""
    cell = "%%qvr\n" + example("errors/QVR201_dimension_mismatch.qvr")
    text = qvr_text(cell)
    assert text is not None
    uri = (tmp_path / ".virtual_documents" / "cells.ipynb-1.qvr").as_uri()
    open_document(lab_client, uri, text)
    published = await diagnostics_for(lab_client, uri, 1)
    assert codes(published) == ["QVR201"]
    # the cell's own line: `let backbone` is its 18th, `%%qvr` first
    assert published.diagnostics[0].range.start.line == 17
    assert not (tmp_path / ".virtual_documents").exists()  # nothing written to disk


def test_the_wheel_carries_the_extension_jupyterlab_loads() -> None:
    """The prebuilt extension (built and checked current by jupyterlab-extension's npm
    test) names a remote entry that exists, and shares JupyterLab's LSP and notebook
    packages instead of bundling them."""
    built = ROOT / "qvr" / "labextension"
    package = json.loads((built / "package.json").read_text())
    assert package["name"] == "jupyterlab-qvr"
    assert (built / package["jupyterlab"]["_build"]["load"]).is_file()
    shared = package["jupyterlab"]["sharedPackages"]
    for name in ("@jupyterlab/lsp", "@jupyterlab/notebook"):
        assert shared[name]["bundled"] is False and shared[name]["singleton"] is True
