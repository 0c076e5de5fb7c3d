"""A kernel without a family between finite sets is a learned table, and a morphism
without a role is a kernel, as in quivers 0.25.2.

Read from quivers (the 0.25.2 wheel, `dsl/compiler/declarations.py`):
`_resolve_morphism_role` makes an absent role `kernel`; `_compile_kernel_role` without
a family resolves both sides as finite sets (a space is refused: "expected a discrete
object here") and builds a `StochasticMorphism` (`stochastic/morphisms.py`): free logits
of shape (|dom|, |cod|) through a softmax over the codomain, so each row is a
categorical distribution, whatever the file's composition rule (its algebra is MARKOV).
quivers starts the logits at N(0, 0.1^2); qvr starts them at 0 (uniform rows), as it
starts a latent. The programs are our own, parsed by quivers' grammars.
"""

from __future__ import annotations

import math

import torch

from qvr_core.check import check
from qvr_core.dsl import loads
from qvr_core.ide.hover import hover_at
from qvr_core.runtime.morphisms import Morphism
from tests.conformance import oracle

SOURCE = """object State : FinSet 3
object Obs : FinSet 4
object Y : FinSet 2
object Z : FinSet 3

morphism trans : State -> State
morphism emit : State -> Obs [role=kernel]
morphism pair : State -> Y * Z

define step = trans >> emit
define both = pair
define table = emit

export step
export both
export table
"""


def test_quivers_grammars_parse_it() -> None:
    oracle.require_head(SOURCE)


def test_each_is_a_kernel_without_a_family() -> None:
    module = check(SOURCE)
    assert [d for d in module.diagnostics if d.is_error or d.code == "QVR011"] == []
    for name in ("trans", "emit", "pair"):
        info = module.morphisms[name]
        assert (info.role, info.family) == ("kernel", None)


def test_rows_are_distributions_that_start_uniform() -> None:
    compiled = loads(SOURCE)
    step = compiled["step"]
    assert isinstance(step, Morphism)
    states = torch.arange(3)
    for obs in range(4):
        # uniform rows: State -> State -> Obs gives each observation 1/4
        scores = step.log_prob(states, torch.full((3,), obs))
        assert torch.allclose(scores, torch.full((3,), -math.log(4)))


def test_a_product_codomain_is_one_categorical_over_its_values() -> None:
    both = loads(SOURCE)["both"]
    assert isinstance(both, Morphism)
    values = torch.tensor([[y, z] for y in range(2) for z in range(3)])
    with torch.no_grad():
        for p in both.parameters():
            p.copy_(torch.randn(p.shape, generator=torch.Generator().manual_seed(0)))
    for state in range(3):
        x = torch.full((6,), state)
        total = both.log_prob(x, values).exp().sum()
        assert torch.allclose(total, torch.tensor(1.0))
    draws = both.rsample(torch.zeros(50, dtype=torch.long))
    assert draws.shape == (50, 2)
    assert bool(((draws[:, 0] < 2) & (draws[:, 1] < 3)).all()) and bool((draws >= 0).all())


def test_fitting_a_table_reaches_the_frequencies() -> None:
    """The maximum-likelihood table is the data's frequencies, row by row."""
    table = loads(SOURCE)["table"]
    assert isinstance(table, Morphism)
    x = torch.tensor([0, 0, 0, 0, 1, 1, 2, 2])
    y = torch.tensor([1, 1, 1, 3, 0, 2, 3, 3])
    optimiser = torch.optim.LBFGS(table.parameters(), max_iter=200, line_search_fn="strong_wolfe")

    def loss() -> torch.Tensor:
        optimiser.zero_grad()
        value = -table.log_prob(x, y).sum()
        value.backward()
        return value

    optimiser.step(loss)
    fitted = table.log_prob(torch.tensor([0, 0, 1, 2]), torch.tensor([1, 3, 0, 3])).exp()
    assert torch.allclose(fitted, torch.tensor([0.75, 0.25, 0.5, 1.0]), atol=2e-3)


def test_hover_says_what_it_is() -> None:
    module = check(SOURCE)
    found = hover_at(module, SOURCE.index("emit :"))
    assert found is not None and "a table kernel" in found.plain


def test_a_space_side_needs_a_family_or_a_role() -> None:
    space = SOURCE.replace("object Obs : FinSet 4", "object Obs : Real 4")
    codes = {d.code for d in check(space).errors}
    assert "QVR308" in codes  # emit: role=kernel, no family, a continuous codomain
    without_role = space.replace("emit : State -> Obs [role=kernel]", "emit : State -> Obs")
    assert "QVR301" in {d.code for d in check(without_role).errors}


def test_the_older_kernel_declaration_is_the_same_table() -> None:
    older = SOURCE.replace(
        "morphism emit : State -> Obs [role=kernel]", "kernel emit : State -> Obs"
    )
    module = check(older)
    assert not module.errors
    assert (module.morphisms["emit"].role, module.morphisms["emit"].family) == ("kernel", None)


def test_a_latent_from_a_product_is_a_kernel_over_its_rows() -> None:
    """Without a composition rule a `role=latent` morphism from a product of finite sets
    is qvr's kernel, its rows the domain's values in row-major order (quivers: a tensor
    with an axis per factor, under its undeclared rule)."""
    source = """object X : FinSet 2
object Y : FinSet 3
object Z : FinSet 4
morphism f : X * Y -> Z [role=latent]
define g = f
export g
"""
    oracle.require_head(source)
    assert check(source).errors == []
    g = loads(source)["g"]
    assert isinstance(g, Morphism)
    (logits,) = list(g.parameters())
    assert logits.shape == (6, 4)
    with torch.no_grad():
        logits.copy_(torch.randn(6, 4, generator=torch.Generator().manual_seed(1)))
    pairs = torch.tensor([[x, y] for x in range(2) for y in range(3)])
    for z in range(4):
        got = g.log_prob(pairs, torch.full((6,), z))
        assert torch.allclose(got, torch.log_softmax(logits, dim=-1)[:, z])
