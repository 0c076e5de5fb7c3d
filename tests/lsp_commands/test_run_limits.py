"""`qvr.runInference` and the server's diagnostics against hostile sizes, arguments and data.

The server validates with the same function as `qvr run`, reads a data file
once and hands the worker its bytes, refuses a run too large for the memory
budget before the worker allocates it (error kind "size"), and warns about
such a program while it is edited (QVR601, budget from `qvr.run.memoryBudget`).
"""

from __future__ import annotations

import asyncio
import io
from pathlib import Path

import pytest
import torch
from lsprotocol import types as lsp

from tests.lsp.support import diagnostics_for
from tests.lsp_commands.conftest import open_file, without_spare
from tests.lsp_commands.test_run_inference import failure, hover_answers, run
from tests.resources.hostile import HUGE, REPEAT, SMALL, STACK

pytestmark = pytest.mark.asyncio(loop_scope="module")
client = without_spare()  # the spare is not this module's subject (conftest)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"seed": 100000000000000000000000}, "seed must be a whole number from 0"),
        ({"seed": -1}, "seed must be a whole number from 0"),
        ({"lr": 0}, "lr must be a positive finite number"),
        ({"lr": "0.1"}, "lr must be a positive finite number"),
        ({"batch": 10**9}, "batch must be a whole number from 1 to 65,536"),
        ({"seq_len": 2.5}, "seq_len must be a whole number"),
        ({"steps": [3]}, "steps must be a whole number"),
        ({"max_tree_depth": 99}, "max_tree_depth must be a whole number from 1 to 15"),
        ({"memory_budget": "lots"}, "a memory size must be like 512MB"),
        ({"data": ""}, "data must be a non-empty string"),
    ],
)
async def test_hostile_arguments_are_invalid_params(client, workspace, fields, message):
    uri = (workspace / "tiny.qvr").as_uri()
    error = await failure(client, {"uri": uri, "steps": 2, **fields})
    assert error.code == -32602 and error.data["kind"] == "invalid"
    assert message in str(error)


@pytest.mark.parametrize(
    ("source", "blamed"),
    [(HUGE, "morphism head"), (REPEAT, "repeat(step, 1000000000)"), (STACK, "stack(step, 100000)")],
    ids=["huge-dimension", "repeat", "stack"],
)
async def test_a_program_too_large_is_refused_naming_the_declaration(
    client, workspace, source, blamed
):
    path = workspace / f"large-{blamed.split('(')[0].split()[-1]}.qvr"
    path.write_text(source)
    error = await failure(client, {"uri": path.as_uri(), "steps": 2, "batch": 16})
    assert error.data["kind"] == "size"
    assert "over the memory budget" in str(error) and blamed in str(error)
    await hover_answers(client, workspace / "vanilla_rnn_lm.qvr")


async def test_the_memory_budget_setting_refuses_runs_and_warns_while_editing(client, workspace):
    path = workspace / "small.qvr"
    path.write_text(SMALL)
    uri = open_file(client, path)
    first = await diagnostics_for(client, uri, 1)
    assert "QVR601" not in [str(d.code) for d in first.diagnostics]
    client.workspace_did_change_configuration(
        lsp.DidChangeConfigurationParams({"qvr": {"run": {"memoryBudget": "1MB"}}})
    )
    try:
        error = await failure(client, {"uri": uri, "steps": 2, "batch": 4096})
        assert error.data["kind"] == "size" and "memory budget of 1.05 MB" in str(error)
        await asyncio.sleep(0.5)  # the re-analysis the new setting started
        huge = workspace / "huge-open.qvr"
        huge.write_text(HUGE)
        huge_uri = open_file(client, huge)
        published = await diagnostics_for(client, huge_uri, 1)
        (warning,) = [d for d in published.diagnostics if str(d.code) == "QVR601"]
        assert warning.severity == lsp.DiagnosticSeverity.Warning
        assert "morphism head" in warning.message and "1.05 MB" in warning.message
        assert warning.range.start.line == 7  # `morphism head : Hidden -> Tok ...`
    finally:
        client.workspace_did_change_configuration(
            lsp.DidChangeConfigurationParams({"qvr": {"run": {"memoryBudget": None}}})
        )


def _save(path: Path, arrays: dict) -> None:
    buffer = io.BytesIO()
    torch.save(arrays, buffer)
    path.write_bytes(buffer.getvalue())


@pytest.mark.parametrize(
    ("name", "arrays", "message"),
    [
        (
            "sparse.pt",
            {"x": torch.eye(8, dtype=torch.long)[:4].to_sparse(), "next": torch.zeros(4)},
            "'x' is a sparse_coo tensor",
        ),
        (
            "nan.pt",
            {"x": torch.zeros(4, 8), "next": torch.tensor([0.0, float("inf"), 0, 0])},
            "'next' holds a value that is not finite",
        ),
        (
            "axes.pt",
            {"x": torch.zeros(4, 8, 2, dtype=torch.long), "next": torch.zeros(4)},
            "'x' has shape (4, 8, 2)",
        ),
    ],
)
async def test_bad_data_is_one_clear_error(client, workspace, name, arrays, message):
    _save(workspace / "data" / name, arrays)
    uri = (workspace / "tiny.qvr").as_uri()
    error = await failure(client, {"uri": uri, "steps": 2, "data": f"data/{name}"})
    assert error.data["kind"] == "inference" and message in str(error)
    assert "Traceback" not in str(error)


async def test_a_csv_with_a_byte_order_mark_is_read(client, workspace):
    header = ",".join([*(f"x[{i}]" for i in range(8)), "next"])
    rows = [",".join(str((r * 3 + i) % 8) for i in range(9)) for r in range(5)]
    text = "\ufeff" + "\r\n".join([header, *rows]) + "\r\n"
    (workspace / "data" / "bom.csv").write_bytes(text.encode("utf-8"))
    uri = (workspace / "tiny.qvr").as_uri()
    summary = await run(client, {"uri": uri, "method": "prior", "steps": 2, "data": "data/bom.csv"})
    assert summary["batch"] == 5 and summary["data"].endswith("bom.csv")
