"""The real server over stdio with a workspace of its own (a copy of an example and data files).

One server per test module; the client records `qvr/inferenceProgress`
notifications next to pytest-lsp's `$/progress` records.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from pytest_lsp import ClientServerConfig

from tests.lsp.support import SERVER_COMMAND, RecordingClient, initialize_params, make_client
from tests.tiny_network import TINY

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
PROGRESS_NOTIFICATION = "qvr/inferenceProgress"


def make_recording_client():
    client = make_client()
    client.inference_progress = []  # type: ignore[attr-defined]

    @client.feature(PROGRESS_NOTIFICATION)
    def on_inference_progress(params) -> None:  # unannotated: pygls would pass the client
        client.inference_progress.append(plain(params))  # type: ignore[attr-defined]

    return client


def plain(value: object) -> object:
    """pygls hands custom notifications over as attribute objects: back to dicts."""
    if hasattr(value, "_asdict"):
        value = value._asdict()  # type: ignore[union-attr]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("workspace")
    for name in ("vanilla_rnn_lm.qvr", "bidirectional_rnn_lm.qvr", "rlstm_lm.qvr"):
        shutil.copy(EXAMPLES / name, root / name)
    (root / "tiny.qvr").write_text(TINY)
    (root / "data").mkdir()
    header = ",".join([*(f"x[{i}]" for i in range(8)), "next"])
    rows = [",".join(str((r * 7 + i) % 8) for i in range(9)) for r in range(4)]
    (root / "data" / "tokens.csv").write_text("\n".join([header, *rows]) + "\n")
    outside = tmp_path_factory.mktemp("outside") / "secret.csv"
    outside.write_text(header + "\n")
    (root / "data" / "link.csv").symlink_to(outside)
    return root


CONFIG = ClientServerConfig(server_command=SERVER_COMMAND, client_factory=make_recording_client)


@pytest_lsp.fixture(config=CONFIG, scope="module")
async def client(lsp_client: RecordingClient, workspace: Path):
    params = initialize_params("vscode", root=workspace)
    await lsp_client.initialize_session(params)
    yield
    await lsp_client.shutdown_session()


#: The server with its spare worker off (`QVR_SPARE_WORKER=0`): each run starts its own
#: worker, which imports what that run needs when it needs it. A spare imports torch, the
#: runtime and ArviZ before its run comes (some 4.5 CPU seconds, where a run refused by the
#: worker or a short one imports half of that), and the server starts the next spare as
#: each run starts: the last one is loaded for nothing. A module whose subject is not the
#: spare takes this server (`client = without_spare()`); test_run_inference,
#: test_spare_worker, test_worker_data and test_shutdown keep the editor's default.
WITHOUT_SPARE = ClientServerConfig(
    server_command=SERVER_COMMAND,
    client_factory=make_recording_client,
    server_env={**os.environ, "QVR_SPARE_WORKER": "0"},
)


def without_spare():  # type: ignore[no-untyped-def]
    """A module's `client` fixture (assign it to `client`) on a server without a spare."""

    @pytest_lsp.fixture(config=WITHOUT_SPARE, scope="module")
    async def client(lsp_client: RecordingClient, workspace: Path):
        await lsp_client.initialize_session(initialize_params("vscode", root=workspace))
        yield
        await lsp_client.shutdown_session()

    return client


def open_file(client, path: Path, version: int = 1) -> str:
    uri = path.as_uri()
    client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(
            lsp.TextDocumentItem(uri, "qvr", version, path.read_text(encoding="utf-8"))
        )
    )
    return uri
