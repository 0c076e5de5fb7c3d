"""A program's call of a `define` runs as quivers means it: the callee's draw is a site
of the program under its label, its weight a term of the joint, its value the call's."""

from __future__ import annotations

import json
from pathlib import Path

import torch
from torch import distributions as D

from qvr_core.check import check
from qvr_core.runs.run import run_program
from qvr_core.runtime.model import compile_model
from tests.check.test_call_steps import SOURCE


def test_the_log_joint_holds_the_callee_s_draw_and_weight() -> None:
    program = compile_model(check(SOURCE), "prog")
    assert program.site_names == ("a", "noise", "y")
    assert program.observed_names == ("y",)
    a, noise = torch.tensor(0.3), torch.tensor(2.1)
    y = torch.tensor([1.9, 2.4, 2.0, 2.2])
    got = program.log_joint({}, {"a": a, "noise": noise, "y": y})
    want = (
        D.Normal(0.0, 1.0).log_prob(a)
        + D.Normal(a + 2.0, 0.1).log_prob(noise)  # shift(a, 2.0) put in place
        + (-0.25 * noise * noise)  # score.add(weight(...))
        + D.Normal(noise, 0.5).log_prob(y).sum()  # c is the returned draw
    )
    torch.testing.assert_close(got.double(), want.reshape(1).double(), rtol=1e-5, atol=1e-5)


def test_a_run_draws_the_shapes_the_checker_states() -> None:
    checked = check(SOURCE)
    program = compile_model(checked, "prog")
    run = program.run({}, {})
    model = checked.models["prog"]
    for site in model.sites:
        assert site.type is not None
        assert tuple(run.values[site.name].shape) == site.type.shape, site.name
    torch.testing.assert_close(run.output, run.values["noise"])


def test_prior_nuts_and_svi_finish(tmp_path: Path) -> None:
    data = tmp_path / "data.json"
    data.write_text(json.dumps({"y": [2.9, 3.1, 3.0, 3.2]}))
    for method, steps in (("prior", 20), ("svi", 30), ("nuts", 20)):
        summary = run_program(SOURCE, method=method, steps=steps, chains=1, data=str(data))
        drawn = summary.sites if method == "prior" else summary.posterior.sites
        assert drawn is not None and "noise" in drawn, method
