"""The run view's data through the real server: `qvr.runInference`'s result carries the
worker's `view` (`qvr_core.posterior.view`), and a model program's "Prior predictive"
lens runs its prior for the view's predictive check."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from lsprotocol import types as lsp

from tests.lsp_commands.conftest import EXAMPLES, open_file, without_spare
from tests.lsp_commands.test_run_inference import run

pytestmark = pytest.mark.asyncio(loop_scope="module")
client = without_spare()  # the spare is not this module's subject (conftest)

MODELS = EXAMPLES / "models"
TEST_MODELS = Path(__file__).resolve().parents[1] / "models"


def centred(workspace) -> str:  # type: ignore[no-untyped-def]
    for name in ("eight_schools_centered.qvr", "eight_schools.json"):
        shutil.copy(MODELS / name, workspace / name)
    return (workspace / "eight_schools_centered.qvr").as_uri()


# lenses and the view's shape for a prior run (its draw count, its sites, no energy): no
# value a draw takes decides them, so the AVX2 pass skips them (kernel_free)
@pytest.mark.kernel_free
async def test_a_model_program_has_a_prior_predictive_lens_that_runs_its_prior(client, workspace):
    centred(workspace)
    uri = open_file(client, workspace / "eight_schools_centered.qvr")
    lenses = await client.text_document_code_lens_async(
        lsp.CodeLensParams(lsp.TextDocumentIdentifier(uri))
    )
    titles = [lens.command.title for lens in lenses if lens.command]
    assert titles == ["Run inference", "Prior predictive", "Calibrate", "Show diagram"]
    prior = next(
        lens for lens in lenses if lens.command and lens.command.title == "Prior predictive"
    )
    assert prior.command.command == "qvr.client.runInference"
    (arguments,) = prior.command.arguments
    assert dict(arguments) == {"uri": uri, "program": "eight_schools_centered", "method": "prior"}
    calibrate = next(lens for lens in lenses if lens.command and lens.command.title == "Calibrate")
    assert calibrate.command.command == "qvr.client.calibrate"
    assert [dict(a) for a in calibrate.command.arguments] == [
        {"uri": uri, "program": "eight_schools_centered"}
    ]
    # the server's own command takes the lens's arguments as they are (as Neovim sends them)
    result = await run(client, {**arguments, "steps": 60, "data": "eight_schools.json"})
    view = result["view"]
    assert result["method"] == "prior" and view["group"] == "prior"
    assert [s["label"] for s in view["scalars"]][:3] == ["mu", "tau", "theta[0]"]
    (ppc,) = view["ppc"]
    assert (ppc["site"], ppc["group"], ppc["kind"]) == ("y", "prior_predictive", "continuous")
    assert ppc["draws"] == 60 and len(ppc["replicated"]) == 50
    assert view["energy"] is None and view["divergences"] == 0


@pytest.mark.kernel_free
async def test_a_seed_program_has_no_prior_predictive_lens(client, workspace):
    uri = open_file(client, workspace / "tiny.qvr")
    lenses = await client.text_document_code_lens_async(
        lsp.CodeLensParams(lsp.TextDocumentIdentifier(uri))
    )
    titles = [lens.command.title for lens in lenses if lens.command]
    assert "Run inference" in titles and "Prior predictive" not in titles


async def test_a_nuts_result_carries_the_view_of_its_draws(client, workspace):
    # the cliff model diverges on about half its draws whatever the CPU (see its comment)
    for name in ("cliff.qvr", "cliff.json"):
        shutil.copy(TEST_MODELS / name, workspace / name)
    args = {
        "uri": (workspace / "cliff.qvr").as_uri(),
        "method": "nuts",
        "steps": 400,
        "chains": 2,
        "seed": 1,
        "data": "cliff.json",
    }
    result = await run(client, args)
    view = result["view"]
    posterior = result["posterior"]
    assert (view["method"], view["chains"], view["draws"]) == ("nuts", 2, 200)
    assert [s["label"] for s in view["scalars"]] == [row["label"] for row in posterior["rows"]]
    # the sampler's divergences, the ones the table counts, are the pair plot's marks
    assert view["divergences"] == posterior["divergences"] > 0
    assert [sum(flags) for flags in view["diverging"]] == posterior["divergences_per_chain"]
    assert len(view["energy"]["bfmi"]) == 2
    assert view["energy"]["bfmi"] == pytest.approx(posterior["e_bfmi"], rel=1e-3)
    (ppc,) = view["ppc"]
    assert ppc["observed"] == json.loads((TEST_MODELS / "cliff.json").read_text())["y"]
    assert "ppc_note" not in view
    kinds = [w["kind"] for w in view["warnings"]]
    assert kinds[0] == "divergences"


async def test_an_svi_result_has_a_view_without_the_sampler_s_plots(client, workspace):
    uri = centred(workspace)
    result = await run(
        client, {"uri": uri, "method": "svi", "steps": 20, "data": "eight_schools.json"}
    )
    view = result["view"]
    assert view["method"] == "svi" and view["chains"] == 1
    assert view["energy"] is None and view["rank_edges"] is None and view["ppc"] == []
    assert all(s["intervals"]["combined"][0] is not None for s in view["scalars"])
