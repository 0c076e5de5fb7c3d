"""Rank-normalised split R-hat and bulk ESS on chains with known answers (see
test_convergence.py for the comparison with ArviZ)."""

from __future__ import annotations

import numpy as np
import torch

from qvr_core.inference.convergence import ess_bulk as effective_sample_size
from qvr_core.inference.convergence import rhat as split_rhat


def ar1(chains: int, draws: int, rho: float, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = np.zeros((chains, draws))
    x[:, 0] = rng.standard_normal(chains)
    for t in range(1, draws):
        x[:, t] = rho * x[:, t - 1] + np.sqrt(1 - rho**2) * rng.standard_normal(chains)
    return x


def test_rhat_is_one_for_mixed_chains_and_large_for_separated_ones() -> None:
    iid = np.random.default_rng(0).standard_normal((4, 1000, 3))
    assert np.all(np.abs(split_rhat(iid) - 1) < 0.01)
    shifted = iid + np.arange(4)[:, None, None]
    assert np.all(split_rhat(shifted) > 1.5)


def test_split_rhat_catches_a_trend_within_one_chain() -> None:
    trend = np.linspace(0, 5, 1000)[None, :] + np.random.default_rng(1).standard_normal((1, 1000))
    assert split_rhat(trend) > 1.5


def test_ess_of_independent_draws_is_about_their_number() -> None:
    iid = np.random.default_rng(2).standard_normal((2, 2000))
    assert 3400 < float(effective_sample_size(iid)) < 4600


def test_ess_of_an_ar1_chain_matches_its_autocorrelation_time() -> None:
    rho = 0.9
    x = ar1(4, 5000, rho)
    expected = 4 * 5000 * (1 - rho) / (1 + rho)
    assert abs(float(effective_sample_size(x)) / expected - 1) < 0.2


def test_shapes_tensors_and_degenerate_inputs() -> None:
    t = torch.randn(2, 100, 4, 5)
    assert split_rhat(t).shape == (4, 5) and effective_sample_size(t).shape == (4, 5)
    const = np.ones((2, 50))
    # R-hat of a constant is undefined; its ESS counts every draw, as ArviZ's does
    assert np.isnan(split_rhat(const)) and effective_sample_size(const) == 100
    assert np.isnan(effective_sample_size(np.zeros((1, 2))))  # too few draws


def test_antithetic_draws_give_a_large_positive_ess_not_a_negative_one() -> None:
    # x_t = -0.9 x_{t-1} + noise: the lag-1 autocorrelation is near -1
    rng = np.random.default_rng(3)
    n = 400
    x = np.zeros((1, n))
    for t in range(1, n):
        x[0, t] = -0.9 * x[0, t - 1] + rng.normal()
    ess = float(effective_sample_size(x))
    assert n < ess <= n * np.log10(n) + 1e-9
