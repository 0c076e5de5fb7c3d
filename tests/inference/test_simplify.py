"""The recorded potential with its constants folded and identities removed computes what
the recording computes, with fewer operations, for every example model it can record."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.func import grad_and_value, vmap
from torch.fx import GraphModule
from torch.fx.experimental.proxy_tensor import make_fx

from qvr_core.inference.mcmc import ProgramPotential, chain_layout, initial_values
from qvr_core.inference.simplify import simplify
from qvr_core.plan.run_arguments import RunArguments
from qvr_core.runs.prepare import prepare

MODELS = Path(__file__).resolve().parents[2] / "examples" / "models"
# The example models that can be recorded (the logistic regression, the mixture and the
# HMM read a value into Python, so they are never recorded and run eagerly).
EXAMPLES = ["eight_schools_noncentered", "eight_schools_centered", "linear_regression"]

pytestmark = pytest.mark.timeout(240)


def _operations(module: GraphModule) -> int:
    return sum(1 for n in module.graph.nodes if n.op == "call_function")


def _recorded(name: str) -> tuple[GraphModule, torch.Tensor]:
    source = (MODELS / f"{name}.qvr").read_text()
    data = MODELS / f"{name.removesuffix('_noncentered').removesuffix('_centered')}.json"
    run = prepare(source, RunArguments(method="nuts"), data=str(data))
    layout = chain_layout(run.program, run.x, run.observations)
    eager = ProgramPotential(run.program, run.x, run.observations, layout)
    torch.manual_seed(0)
    start = layout.pack(initial_values(run.program, run.x, dict(run.observations)))
    starts = torch.stack([start, start + 0.1, start - 0.1])

    def one(z: torch.Tensor) -> torch.Tensor:
        return eager.log_density(z)

    module = make_fx(vmap(grad_and_value(one)))(starts.clone())
    return module, starts


@pytest.fixture(scope="module", params=EXAMPLES)
def recorded(request: pytest.FixtureRequest) -> tuple[GraphModule, GraphModule, torch.Tensor]:
    module, starts = _recorded(request.param)
    return module, simplify(copy.deepcopy(module), starts.clone()), starts


def test_the_simplified_potential_equals_the_recorded_one_with_fewer_operations(
    recorded: tuple[GraphModule, GraphModule, torch.Tensor],
) -> None:
    module, simpler, starts = recorded
    assert _operations(simpler) < _operations(module)
    g = torch.Generator().manual_seed(3)
    for scale in (0.0, 0.5, 2.0):
        points = starts + scale * torch.randn(starts.shape, generator=g, dtype=starts.dtype)
        for a, b in zip(module(points), simpler(points), strict=True):
            torch.testing.assert_close(b, a, rtol=1e-12, atol=1e-12, equal_nan=True)


def test_eight_schools_loses_more_than_a_third_of_its_operations() -> None:
    module, starts = _recorded("eight_schools_noncentered")
    before = _operations(module)
    assert _operations(simplify(module, starts.clone())) < 2 * before // 3


def _graph(function: object, example: torch.Tensor) -> GraphModule:
    return make_fx(function)(example.clone())  # type: ignore[arg-type]  # make_fx takes any callable


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(-5, 5), min_size=3, max_size=3), st.floats(0.5, 3.0))
def test_each_rule_keeps_the_value(values: list[float], alpha: float) -> None:
    """Identities go, and what only looks like one stays: `add(0, x, alpha)` is alpha * x."""
    x = torch.tensor(values, dtype=torch.float64)
    zeros = torch.zeros(3, dtype=torch.float64)

    def f(z: torch.Tensor) -> torch.Tensor:
        a = torch.ops.aten.add.Tensor(z, 0.0)
        b = torch.ops.aten.pow.Tensor_Scalar(a, 1.0)
        c = b.unsqueeze(-1).sum([1])
        d = torch.ops.aten.add.Tensor(zeros, c, alpha=alpha)
        e = torch.ops.aten.mul.Tensor(torch.ones(3, dtype=torch.float64), d)
        return e.view(3, 1).expand(3, 2) * (torch.log(torch.tensor(2.0)) + 1)

    module = _graph(f, x)
    simpler = simplify(copy.deepcopy(module), x.clone())
    torch.testing.assert_close(simpler(x), f(x), rtol=1e-12, atol=1e-12)
    assert _operations(simpler) < _operations(module)
    targets = {n.target for n in simpler.graph.nodes if n.op == "call_function"}
    assert torch.ops.aten.pow.Tensor_Scalar not in targets
    assert torch.ops.aten.log.default not in targets  # a constant, computed once
    if alpha != 1.0:  # alpha * x is not x
        assert any(
            n.target is torch.ops.aten.add.Tensor and n.kwargs.get("alpha") == alpha
            for n in simpler.graph.nodes
        )
