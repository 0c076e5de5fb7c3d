"""`fold(xs, init, acc -> x -> body)` runs from the resolved model as a loop carrying its
accumulator: in the log joint with its gradient (to init and to xs), over draws batched
by vmap as the samplers batch chains, under prior draws, SVI and NUTS, a one-entry plate
laying out no axis; the exports refuse it at the expression (QVR701). What quivers
computes is pinned in tests/conformance/test_fold_lambdas.py."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
from torch import distributions as D

from qvr_core.check import check
from qvr_core.check.terms import Fold, subterms
from qvr_core.export import TARGETS, export_program
from qvr_core.runs.run import run_program
from qvr_core.runtime.model import compile_model

#: An AR(1) state per series, its last value the mean of the series' next observation.
PROGRAM = """object Time : FinSet 5
object Series : FinSet 3
object One : FinSet 1

program ar : Series -> Series
    sample phi <- Normal(0.0, 0.5)
    sample eps : Time * Series <- Normal(0.0, 1.0)
    sample s0 : Series <- Normal(0.0, 1.0)
    sample w : One <- Normal(0.0, 1.0)
    let step = acc -> e -> phi * acc + e
    let level = fold(eps, s0, step)
    let twice = fold(eps, s0, a -> e -> a * a * 0.1 + a + e)
    let single = fold(w, 1.0, a -> v -> a * v)
    observe y : Series <- Normal(level, 1.0)
    return RETURNED

export ar
"""

F64 = torch.float64
PHI = torch.tensor(0.8, dtype=F64)
EPS = torch.linspace(-1.0, 1.0, 15, dtype=F64).reshape(5, 3)
S0 = torch.tensor([0.2, -0.4, 1.1], dtype=F64)
W = torch.tensor(0.5, dtype=F64)
Y = torch.tensor([0.3, -0.2, 1.0], dtype=F64)
LATENTS = {"phi": PHI, "eps": EPS, "s0": S0, "w": W}


def _source(returned: str = "level") -> str:
    return PROGRAM.replace("RETURNED", returned)


def _level(phi: torch.Tensor, eps: torch.Tensor, s0: torch.Tensor) -> torch.Tensor:
    acc = s0
    for k in range(eps.shape[0]):
        acc = phi * acc + eps[k]
    return acc


def test_each_step_carries_the_accumulator() -> None:
    run = compile_model(check(_source()), "ar").run({}, {"y": Y}, LATENTS)
    torch.testing.assert_close(run.output, _level(PHI, EPS, S0))


def test_an_accumulator_read_three_times_is_evaluated_once_per_entry() -> None:
    """The term is one loop, not the body copied per entry: its size does not grow with
    the number of entries or the reads of the accumulator."""
    checked = check(_source("twice"))
    term = checked.models["ar"].lets["twice"].term
    assert isinstance(term, Fold) and term.size == 5
    assert sum(isinstance(t, Fold) for t in subterms(term)) == 1
    run = compile_model(checked, "ar").run({}, {"y": Y}, LATENTS)
    acc = S0
    for k in range(5):
        acc = acc * acc * 0.1 + acc + EPS[k]
    torch.testing.assert_close(run.output, acc)


def test_a_one_entry_plate_lays_out_no_axis() -> None:
    run = compile_model(check(_source("single")), "ar").run({}, {"y": Y}, LATENTS)
    assert run.output.shape == ()
    torch.testing.assert_close(run.output, W)


def test_the_gradient_reaches_init_and_the_collection() -> None:
    eps = EPS.clone().requires_grad_(True)
    s0 = S0.clone().requires_grad_(True)
    model = compile_model(check(_source()), "ar")
    got = model.log_joint({}, {**LATENTS, "eps": eps, "s0": s0, "y": Y})
    level = _level(PHI, EPS, S0)
    want = (
        D.Normal(torch.tensor(0.0, dtype=F64), 0.5).log_prob(PHI)
        + D.Normal(0.0, 1.0).log_prob(EPS).sum()
        + D.Normal(0.0, 1.0).log_prob(S0).sum()
        + D.Normal(0.0, 1.0).log_prob(W)
        + D.Normal(level, 1.0).log_prob(Y).sum()
    )
    torch.testing.assert_close(got.reshape(()), want)
    got.sum().backward()
    assert s0.grad is not None and eps.grad is not None
    resid = Y - level  # d/dlevel of the likelihood
    # level = phi^5 s0 + sum_k phi^(4 - k) eps[k]
    torch.testing.assert_close(s0.grad, PHI**5 * resid - S0)
    powers = PHI ** torch.arange(4, -1, -1, dtype=F64)
    torch.testing.assert_close(eps.grad, powers[:, None] * resid[None, :] - EPS)


def test_draws_batched_by_vmap_are_each_draws_fold() -> None:
    model = compile_model(check(_source()), "ar")
    gen = torch.Generator().manual_seed(3)
    phis = torch.randn(4, generator=gen, dtype=F64)
    epss = torch.randn(4, 5, 3, generator=gen, dtype=F64)
    s0s = torch.randn(4, 3, generator=gen, dtype=F64)

    def joint(phi: torch.Tensor, eps: torch.Tensor, s0: torch.Tensor) -> torch.Tensor:
        values = {"phi": phi, "eps": eps, "s0": s0, "w": W, "y": Y}
        return model.log_joint({}, values).reshape(())

    batched = torch.func.vmap(joint)(phis, epss, s0s)
    one_by_one = torch.stack([joint(phis[i], epss[i], s0s[i]) for i in range(4)])
    torch.testing.assert_close(batched, one_by_one, rtol=0, atol=1e-12)


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
    at = source.index("fold(eps, s0, step)")
    for target in TARGETS.values():
        exported = export_program(module, target, "ar")
        assert exported.text is None
        assert exported.diagnostics[0].code == "QVR701", target.name
        assert exported.diagnostics[0].span.start == at
        assert "fold" in exported.diagnostics[0].message
