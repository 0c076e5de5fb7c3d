"""NUTS and SVI on a latent held to `[constraint=ordered]`, Stan's `ordered[K]`.

`sample mu : K <- Normal(0.0, 1.0) [constraint=ordered]` with K of two and no data has
the density of two standard normals restricted to mu_0 < mu_1: up to its normaliser 2,
the joint density of the order statistics of two independent N(0, 1) draws. So
E[mu_0] = -1/sqrt(pi), E[mu_1] = +1/sqrt(pi), and each has variance 1 - 1/pi.

The chains run as `qvr run` runs them (`chains.run_chains`: advanced together, their
potentials batched by torch.func.vmap and recorded). Means are compared within 5 Monte
Carlo standard errors (sd / sqrt(bulk ESS), the run's own), standard deviations within
15%: nothing rests on the draws of one seed.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from qvr_core.check import check
from qvr_core.inference.chains import run_chains
from qvr_core.inference.elbo import ELBO
from qvr_core.inference.guide import AutoNormalGuide
from qvr_core.inference.many import ManyPotential
from qvr_core.inference.mcmc import ProgramPotential, chain_layout, initial_values
from qvr_core.inference.nuts import NUTSKernel
from qvr_core.inference.svi import SVI
from qvr_core.runtime.model import ModelProgram, compile_model
from qvr_core.runtime.ordered import ordered_vector
from tests.inference.batched_agreement import assert_rows_are_eager

pytestmark = pytest.mark.timeout(300)

ORDER_STATISTICS = """\
object K : FinSet 2

program order_statistics : K -> K
    sample mu : K <- Normal(0.0, 1.0) [constraint=ordered]
    return mu

export order_statistics
"""
MEAN = 1 / math.sqrt(math.pi)
SD = math.sqrt(1 - 1 / math.pi)
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def program() -> ModelProgram:
    checked = check(ORDER_STATISTICS)
    assert checked.ok, checked.diagnostics
    return compile_model(checked, "order_statistics")


def test_nuts_draws_the_order_statistics_of_two_normals() -> None:
    result = run_chains(program(), {}, {}, NUTSKernel(), 500, 1000, chains=4, seed=1, processes=1)
    mu = result.samples["mu"].reshape(-1, 2).to(torch.float64)
    assert bool(ordered_vector.check(mu).all())
    assert float(result.r_hat["mu"].max()) < 1.02  # mixed chains: a property, not a path
    for k, mean in enumerate((-MEAN, MEAN)):
        ess = float(result.ess["mu"][k])
        mcse = float(mu[:, k].std()) / math.sqrt(ess)
        got = float(mu[:, k].mean())
        assert abs(got - mean) < 5 * mcse, (k, got, mean, 5 * mcse)
        assert abs(float(mu[:, k].std()) - SD) < 0.15 * SD, (k, float(mu[:, k].std()))


def test_svi_moves_the_guide_inside_the_set() -> None:
    """A Normal guide in unconstrained space, mapped by the ordered transform: every draw
    is ordered, and its means lie on the right sides (a mean-field guide is not exact)."""
    m = program()
    torch.manual_seed(0)
    m.run({}, {})
    guide = AutoNormalGuide(m, observed_names=set())
    optim = torch.optim.Adam(guide.parameters(), lr=0.05)
    svi = SVI(m, guide, optim, ELBO(num_particles=4))
    for _ in range(400):
        svi.step({}, {})
    with torch.no_grad():
        draws = torch.stack([guide.rsample({})["mu"] for _ in range(2000)])
    assert bool(ordered_vector.check(draws).all())
    low, high = draws.mean(0).tolist()
    assert low < -0.2 and high > 0.2


def test_the_chains_batched_potential_is_the_eager_one() -> None:
    """The mixture of posteriordb's low_dim_gauss_mix, its means ordered: the potential
    recorded under vmap runs (it is compiled) and equals one chain's, value and gradient."""
    source = (EXAMPLES / "posteriordb" / "low_dim_gauss_mix-low_dim_gauss_mix.qvr").read_text()
    source = source.replace("FinSet 1000", "FinSet 6")
    checked = check(source)
    assert checked.ok, checked.diagnostics
    mixture = compile_model(checked, "low_dim_gauss_mix")
    observed = {"y": torch.tensor([-2.1, -1.7, -2.4, 1.9, 2.2, 1.6], dtype=torch.float64)}
    layout = chain_layout(mixture, {}, observed)
    eager = ProgramPotential(mixture, {}, observed, layout)
    torch.manual_seed(0)
    start = layout.pack(initial_values(mixture, {}, observed))
    starts = torch.stack([start, start + 0.3, start - 0.2])
    many = ManyPotential(eager, eager.log_density, starts)
    assert many.compiled
    assert_rows_are_eager(many, eager, starts)
