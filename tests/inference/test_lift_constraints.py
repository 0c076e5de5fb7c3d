"""A lifted program moves each latent where the program's site lives, exactly.

`~ Pareto(1.0, 2.0)` draws above 1: NUTS over the lifted program must map its
unconstrained state there, not onto all of `positive`, where every value below
1 has density 0 (before, 185 of 200 draws of the corpus fixture diverged).
"""

from __future__ import annotations

import torch

from qvr_core.dsl import loads
from qvr_core.inference.sites import site_transform
from qvr_core.runs.methods import lift_parameters
from qvr_core.runtime.program import ProgramModule

PARETO = """object Obs : Real 4
morphism pareto_kernel : Obs -> Obs [role=kernel] ~ Pareto(1.0, 2.0)
program pareto_fixture : Obs -> Obs
    sample x <- pareto_kernel
    return x
export pareto_fixture
"""


def test_an_additional_latent_keeps_its_exact_support() -> None:
    program = loads(PARETO).morphism
    assert isinstance(program, ProgramModule)
    lifted, _, _ = lift_parameters(program, program.example_input(3, 1), {})
    transform = site_transform(lifted, "x")
    assert transform is not None
    values = transform(torch.linspace(-30.0, 30.0, 61))
    assert bool((values >= 1.0).all())
    assert lifted.site_constraint("x").check(torch.tensor(0.5)).item() is False


def test_a_weight_is_unconstrained() -> None:
    program = loads(PARETO.replace("~ Pareto(1.0, 2.0)", "~ Normal")).morphism
    assert isinstance(program, ProgramModule)
    lifted, _, _ = lift_parameters(program, program.example_input(3, 1), {})
    weights = [n for n in lifted.site_names if n != "x"]
    assert weights and all(site_transform(lifted, n) is None for n in weights)
