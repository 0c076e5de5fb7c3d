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
            # bit for bit: NUTS turns a last bit into other draws, and the recorded
            # potential is held to draw what the eager one draws (tests/inference/test_lockstep)
            torch.testing.assert_close(b, a, rtol=0, atol=0, equal_nan=True)


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


@settings(max_examples=30, deadline=None)
@given(
    st.lists(st.floats(-5, 5), min_size=4, max_size=4),
    st.floats(0.5, 3.0),
    st.floats(-2.0, 2.0),
)
def test_runs_of_operations_by_constants_join_where_the_bits_stay(
    values: list[float], scale: float, shift: float
) -> None:
    """A Normal's log density `-(x * x) / c - m - k` and the chain rule's `-(c * (2 * x))`
    are runs of operations by constants. Each negation goes into a product or quotient by
    a constant, and a product by a power of two into another (`x * (-2c)`): the same
    floating-point result, bit for bit. Sums by two constants stay two (they would round
    otherwise), a run whose middle is used twice is not joined across it, and `c / x` (not
    by a constant) stays a division."""
    x = torch.tensor(values, dtype=torch.float64)
    c = torch.tensor([scale, 1.0, 2.0, scale], dtype=torch.float64)

    def f(z: torch.Tensor) -> tuple[torch.Tensor, ...]:
        a = torch.ops.aten
        density = a.sub.Tensor(
            a.sub.Tensor(a.div.Tensor(a.neg.default(z * z), 2 * scale), shift), 0.9
        )
        chain = a.neg.default(a.mul.Tensor(c, a.mul.Scalar(z, 2.0)))
        middle = a.add.Tensor(z, shift)  # used twice: each use starts a run of its own
        twice = a.mul.Tensor(a.sub.Tensor(middle, 1.0), 3.0) + a.neg.default(
            a.div.Tensor(middle, c)
        )
        flipped = a.neg.default(a.add.Tensor(z, 2.0))  # (-2) - z
        inverse = a.div.Tensor(scale, a.add.Tensor(z, 10.0))
        return density, chain, twice, flipped, inverse

    module = _graph(f, x)
    simpler = simplify(copy.deepcopy(module), x.clone())
    for got, want in zip(simpler(x), f(x), strict=True):
        torch.testing.assert_close(got, want, rtol=0, atol=0)
    targets = [n.target for n in simpler.graph.nodes if n.op == "call_function"]
    assert torch.ops.aten.neg.default not in targets  # each folded into its run
    # density 5 -> 4 (the negation into the division), chain 3 -> 1, the twice-used
    # middle's runs 1 + 2 and 2 -> 1, flipped 2 -> 1, inverse 2 -> 2; fewer where a
    # constant is neutral (a shift of 0 is no operation at all)
    assert _operations(module) == 18 and _operations(simpler) <= 13


def test_a_gradient_put_together_from_slices_is_one_cat() -> None:
    """autograd puts each latent's gradient into the position by a `slice_backward` and
    adds them: pieces that lie side by side over the whole position are one `cat`; pieces
    that leave a gap, or overlap, stay as they are."""
    x = torch.arange(10, dtype=torch.float64).reshape(2, 5)

    def f(z: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        a = torch.ops.aten
        pieces = [
            a.slice_backward.default(z[:, 2:5].exp(), [2, 5], 1, 2, 5, 1),
            a.slice_backward.default(z[:, 0:1] * 3, [2, 5], 1, 0, 1, 1),
            a.slice_backward.default(z[:, 1:2] + 1, [2, 5], 1, 1, 2, 1),
        ]
        whole = pieces[0] + pieces[1] + pieces[2]
        gap = a.slice_backward.default(z[:, 0:2], [2, 5], 1, 0, 2, 1) + a.slice_backward.default(
            z[:, 3:5], [2, 5], 1, 3, 5, 1
        )
        return whole, gap

    module = _graph(f, x)
    simpler = simplify(copy.deepcopy(module), x.clone())
    for got, want in zip(simpler(x), f(x), strict=True):
        torch.testing.assert_close(got, want, rtol=0, atol=0)
    targets = [n.target for n in simpler.graph.nodes if n.op == "call_function"]
    assert targets.count(torch.ops.aten.cat.default) == 1
    assert targets.count(torch.ops.aten.slice_backward.default) == 2  # the gap's two


def test_a_product_and_a_quotient_by_a_power_of_two_join_in_either_order() -> None:
    """`x * c / 4`, `x * 0.25 / c`, `x / c * 8` and `x / 0.5 * c`: each one operation by
    `c` over the power of two, the same bits for any x (the power of two scales exactly)."""
    a = torch.ops.aten
    x = torch.randn(1000, dtype=torch.float64, generator=torch.Generator().manual_seed(1)) * 1e3
    c = 0.7137

    def f(z: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return (
            a.div.Tensor(a.mul.Tensor(z, c), 4.0),
            a.div.Tensor(a.mul.Tensor(z, 0.25), c),
            a.mul.Tensor(a.div.Tensor(z, c), 8.0),
            a.mul.Tensor(a.div.Tensor(z, 0.5), c),
        )

    module = _graph(f, x)
    simpler = simplify(copy.deepcopy(module), x.clone())
    for got, want in zip(simpler(x), f(x), strict=True):
        torch.testing.assert_close(got, want, rtol=0, atol=0)
    assert (_operations(module), _operations(simpler)) == (8, 4)
