"""`role=discretize, bins=N` over a bounded space `Real 1 {low=a, high=b}`, as quivers
0.25.2 builds it.

Read from quivers (the 0.25.2 wheel): `_compile_discretize_role`
(`dsl/compiler/declarations.py`) refuses a domain that is no continuous space and a
missing `bins`, and builds `Discretize(space, n_bins=bins)` (`continuous/boundaries.py`),
which refuses an unbounded or many-dimensional space; its centres are
`linspace(low, high, bins)` and an input x falls in bin k with probability
softmax_k(-(x - c_k)^2 / 0.1). `_resolve_continuous_constructor`
(`dsl/compiler/resolution.py`) reads `{low=, high=}` as numbers with high above low.
The program is our own, parsed by quivers' grammars.
"""

from __future__ import annotations

import math

import pytest
import torch

from qvr_core.check import check
from qvr_core.dsl import loads
from qvr_core.runtime.morphisms import Morphism
from tests.conformance import oracle

SOURCE = """object Score : Real 1 {low=-1.0, high=3.0}
object Bin : FinSet 5
object Item : FinSet 4

morphism place : Item -> Score [role=kernel] ~ Normal
morphism grade : Score -> Bin [role=discretize, bins=5]

define graded = place >> grade
define binned = grade

export graded
export binned
"""


def _quivers_bin_probabilities(x: float, low: float, high: float, bins: int) -> list[float]:
    """quivers' soft assignment, written out in plain Python."""
    centres = [low + (high - low) * k / (bins - 1) for k in range(bins)]
    weights = [math.exp(-((x - c) ** 2) / 0.1) for c in centres]
    total = sum(weights)
    return [w / total for w in weights]


def test_quivers_grammars_parse_it() -> None:
    oracle.require_head(SOURCE)


def test_it_is_typed_with_its_bounds_and_bins() -> None:
    module = check(SOURCE)
    assert [d for d in module.diagnostics if d.is_error or d.code == "QVR011"] == []
    assert module.objects["Score"].interval == (-1.0, 3.0)
    assert module.objects["Score"].describe() == "Real 1 {low=-1.0, high=3.0}"
    grade = module.morphisms["grade"]
    assert (grade.role, grade.bins, grade.type.label) == ("discretize", 5, "Score -> Bin")
    graded = module.lets["graded"].type
    assert graded is not None and graded.label == "Item -> Bin"


@pytest.mark.parametrize("x", [-1.0, -0.2, 0.0, 1.1, 2.9, 3.0, 5.0])
def test_bins_are_quivers_soft_assignment(x: float) -> None:
    binned = loads(SOURCE)["binned"]
    assert isinstance(binned, Morphism)
    want = torch.tensor(_quivers_bin_probabilities(x, -1.0, 3.0, 5), dtype=torch.float64)
    inputs = torch.full((5, 1), x, dtype=torch.float64)
    got = binned.log_prob(inputs, torch.arange(5)).exp()
    assert torch.allclose(got.double(), want, atol=1e-6)
    nearest = min(range(5), key=lambda k: abs(x - (-1.0 + k)))
    assert int(binned.mean(inputs[:1])) == nearest


def test_draws_are_bins_and_the_composite_runs() -> None:
    graded = loads(SOURCE)["graded"]
    assert isinstance(graded, Morphism)
    draws = graded.rsample(torch.arange(4).repeat(25))
    assert draws.shape == (100,) and bool(((draws >= 0) & (draws < 5)).all())


@pytest.mark.parametrize(
    ("change", "code", "words"),
    [
        # Discretize: "requires a bounded Euclidean domain"
        (("Real 1 {low=-1.0, high=3.0}", "Real 1"), "QVR307", "without bounds"),
        # "supports 1-d spaces only"
        (("Real 1 {low=-1.0, high=3.0}", "Real 2 {low=-1.0, high=3.0}"), "QVR307", "R^2"),
        # "domain must be a ContinuousSpace"
        (("grade : Score -> Bin", "grade : Item -> Bin"), "QVR307", "FinSet 4"),
        # "required option ``bins`` is missing"
        ((", bins=5]", "]"), "QVR304", "bins=N"),
        # quivers makes 5 bins whatever the codomain says; qvr will not type a lie
        (("object Bin : FinSet 5", "object Bin : FinSet 4"), "QVR307", "makes 5 bins"),
        # "high=... must be strictly greater than low=..."
        (("{low=-1.0, high=3.0}", "{low=3.0, high=-1.0}"), "QVR304", "greater than"),
    ],
)
def test_what_quivers_refuses_is_an_error(change: tuple[str, str], code: str, words: str) -> None:
    text = SOURCE.replace(*change)
    assert text != SOURCE
    found = [d for d in check(text).errors if d.code == code]
    assert found and words in found[0].message, [d.message for d in check(text).errors]
