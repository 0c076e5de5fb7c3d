"""Pathfinder starts for NUTS chains (`inference.pathfinder`, `inference.starts`).

Every case is built so that its outcome does not hang on a seed: a Gaussian, whose
normal approximation is exact once L-BFGS has its curvature; a mixture whose minor mode
holds 1e-9 of the mass, so a start drawn from it has a weight of about e^-20; a start
whose density is not finite; a posterior a hundred standard deviations from where the
program's forward draw puts the chains.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest
import torch

from qvr_core.inference.chains import chain_seeds, run_chains
from qvr_core.inference.nuts import NUTSKernel, answer
from qvr_core.inference.pathfinder import Path, resampled_starts, single_path
from qvr_core.inference.sites import FlatLayout, make_sites
from qvr_core.inference.starts import chain_starts
from qvr_core.plan.run_arguments import RunArguments, validate_run_arguments

from .toy_models import NormalNormal

X = torch.zeros(1, 1)
LogDensity = Callable[[torch.Tensor], torch.Tensor]


def potential_of(log_density: LogDensity) -> Callable[[torch.Tensor], tuple[float, torch.Tensor]]:
    def potential(z: torch.Tensor) -> tuple[float, torch.Tensor]:
        z = z.detach().to(torch.float64).requires_grad_(True)
        lp = log_density(z)
        (g,) = torch.autograd.grad(lp, z)
        return -float(lp.detach()), -g

    return potential


def path_from(log_density: LogDensity, start: list[float], seed: int = 0) -> Path | None:
    rng = np.random.default_rng(seed)
    return answer(single_path(np.array(start), rng), potential_of(log_density))


COVARIANCE = torch.tensor([[9.0, 0.95 * 3.0 * 0.1], [0.95 * 3.0 * 0.1, 0.01]], dtype=torch.float64)
PRECISION = torch.linalg.inv(COVARIANCE)


def correlated(z: torch.Tensor) -> torch.Tensor:
    """An unnormalised correlated Gaussian: scales 3 and 0.1, correlation 0.95."""
    quadratic: torch.Tensor = z @ PRECISION @ z
    return -0.5 * quadratic


def test_a_path_on_a_correlated_gaussian_ends_at_the_gaussian_itself() -> None:
    path = path_from(correlated, [20.0, -4.0])
    assert path is not None
    # log Z of exp(-x'Px/2): with q the posterior itself, every weight p/q is Z
    log_z = math.log(2 * math.pi) + 0.5 * math.log(float(torch.linalg.det(COVARIANCE)))
    assert path.elbo == pytest.approx(log_z, abs=0.05)
    assert float(np.std(path.log_weights)) < 0.05
    spread = np.cov(path.draws.T)
    assert spread[0, 1] / math.sqrt(spread[0, 0] * spread[1, 1]) > 0.8  # the correlation


def minor_mode(z: torch.Tensor) -> torch.Tensor:
    """N(0, 1) with 1e-9 of the mass in a narrow mode at 10 (sd 0.5): a path from 10.2
    stays in it (the ridge between is some 8 units of log density above it)."""
    x = z[0]
    major = -0.5 * x * x
    minor = math.log(1e-9) - math.log(0.5) - 0.5 * ((x - 10.0) / 0.5) ** 2
    return torch.logaddexp(major, minor)


def test_resampling_takes_no_start_from_a_path_stuck_in_a_minor_mode() -> None:
    stuck = [path_from(minor_mode, [10.2], seed) for seed in (1, 2)]
    good = [path_from(minor_mode, [-1.5], seed) for seed in (3, 4)]
    assert all(p is not None for p in stuck + good)
    assert all(float(np.mean(p.draws)) > 9 for p in stuck if p is not None)  # they stayed
    starts = resampled_starts([*stuck, *good], 4, np.random.default_rng(0))
    assert len(starts) == 4
    assert all(abs(float(s[0])) < 5 for s in starts)
    assert len({float(s[0]) for s in starts}) == 4  # four different draws


def test_a_path_from_a_start_without_a_density_gives_nothing() -> None:
    def nowhere(z: torch.Tensor) -> torch.Tensor:
        return torch.where(z.abs().sum() < 1, -(z * z).sum(), torch.tensor(-math.inf))

    assert path_from(nowhere, [3.0, 3.0]) is None
    assert resampled_starts([None, None], 4, np.random.default_rng(0)) == []


def far_posterior() -> tuple[NormalNormal, dict[str, torch.Tensor]]:
    """mu's prior N(50, 1), one observation 0 with sd 0.01: the posterior is N(0.005,
    0.01^2), 50 prior standard deviations (5,000 posterior ones) from the forward draws."""
    return NormalNormal(1, 0.01, prior_loc=50.0), {"y": torch.zeros(1, 1)}


def test_chains_start_in_the_posterior_not_at_the_forward_draws() -> None:
    model, observations = far_posterior()
    values = model.run(X, observations).values
    layout = FlatLayout(make_sites(model, values, ["mu"], X))
    seeds = chain_seeds(3, 4)
    starts = chain_starts(model, X, observations, layout, seeds, 3)
    assert starts.positions is not None and len(starts.positions) == 4
    assert all(abs(float(p[0])) < 0.1 for p in starts.positions)
    assert chain_starts(model, X, observations, layout, seeds, 3, init="prior").positions is None


def test_a_run_s_chains_are_the_same_in_processes_as_here_with_pathfinder_starts() -> None:
    model, observations = far_posterior()
    kernel = NUTSKernel(max_tree_depth=5)
    a = run_chains(model, X, observations, kernel, 20, 10, chains=2, seed=4, processes=2)
    b = run_chains(model, X, observations, kernel, 20, 10, chains=2, seed=4, processes=1)
    assert torch.allclose(a.samples["mu"], b.samples["mu"], rtol=1e-5, atol=1e-7)
    assert float(a.samples["mu"].abs().max()) < 0.1


def test_the_init_argument_is_validated_and_defaults_to_pathfinder() -> None:
    assert RunArguments().init == "pathfinder"
    assert validate_run_arguments({"init": "prior"}).init == "prior"
    with pytest.raises(ValueError, match="init"):
        validate_run_arguments({"init": "zeros"})
