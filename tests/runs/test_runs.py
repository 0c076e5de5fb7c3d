"""The run layer (`qvr_core.runs`): one typed path from source to `RunSummary`, its JSON
form, the runnable decision, and `qvr_core.dsl` on model programs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from torch import distributions as D

from qvr_core import dsl
from qvr_core.inference import InferenceError
from qvr_core.plan.run_arguments import RunArguments
from qvr_core.runs import RunSummary, run_inference, run_program
from qvr_core.runs.prepare import prepare
from qvr_core.runtime.model import ModelProgram
from tests.conftest import EXAMPLES

REGRESSION = EXAMPLES / "models" / "linear_regression.qvr"
REGRESSION_DATA = EXAMPLES / "models" / "linear_regression.json"
VANILLA = (EXAMPLES / "vanilla_rnn_lm.qvr").read_text(encoding="utf-8")

HEAD = ["method", "program", "data", "batch", "steps", "device"]
LOSS = ["initial_loss", "final_loss", "losses", "seconds", "steps_per_second"]
#: The summary's keys in order, per method: the protocol of `qvr run --json` and the worker.
KEYS = {
    "svi": [*HEAD, "lr", "guide", *LOSS, "posterior", "stopped"],
    "nuts": [
        *HEAD,
        "chains",
        "chains_requested",
        "processes",
        "num_warmup",
        "num_samples",
        "acceptance",
        "target_accept",
        "divergences",
        "warmup_divergences",
        "step_size",
        "mass_matrix",
        "starts",
        "engine",
        "r_hat",
        "ess",
        "r_hat_max",
        "ess_min",
        "posterior",
        *LOSS,
        "traces",
        "stopped",
    ],
    "prior": [*HEAD, "sites", "redrawn", *LOSS, "stopped"],
}


@pytest.mark.parametrize("method", ["svi", "nuts", "prior"])
def test_the_json_form_keeps_its_keys_in_order(method: str) -> None:
    summary = run_program(
        VANILLA, method=method, steps=4, batch=2, seq_len=3, chains=1, max_tree_depth=2
    )
    assert isinstance(summary, RunSummary) and summary.method == method
    out = summary.to_json()
    assert list(out) == KEYS[method]
    assert out["steps_per_second"] == summary.steps_per_second
    json.dumps(out)
    if method == "nuts":
        assert summary.nuts is not None and out["traces"][0] == out["losses"]
        assert out["steps"] == sum(len(t) for t in out["traces"])


def test_a_model_program_runs_on_the_model_runtime_with_its_data() -> None:
    source = REGRESSION.read_text(encoding="utf-8")
    summary = run_program(source, method="svi", steps=20, lr=0.05, data=REGRESSION_DATA)
    assert summary.program == "linear_regression" and summary.batch == 1
    assert summary.posterior is not None and summary.svi is not None
    assert {r["site"] for r in summary.posterior.rows} == {"alpha", "beta", "sigma"}
    assert summary.warnings == tuple(summary.posterior.warnings)
    assert run_inference(source, method="prior", steps=3, data=REGRESSION_DATA)["sites"]


def test_a_program_that_does_not_run_is_refused_with_the_runnable_reason() -> None:
    template = """
object Subject : FinSet 4

program intercepts(G : FinSet, scale : Real) : G -> G
    sample sigma <- HalfNormal(scale)
    sample v : G <- Normal(0.0, sigma)
    return v

export intercepts
"""
    with pytest.raises(InferenceError, match="template over 'G' \\(FinSet\\)"):
        run_program(template)


def _regression_draw() -> dict[str, torch.Tensor]:
    return {
        "alpha": torch.tensor(0.7),
        "beta": torch.tensor(1.9),
        "sigma": torch.tensor(0.8),
    }


def test_dsl_load_gives_the_model_program_and_its_log_joint_is_the_run_s() -> None:
    data = json.loads(REGRESSION_DATA.read_text(encoding="utf-8"))
    x = torch.tensor(data["x"], dtype=torch.get_default_dtype())
    y = torch.tensor(data["y"], dtype=torch.get_default_dtype())
    draw = _regression_draw()
    values = {**draw, "y": y}

    program = dsl.load(REGRESSION)["linear_regression"]
    assert isinstance(program, ModelProgram)
    assert program.data_names == ("x",) and program.observed_names == ("y",)
    ours = program.log_joint({"x": x}, values)

    # what `qvr run --data` scores: the program and data as the run layer prepares them
    prepared = prepare(
        REGRESSION.read_text(encoding="utf-8"),
        RunArguments(method="nuts"),
        path=str(REGRESSION),
        data=REGRESSION_DATA,
    )
    assert prepared.kind == "model" and isinstance(prepared.x, dict)
    scored = prepared.program.log_joint(prepared.x, {**draw, **prepared.observations})

    by_hand = (
        D.Normal(0.0, 10.0).log_prob(draw["alpha"])
        + D.Normal(0.0, 10.0).log_prob(draw["beta"])
        + D.HalfNormal(5.0).log_prob(draw["sigma"])
        + D.Normal(draw["alpha"] + draw["beta"] * x, draw["sigma"]).log_prob(y).sum()
    )
    # model programs compute in float64: checked at the float32 of `by_hand`
    torch.testing.assert_close(ours.reshape(()).float(), by_hand)
    torch.testing.assert_close(scored.reshape(()).float(), by_hand)


def test_dsl_fits_a_program_through_the_run_layer(tmp_path: Path) -> None:
    models = dsl.load(REGRESSION)
    fitted = models.fit("linear_regression", method="prior", steps=5, data=REGRESSION_DATA)
    assert fitted.run.method == "prior" and fitted.run.steps == 5
    assert fitted.summary == fitted.run.to_json()
    assert set(fitted.results.groups["prior"]) == {"alpha", "beta", "sigma"}
