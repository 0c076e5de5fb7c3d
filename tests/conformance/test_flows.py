"""`~ Flow`: quivers' conditional normalizing flow as a kernel.

Read from quivers (the 0.25.2 wheel): `_make_continuous_morphism`
(`dsl/compiler/declarations.py`) builds `ConditionalFlow(domain, codomain, n_layers,
hidden_dim)` (defaults 4 and 64) for `~ Flow`, outside its family registry;
`continuous/flows.py` refuses a codomain of fewer than 2 numbers, stacks affine coupling
layers that alternate even and odd halves, each with its own network (an embedding of a
finite input, then Linear -> tanh -> Linear -> tanh -> Linear, the log-scale clamped to
[-5, 5]), and scores by the change of variables from a standard Normal. The program is
our own, parsed by quivers' grammars; its parameter count is quivers' architecture's,
counted by hand below.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import pytest
import torch

from qvr_core.check import check
from qvr_core.dsl import loads
from qvr_core.runtime.flows import Flow
from tests.conformance import oracle

SOURCE = """object Context : FinSet 10
object Output : Real 4
object Reading : Real 3

morphism flow : Context -> Output [role=kernel, n_layers=6, hidden_dim=32] ~ Flow
morphism warp : Reading -> Output [role=kernel] ~ Flow

define f = flow
define g = warp

export f
export g
"""


def _quivers_parameters(rows: int, features: int, width: int, layers: int, hidden: int) -> int:
    """ConditionalFlow's parameters: per layer an embedding (finite input) and the net."""
    total = 0
    for i in range(layers):
        kept = (width + 1) // 2 if i % 2 == 0 else width // 2
        moved = width - kept
        condition = hidden if rows else features
        total += rows * hidden
        total += (condition + kept) * hidden + hidden
        total += hidden * hidden + hidden
        total += hidden * 2 * moved + 2 * moved
    return total


def _flow(name: str) -> Flow:
    compiled = loads(SOURCE)[name]
    found = [m for m in compiled.modules() if isinstance(m, Flow)]
    assert len(found) == 1
    return found[0]


def test_quivers_grammars_parse_it() -> None:
    oracle.require_head(SOURCE)


def test_it_is_typed_with_its_options() -> None:
    module = check(SOURCE)
    assert [d for d in module.diagnostics if d.is_error or d.code == "QVR011"] == []
    flow = module.morphisms["flow"]
    assert (flow.family, dict(flow.family_options), flow.hidden_dim) == (
        "Flow",
        {"n_layers": 6},
        32,
    )
    assert dict(module.morphisms["warp"].family_options) == {"n_layers": 4}  # quivers' default


def test_it_has_quivers_architecture() -> None:
    assert sum(p.numel() for p in _flow("f").parameters()) == _quivers_parameters(10, 0, 4, 6, 32)
    assert sum(p.numel() for p in _flow("g").parameters()) == _quivers_parameters(0, 3, 4, 4, 64)


@pytest.fixture
def float64() -> Iterator[None]:
    """The Jacobian's determinant compared in double precision."""
    before = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(before)


@pytest.mark.parametrize("name", ["f", "g"])
@pytest.mark.usefixtures("float64")
def test_the_density_is_the_change_of_variables(name: str) -> None:
    """log p(y | x) = log N(z; 0, I) - log |det dT/dz| at y = T(z), with the Jacobian of
    the forward map taken by autograd: an independent check of the inverse and its
    log-determinant."""
    torch.manual_seed(0)
    flow = _flow(name)
    finite = torch.tensor([3])
    x = finite if name == "f" else torch.tensor([[0.5, -1.0, 2.0]], dtype=torch.float64)
    z = torch.randn(4, dtype=torch.float64)

    def forward(base: torch.Tensor) -> torch.Tensor:
        return flow._push(x, base.unsqueeze(0))[0]

    y = forward(z)
    jacobian = torch.autograd.functional.jacobian(forward, z)
    log_base = -0.5 * float(z @ z) - 2.0 * math.log(2 * math.pi)
    expected = log_base - float(torch.linalg.slogdet(jacobian).logabsdet)
    score = flow.log_prob(x, y.detach().unsqueeze(0))[0]
    assert score.item() == pytest.approx(expected, abs=1e-9)


def test_draws_and_scores_batch() -> None:
    flow = _flow("f")
    x = torch.tensor([[0, 1, 2], [3, 4, 5]])
    y = flow.rsample(x)
    assert y.shape == (2, 3, 4)
    scores = flow.log_prob(x, y)
    assert scores.shape == (2, 3) and bool(torch.isfinite(scores).all())
    assert flow.mean(x).shape == (2, 3, 4)


def test_quivers_refusals_are_errors() -> None:
    narrow = SOURCE.replace("object Output : Real 4", "object Output : Real 1")
    assert any(d.code == "QVR302" and "at least 2" in d.message for d in check(narrow).errors)
    misplaced = SOURCE.replace("hidden_dim=32]", "hidden_dim=32, param_source=linear]")
    assert any(d.code == "QVR306" for d in check(misplaced).errors)
