"""`~ LogNormal`, `~ LogitNormal` and `~ Dirichlet` on Real objects (as quivers accepts
them): draws lie in the family's support, and inference sees that support."""

from __future__ import annotations

import math

import torch

from qvr_core.dsl import loads
from qvr_core.inference.sites import site_transform

SOURCE = """\
object Feat : Real 3
object Rate : Real 2
object Share : Real 4
object Prob : Real 2

morphism rate : Feat -> Rate [role=kernel] ~ LogNormal
morphism share : Feat -> Share [role=kernel] ~ Dirichlet
morphism prob : Feat -> Prob [role=kernel] ~ LogitNormal
morphism loc : Feat -> Prob [role=kernel] ~ Normal

program p : Feat -> Rate * Share * Prob * Prob
    sample r <- rate
    sample s <- share
    sample q <- prob
    sample z <- loc
    return (r, s, q, z)

export p
"""


def test_sites_take_the_support_of_their_family() -> None:
    model = loads(SOURCE).morphism
    supports = {n: model.site_support(n) for n in model.site_names}
    assert supports == {"r": "positive", "s": "simplex", "q": "unit", "z": "real"}


def test_draws_lie_there_and_an_unconstrained_value_maps_into_it() -> None:
    torch.manual_seed(0)
    model = loads(SOURCE).morphism
    values = model.run(torch.randn(8, 3)).values
    assert bool((values["r"] > 0).all())
    assert torch.allclose(values["s"].sum(-1), torch.ones(8), atol=1e-5)
    assert bool(((values["q"] > 0) & (values["q"] < 1)).all())
    u = torch.randn(8, 2) * 5
    mapped = site_transform(model, "r")(u)  # type: ignore[misc]
    log_p = model.run(torch.randn(8, 3), values={**values, "r": mapped}).log_probs["r"]
    assert bool(torch.isfinite(log_p).all())


NUMBER_FAMILIES = """\
object Feat : Real 3
object Rate : Positive 2
object Level : Real 2
object Share : Real 2

morphism rate : Feat -> Rate [role=kernel] ~ Gamma
morphism level : Feat -> Level [role=kernel, hidden_dim=8] ~ StudentT
morphism share : Feat -> Share [role=kernel, param_source=linear] ~ Beta

program p : Feat -> Rate * Level * Share
    sample r <- rate
    sample l <- level
    observe s : Share <- share
    return (r, l, s)

export p
"""


def test_families_of_numbers_run_on_morphisms_and_fit() -> None:
    """`~ Gamma`, `~ StudentT`, `~ Beta` on morphisms (as quivers has them): the network
    gives each parameter; a few SVI steps give a finite, falling loss."""
    from qvr_core.inference import ELBO, SVI, AutoNormalGuide

    torch.manual_seed(0)
    model = loads(NUMBER_FAMILIES).morphism
    assert {n: model.site_support(n) for n in model.site_names} == {
        "r": "positive",
        "l": "real",
        "s": "unit",
    }
    x = torch.randn(16, 3)
    data = {"s": torch.rand(16, 2) * 0.8 + 0.1}
    guide = AutoNormalGuide(model, observed_names={"s"})
    optim = torch.optim.Adam([*model.parameters(), *guide.parameters()], lr=0.05)
    svi = SVI(model, guide, optim, ELBO(num_particles=1))
    losses = [svi.step(x, data) for _ in range(30)]
    assert all(map(math.isfinite, losses))
    assert sum(losses[-5:]) < sum(losses[:5])
