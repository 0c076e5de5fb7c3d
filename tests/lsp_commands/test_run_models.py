"""The editor runs model programs: a code lens offers the run, and `qvr.runInference`
reads the data file (JSON here) and fits the program in the worker."""

from __future__ import annotations

import json

import pytest
from lsprotocol import types as lsp

from tests.lsp_commands.conftest import open_file, without_spare
from tests.lsp_commands.test_run_inference import failure, run

pytestmark = pytest.mark.asyncio(loop_scope="module")
client = without_spare()  # the spare is not this module's subject (conftest)

SCHOOLS = (
    "object School : FinSet 8\n\n"
    "program schools : School -> School\n"
    "    sample mu <- Normal(0.0, 5.0)\n"
    "    sample tau <- HalfCauchy(5.0)\n"
    "    sample theta_raw : School <- Normal(0.0, 1.0)\n"
    "    let theta = mu + tau * theta_raw\n"
    "    observe y : School <- Normal(theta, sigma)\n"
    "    return theta\n\n"
    "export schools\n"
)
DATA = {"y": [28, 8, -3, 7, -1, 1, 18, 12], "sigma": [15, 10, 16, 11, 9, 11, 10, 18]}


def write(workspace) -> str:  # type: ignore[no-untyped-def]
    (workspace / "schools.qvr").write_text(SCHOOLS, encoding="utf-8")
    (workspace / "data" / "schools.json").write_text(json.dumps(DATA), encoding="utf-8")
    return (workspace / "schools.qvr").as_uri()


async def test_a_code_lens_offers_to_run_a_model_program(client, workspace):
    write(workspace)
    uri = open_file(client, workspace / "schools.qvr")
    lenses = await client.text_document_code_lens_async(
        lsp.CodeLensParams(lsp.TextDocumentIdentifier(uri))
    )
    runs = [lens for lens in lenses if lens.command and lens.command.title == "Run inference"]
    assert [list(lens.command.arguments) for lens in runs] == [[uri, "schools"]]
    assert runs[0].range.start.line == 2


async def test_the_editor_fits_a_model_program_to_a_json_data_file(client, workspace):
    uri = write(workspace)
    args = {"uri": uri, "method": "nuts", "steps": 20, "data": "data/schools.json"}
    summary = await run(client, args)
    assert summary["status"] == "completed" and summary["program"] == "schools"
    assert set(summary["posterior"]["sites"]) == {"mu", "tau", "theta_raw"}
    assert summary["chains"] == 4 and summary["posterior"]["rows"][0]["label"] == "mu"
    assert summary["data"].endswith("schools.json")


async def test_a_nuts_run_streams_each_chain_s_draws_and_the_table(client, workspace):
    uri = write(workspace)
    after = len(client.inference_progress)
    args = {"uri": uri, "method": "nuts", "steps": 40, "chains": 2, "data": "data/schools.json"}
    summary = await run(client, args)
    notes = [n for n in client.inference_progress[after:] if n["uri"] == uri and "live" in n]
    assert notes, "no progress carried the run's draws"
    live = notes[-1]["live"]
    assert live["chains"] == 2 and live["draws"] == [20, 20] and live["warmup"] == 20
    assert [t["label"] for t in live["traces"]][:3] == ["mu", "tau", "theta_raw[0]"]
    assert all(len(t["chains"]) == 2 for t in live["traces"])
    assert live["posterior"]["rows"] == summary["posterior"]["rows"]


async def test_missing_data_names_the_key(client, workspace):
    uri = write(workspace)
    (workspace / "data" / "half.json").write_text(json.dumps({"y": DATA["y"]}))
    error = await failure(
        client, {"uri": uri, "method": "svi", "steps": 2, "data": "data/half.json"}
    )
    assert error.data["kind"] == "inference" and "missing 'sigma' (line 8)" in str(error)


async def test_a_program_the_checker_does_not_type_is_refused_with_its_reason(client, workspace):
    (workspace / "unchecked.qvr").write_text(
        "object School : FinSet 8\n\n"
        "program p : School -> School\n"
        "    sample a <- Normal(0.0, 1.0)\n"
        "    let b = frobnicate(a)\n"
        "    observe y : School <- Normal(b, 1.0)\n"
        "    return b\n\n"
        "export p\n",
        encoding="utf-8",
    )
    uri = open_file(client, workspace / "unchecked.qvr")
    error = await failure(client, {"uri": uri, "method": "svi", "steps": 2})
    assert "its function frobnicate" in str(error) and "QVR011" in str(error)


async def test_a_program_with_sqrt_of_a_scale_checks_and_runs(client, workspace):
    (workspace / "sqrt.qvr").write_text(
        SCHOOLS.replace("let theta = mu + tau * theta_raw", "let theta = sqrt(tau) + mu"),
        encoding="utf-8",
    )
    (workspace / "data" / "schools.json").write_text(json.dumps(DATA), encoding="utf-8")
    uri = open_file(client, workspace / "sqrt.qvr")
    args = {"uri": uri, "method": "svi", "steps": 5, "data": "data/schools.json"}
    summary = await run(client, args)
    assert summary["status"] == "completed" and summary["program"] == "schools"


async def test_the_editor_runs_minibatch_svi_on_a_plate(client, workspace):
    """`subsample` from the run settings reaches the worker's run: each step scores 4 of
    School's 8 rows, and the summary says so with the spread of its loss."""
    uri = write(workspace)
    args = {
        "uri": uri,
        "method": "svi",
        "steps": 30,
        "data": "data/schools.json",
        "subsample": "School=4",
        "device": "cpu",
    }
    summary = await run(client, args)
    assert summary["status"] == "completed" and summary["device"] == "cpu"
    assert summary["subsample"] == {"plate": "School", "rows": 4}
    assert summary["elbo_sd"] > 0 and summary["elbo_evaluations"] == 20


async def test_a_plate_that_cannot_be_subsampled_is_refused_with_the_reason(client, workspace):
    uri = write(workspace)
    error = await failure(
        client,
        {"uri": uri, "method": "svi", "steps": 2, "data": "data/schools.json", "subsample": "Q=2"},
    )
    assert error.data["kind"] == "inference" and "cannot subsample Q" in str(error)


async def test_numpyros_engine_runs_in_the_worker_with_live_draws(client, workspace):
    pytest.importorskip("numpyro")
    uri = write(workspace)
    after = len(client.inference_progress)
    args = {
        "uri": uri,
        "method": "nuts",
        "steps": 120,
        "chains": 2,
        "engine": "numpyro",
        "data": "data/schools.json",
    }
    summary = await run(client, args)
    assert summary["status"] == "completed" and summary["engine"] == "numpyro"
    assert set(summary["posterior"]["sites"]) == {"mu", "tau", "theta_raw"}
    notes = [n for n in client.inference_progress[after:] if n["uri"] == uri and "live" in n]
    assert notes and notes[-1]["live"]["draws"] == [60, 60]
    assert notes[-1]["live"]["posterior"]["rows"] == summary["posterior"]["rows"]


async def test_an_engine_the_server_does_not_know_is_refused(client, workspace):
    uri = write(workspace)
    error = await failure(client, {"uri": uri, "method": "nuts", "steps": 4, "engine": "stan"})
    assert "engine" in str(error)
