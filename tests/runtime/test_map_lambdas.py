"""`map(xs, x -> body)` runs from the resolved model: in the log joint (with its
gradient), under prior draws, SVI and NUTS, a one-entry plate laying out no axis; the
exports refuse it at the expression (QVR701). What quivers computes is pinned in
tests/conformance/test_map_lambdas.py."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
from torch import distributions as D

from qvr_core.check import check
from qvr_core.export import TARGETS, export_program
from qvr_core.runs.run import run_program
from qvr_core.runtime.model import compile_model

PROGRAM = """object Class : FinSet 3
object One : FinSet 1
object Row : FinSet 4

program m : Row -> Row
    sample a <- Normal(0.0, 1.0)
    sample mu : Class <- Normal(0.0, 1.0)
    sample w : One <- Normal(0.0, 1.0)
    let t = map(mu, x -> x * a + 1.0)
    let u = map(w, v -> v * 2.0)
    let total = sum(t) + sum(u)
    observe y : Row <- Normal(total, 1.0)
    return RETURNED

export m
"""

F64 = torch.float64
A = torch.tensor(0.7, dtype=F64)
MU = torch.tensor([0.2, -0.4, 1.1], dtype=F64)
W = torch.tensor([0.5], dtype=F64).reshape(())
Y = torch.tensor([0.3, -0.2, 1.0, 0.6], dtype=F64)
LATENTS = {"a": A, "mu": MU, "w": W}


def _source(returned: str = "t") -> str:
    return PROGRAM.replace("RETURNED", returned)


def test_each_entry_is_the_body_at_that_entry() -> None:
    run = compile_model(check(_source()), "m").run({}, {"y": Y}, LATENTS)
    torch.testing.assert_close(run.output, MU * A + 1.0)


def test_a_one_entry_plate_lays_out_no_axis() -> None:
    run = compile_model(check(_source("u")), "m").run({}, {"y": Y}, LATENTS)
    assert run.output.shape == W.shape
    torch.testing.assert_close(run.output, W * 2.0)


def test_the_log_joint_and_its_gradient_read_the_mapped_values() -> None:
    mu = MU.clone().requires_grad_(True)
    got = compile_model(check(_source()), "m").log_joint({}, {**LATENTS, "mu": mu, "y": Y})
    total = (MU * A + 1.0).sum() + 2.0 * W
    want = (
        D.Normal(0.0, 1.0).log_prob(A)
        + D.Normal(0.0, 1.0).log_prob(MU).sum()
        + D.Normal(0.0, 1.0).log_prob(W)
        + D.Normal(total, 1.0).log_prob(Y).sum()
    )
    torch.testing.assert_close(got.reshape(()), want)
    got.sum().backward()
    assert mu.grad is not None
    # d/dmu_k of the likelihood is a * sum_n (y_n - total); of the prior, -mu_k
    torch.testing.assert_close(mu.grad, A * (Y - total).sum() - MU)


@pytest.mark.parametrize("method", ["prior", "svi", "nuts"])
def test_every_method_runs_it(method: str, tmp_path: Path) -> None:
    data = tmp_path / "y.json"
    data.write_text(json.dumps({"y": Y.tolist()}), encoding="utf-8")
    steps = {"prior": 5, "svi": 5, "nuts": 12}[method]
    summary = run_program(_source(), method=method, steps=steps, data=str(data), chains=1)
    assert summary.final_loss is not None and math.isfinite(summary.final_loss)


def test_the_exports_refuse_it_at_the_expression() -> None:
    source = _source()
    module = check(source)
    at = source.index("map(mu")
    for target in TARGETS.values():
        exported = export_program(module, target, "m")
        assert exported.text is None
        assert exported.diagnostics[0].code == "QVR701", target.name
        assert exported.diagnostics[0].span.start == at
        assert "map" in exported.diagnostics[0].message
