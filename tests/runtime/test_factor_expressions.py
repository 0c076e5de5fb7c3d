"""A `factor` table runs from the resolved model: in the log joint, under prior draws,
SVI and NUTS, with a one-entry plate laying out no axis; the exports refuse it at the
expression (QVR701). What quivers computes is pinned in
tests/conformance/test_factor_expressions.py."""

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

TABLE = """object Class : FinSet 3
object One : FinSet 1
object Row : FinSet 4

program m : Row -> Row
    sample a <- Normal(0.0, 1.0)
    sample mu : Class <- Normal(0.0, 1.0)
    let t = factor c : Class, o : One in { body }
    let total = sum(t)
    observe y : Row <- Normal(total, 1.0)
    return t

export m
"""

F64 = torch.float64
A = torch.tensor(0.7, dtype=F64)
MU = torch.tensor([0.2, -0.4, 1.1], dtype=F64)
Y = torch.tensor([0.3, -0.2, 1.0, 0.6], dtype=F64)


def _source(body: str = "mu[c] * a + o") -> str:
    return TABLE.replace("{ body }", body)


def test_a_one_entry_binder_lays_out_no_axis() -> None:
    run = compile_model(check(_source()), "m").run({}, {"y": Y}, {"a": A, "mu": MU})
    assert run.output.shape == (3,)
    torch.testing.assert_close(run.output, MU * A)


def test_the_log_joint_reads_the_table() -> None:
    got = compile_model(check(_source()), "m").log_joint({}, {"a": A, "mu": MU, "y": Y})
    want = (
        D.Normal(0.0, 1.0).log_prob(A)
        + D.Normal(0.0, 1.0).log_prob(MU).sum()
        + D.Normal((MU * A).sum(), 1.0).log_prob(Y).sum()
    )
    torch.testing.assert_close(got.reshape(()), want)


def test_a_gradient_flows_through_the_entries() -> None:
    mu = MU.clone().requires_grad_(True)
    model = compile_model(check(_source()), "m")
    model.log_joint({}, {"a": A, "mu": mu, "y": Y}).sum().backward()
    assert mu.grad is not None and torch.isfinite(mu.grad).all()
    # d/dmu_k of the likelihood is a * sum_n (y_n - total); of the prior, -mu_k
    total = (MU * A).sum()
    want = A * (Y - total).sum() - MU
    torch.testing.assert_close(mu.grad, want)


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
    at = source.index("factor c")
    for target in TARGETS.values():
        exported = export_program(module, target, "m")
        assert exported.text is None
        assert [d.code for d in exported.diagnostics] == ["QVR701"], target.name
        assert exported.diagnostics[0].span.start == at
        assert "factor" in exported.diagnostics[0].message
