"""`qvr.diagram` and the code lenses, through the real server."""

from __future__ import annotations

import shutil

import pytest
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException

from tests.lsp_commands.conftest import EXAMPLES, open_file, plain

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def execute(client, command: str, *arguments: object) -> object:
    return await client.workspace_execute_command_async(
        lsp.ExecuteCommandParams(command=command, arguments=list(arguments))
    )


async def test_diagram_returns_mermaid_text_and_nodes_with_ranges(client, workspace):
    path = workspace / "vanilla_rnn_lm.qvr"
    uri = open_file(client, path)
    result = await execute(client, "qvr.diagram", {"uri": uri, "format": "mermaid"})
    assert result["format"] == "mermaid"
    assert result["text"].startswith("flowchart LR\n")
    nodes = {n["id"]: n for n in result["nodes"]}
    assert all(node_id in result["text"] for node_id in nodes)
    h = nodes["vanilla_rnn_lm.h"]
    assert (h["label"], h["kind"], h["type"], h["dims"]) == ("h", "sample", "Hidden", "R^128")
    line = path.read_text().splitlines()[h["range"]["start"]["line"]]
    assert line.strip() == "sample h <- backbone"
    assert h["range"]["start"]["character"] == line.index("sample")


async def test_nodes_with_errors_carry_their_messages(client, workspace):
    path = workspace / "mismatch.qvr"
    path.write_text((EXAMPLES / "errors" / "QVR201_dimension_mismatch.qvr").read_text())
    uri = open_file(client, path)
    result = await execute(client, "qvr.diagram", {"uri": uri, "format": "mermaid"})
    marked = {n["label"]: n["errors"] for n in result["nodes"] if n["errors"]}
    assert list(marked) == ["combine"]
    assert marked["combine"][0].startswith("QVR201: cannot compose")
    assert "class bidirectional_rnn_lm.h.backbone.combine error" in result["text"]


async def test_diagram_of_one_program_as_dot(client, workspace):
    uri = open_file(client, workspace / "rlstm_lm.qvr")
    result = await execute(
        client, "qvr.diagram", {"uri": uri, "name": "rlstm_cell", "format": "dot"}
    )
    assert result["format"] == "dot"
    assert 'subgraph "cluster_rlstm_cell"' in result["text"]
    assert "rlstm_lm" not in result["text"]


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz is not installed")
async def test_diagram_as_svg(client, workspace):
    uri = (workspace / "bidirectional_rnn_lm.qvr").as_uri()  # not open: read from disk
    result = await execute(client, "qvr.diagram", {"uri": uri, "format": "svg"})
    assert "</svg>" in result["text"] and "right to left" in result["text"]


async def test_diagram_accepts_code_lens_arguments(client, workspace):
    uri = (workspace / "vanilla_rnn_lm.qvr").as_uri()
    result = await execute(client, "qvr.diagram", uri, "backbone")
    assert {n["id"] for n in result["nodes"]} >= {"backbone.input", "backbone.scan_cell"}


async def test_unknown_name_is_a_clear_error(client, workspace):
    uri = (workspace / "vanilla_rnn_lm.qvr").as_uri()
    with pytest.raises(JsonRpcException) as info:
        await execute(client, "qvr.diagram", {"uri": uri, "name": "nope"})
    assert "no program or let named 'nope'" in str(info.value)


async def test_bad_format_is_invalid_params(client, workspace):
    uri = (workspace / "vanilla_rnn_lm.qvr").as_uri()
    with pytest.raises(JsonRpcException) as info:
        await execute(client, "qvr.diagram", {"uri": uri, "format": "png"})
    assert "format must be one of mermaid, dot, svg" in str(info.value)


async def test_code_lenses_run_exported_programs_and_draw_every_program(client, workspace):
    uri = open_file(client, workspace / "rlstm_lm.qvr", version=2)
    lenses = await client.text_document_code_lens_async(
        lsp.CodeLensParams(text_document=lsp.TextDocumentIdentifier(uri))
    )
    seen = [(c.title, c.command, list(c.arguments)) for c in (lens.command for lens in lenses)]
    assert seen == [
        ("Show diagram", "qvr.client.showDiagram", [uri, "rlstm_cell"]),
        ("Run inference", "qvr.client.runInference", [uri, "rlstm_lm"]),
        ("Show diagram", "qvr.client.showDiagram", [uri, "rlstm_lm"]),
    ]
    text = (workspace / "rlstm_lm.qvr").read_text().splitlines()
    assert text[lenses[0].range.start.line].startswith("program rlstm_cell")


async def test_diagrams_do_not_load_torch(client):
    status = plain(await client.protocol.send_request_async("qvr/serverStatus", None))
    assert "torch" not in status["loadedModules"]
