"""nutpie's mass-matrix adaptation (`inference.fisher`): the Fisher diagonal from draws and
gradients, its low-rank correction, and what they buy NUTS.

For a Gaussian the gradients are a linear function of the draws, so the Fisher
estimates are exact from any window (up to the low-rank fit's small ridge), whatever
the chain drew: the assertions on adapted metrics hold for every seed, and those on
efficiency leave a margin of several times what was measured.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch

from qvr_core.inference import fisher
from qvr_core.inference.chains import chain_seeds
from qvr_core.inference.convergence import ess_bulk, rhat
from qvr_core.inference.fisher import FisherWindow, chosen_metric
from qvr_core.inference.lockstep import run_together
from qvr_core.inference.mcmc import chain_layout, sample_chain, sample_chains
from qvr_core.inference.nuts import NUTSChain, NUTSKernel, Requests
from qvr_core.plan import run_arguments
from qvr_core.plan.run_arguments import RunArguments
from qvr_core.runs.prepare import PreparedRun, prepare

MODELS = Path(__file__).resolve().parents[2] / "examples" / "models"
#: Standard deviations from 1e-2 to 1e2: a unit metric's step is set by the narrowest.
SCALES = np.logspace(-2, 2, 9)
#: Scales 1 and 10, correlation 0.99: a diagonal metric can rescale but not rotate it.
CORRELATED = np.array([[1.0, 9.9], [9.9, 100.0]])

Potential = Callable[[torch.Tensor], tuple[float, torch.Tensor]]


def gaussian(covariance: np.ndarray) -> Potential:
    """U(z) = z' P z / 2 and its gradient P z."""
    precision = np.linalg.inv(covariance)

    def potential(z: torch.Tensor) -> tuple[float, torch.Tensor]:
        grad = precision @ z.numpy()
        return 0.5 * float(z.numpy() @ grad), torch.from_numpy(grad)

    return potential


def sample(
    potential: Potential, size: int, metric: str, seed: int, warmup: int = 1000, draws: int = 1000
) -> tuple[np.ndarray, NUTSChain, int, int]:
    """One chain's draws after warmup, the chain, and the gradients of warmup and draws."""
    generator = torch.Generator().manual_seed(seed)
    start = torch.rand(size, dtype=torch.float64, generator=generator) * 4 - 2
    chain = NUTSKernel(mass_matrix=metric).chain(potential, start, warmup, generator)
    kept, counts = [], [0, 0]
    for i in range(warmup + draws):
        t = chain.step()
        counts[i >= warmup] += t.num_steps
        if i >= warmup:
            kept.append(t.z.numpy().copy())
    return np.stack(kept), chain, counts[0], counts[1]


def relative_eigenvalues(inv_mass: np.ndarray, covariance: np.ndarray) -> np.ndarray:
    """The eigenvalues of L^-1 M^-1 L^-T with covariance L L^T: all 1 for the exact metric."""
    inverse = np.linalg.inv(np.linalg.cholesky(covariance))
    return np.linalg.eigvalsh(inverse @ inv_mass @ inverse.T)


# -- the estimators on independent draws -------------------------------------


def test_the_fisher_diagonal_of_independent_gaussian_draws_is_their_exact_variance() -> None:
    rng = np.random.default_rng(0)
    window = FisherWindow(SCALES.size)
    for _ in range(20):  # 20 draws: their own variances are off by a third
        z = rng.normal(size=SCALES.size) * SCALES
        window.add(z, z / SCALES**2)
    np.testing.assert_allclose(window.variance(np.ones(SCALES.size)), SCALES**2, rtol=1e-9)


def test_the_low_rank_metric_of_correlated_gaussian_draws_is_their_covariance() -> None:
    rng = np.random.default_rng(1)
    precision = np.linalg.inv(CORRELATED)
    window = FisherWindow(2, keep_rows=True)
    for z in rng.normal(size=(50, 2)) @ np.linalg.cholesky(CORRELATED).T:
        window.add(z, precision @ z)
    metric = window.low_rank(np.ones(2))
    assert metric.rank == 2  # both directions far from the diagonal metric's
    # exact but for the ridge, which moves the narrow direction by under 2%
    relative = relative_eigenvalues(metric.matrix(), CORRELATED)
    np.testing.assert_allclose(relative, 1.0, rtol=0.02)


def funnel(rng: np.random.Generator, n: int, size: int, sd: float) -> tuple[np.ndarray, ...]:
    """n independent draws of Neal's funnel, v ~ N(0, sd), x_i | v ~ N(0, exp(v / 2)),
    and the gradients of its potential there, centred."""
    v = rng.normal(size=n) * sd
    x = rng.normal(size=(n, size - 1)) * np.exp(v / 2)[:, None]
    grad_v = v / sd**2 - 0.5 * (x**2).sum(1) * np.exp(-v) + (size - 1) / 2
    z, g = np.column_stack([v, x]), np.column_stack([grad_v, x * np.exp(-v)[:, None]])
    return z - z.mean(0), g - g.mean(0)


@pytest.mark.parametrize("size", [2, 5, 13, 26, 60])
def test_gaussian_draws_are_never_taken_for_far_from_gaussian(size: int) -> None:
    rng = np.random.default_rng(size)
    for _ in range(20):  # at the fewest draws judged, of a covariance of any shape
        factor = rng.normal(size=(size, size))
        covariance = factor @ factor.T + 0.1 * np.eye(size)
        n = max(fisher.ROWS_PER_COORDINATE * size, fisher.JUDGED_ROWS)
        z = rng.normal(size=(n, size)) @ np.linalg.cholesky(covariance).T
        g = z @ np.linalg.inv(covariance)
        assert not fisher.far_from_gaussian(z - z.mean(0), g - g.mean(0))


def test_a_funnel_keeps_the_diagonal_metric_where_a_milder_one_gets_its_directions() -> None:
    """The low-rank correction is a Gaussian's: a funnel whose scale has sd 1.5 (the
    gradients in its neck vary far more than its draws' spread implies) keeps the
    diagonal, a mild one (sd 0.5) gets its directions; both seen through the same
    linear map, which correlates their coordinates (draws z B, gradients g B^-T), so
    that the diagonal alone cannot take either. With fewer draws than judged a window
    is not judged at all."""
    rng = np.random.default_rng(3)
    mixing = np.eye(5) + 0.8 * rng.normal(size=(5, 5))
    for sd, far in ((1.5, True), (0.5, False)):
        z, g = funnel(rng, 500, 5, sd)
        z, g = z @ mixing, g @ np.linalg.inv(mixing).T
        assert fisher.far_from_gaussian(z, g) is far
        window = FisherWindow(5, keep_rows=True)
        for row, grad in zip(z, g, strict=True):
            window.add(row, grad)
        assert (window.low_rank(np.ones(5)).rank == 0) is far
    z, g = funnel(rng, fisher.JUDGED_ROWS - 1, 5, 1.5)
    assert not fisher.far_from_gaussian(z, g)


def test_a_funnel_s_diagonal_is_the_spread_of_its_draws_not_the_fisher_one() -> None:
    """In a funnel the gradients vary most in the neck, so the Fisher diagonal
    sqrt(Var x / Var g) is narrower than the draws' spread in the coordinates that cross
    it; a window judged far from Gaussian takes the draws' own variance, shrunk as Stan
    shrinks it, as its metric. A Gaussian window keeps the Fisher diagonal, which is
    exact there."""
    rng = np.random.default_rng(5)
    z, g = funnel(rng, 2000, 5, 1.5)
    window = FisherWindow(5, keep_rows=True)
    for row, grad in zip(z, g, strict=True):
        window.add(row, grad)
    metric = window.low_rank(np.ones(5))
    n = window.n
    spread = (n / (n + 5.0)) * z.var(0, ddof=1) + 1e-3 * (5.0 / (n + 5.0))
    assert metric.rank == 0
    np.testing.assert_allclose(metric.variance, spread, rtol=1e-9)
    fisher_diagonal = window.variance(np.ones(5))
    assert (fisher_diagonal < 0.5 * spread).any()  # what the funnel's neck did to it
    gaussian_window = FisherWindow(5, keep_rows=True)
    for row in rng.normal(size=(2000, 5)) * SCALES[2:7]:
        gaussian_window.add(row, row / SCALES[2:7] ** 2)
    np.testing.assert_allclose(
        gaussian_window.low_rank(np.ones(5)).variance, SCALES[2:7] ** 2, rtol=1e-9
    )


@pytest.mark.parametrize("size", [12, fisher.DENSE_SIZE + 16])  # as matrices; factored
def test_the_low_rank_metric_moves_and_draws_momenta_as_its_matrix(size: int) -> None:
    rng = np.random.default_rng(2)
    directions, _ = np.linalg.qr(rng.normal(size=(size, 3)))
    metric = fisher.LowRankMetric(
        np.exp(rng.normal(size=size)), directions, np.array([50.0, 0.05, 3.0])
    )
    inv_mass = metric.matrix()
    assert (metric._dense is None) == (size > fisher.DENSE_SIZE)
    # the matrix from its parts, not from `matrix()`, which the small metric applies
    scale = np.diag(metric.scale)
    inner = np.eye(size) + directions @ np.diag(metric.values - 1.0) @ directions.T
    np.testing.assert_allclose(inv_mass, scale @ inner @ scale, rtol=1e-12, atol=1e-12)
    r = rng.normal(size=size)
    np.testing.assert_allclose(metric.velocity(r), inv_mass @ r, rtol=1e-12, atol=1e-12)
    factor = np.stack([metric.momentum(e) for e in np.eye(size)], axis=1)  # momentum = F n
    np.testing.assert_allclose(factor @ factor.T, np.linalg.inv(inv_mass), rtol=1e-9, atol=1e-12)


def test_a_window_keeps_the_previous_variance_where_the_draws_never_moved() -> None:
    window = FisherWindow(2)
    for i in range(10):
        window.add(np.array([1.0, float(i)]), np.array([float(i), 2.0]))
    # the first never moved: what came before; the second's gradient never changed:
    # the variance of its draws (a flat or linear potential has no curvature to read)
    np.testing.assert_allclose(
        window.variance(np.array([7.0, 7.0])), [7.0, np.var(range(10), ddof=1)]
    )


def test_auto_is_low_rank_up_to_500_coordinates_and_the_fisher_diagonal_beyond() -> None:
    assert chosen_metric("auto", 26) == "low-rank"
    assert chosen_metric("auto", 500) == "low-rank"
    assert chosen_metric("auto", 501) == "fisher"
    assert chosen_metric("diag", 10) == "diag"
    assert fisher.MASS_MATRICES == run_arguments.MASS_MATRICES
    assert RunArguments().mass_matrix == "auto"
    with pytest.raises(ValueError, match="mass matrix must be one of"):
        chosen_metric("full", 3)


# -- NUTS -----------------------------------------------------------------------


def test_the_fisher_metric_learns_scales_from_1e_2_to_1e2_exactly_and_cheaply() -> None:
    covariance = np.diag(SCALES**2)
    # only the warmup is measured (the metric it ends with, its gradients): one draw after
    potential = gaussian(covariance)
    _, chain, fisher_warmup, _ = sample(potential, SCALES.size, "fisher", seed=1, draws=1)
    np.testing.assert_allclose(chain.inv_mass.numpy(), SCALES**2, rtol=1e-6)
    # from the gradient at the start and windows of 10 draws early: measured 6,000
    # gradients of warmup where Stan's diagonal spends 75,000 at the identity
    _, _, stan_warmup, _ = sample(potential, SCALES.size, "diag", seed=1, draws=1)
    assert fisher_warmup < stan_warmup / 3, (fisher_warmup, stan_warmup)


def test_the_low_rank_metric_turns_a_correlated_gaussian_round() -> None:
    draws, chain, _, gradients = sample(gaussian(CORRELATED), 2, "low-rank", seed=2)
    relative = relative_eigenvalues(chain.inv_mass.numpy(), CORRELATED)
    assert np.all((relative > 0.8) & (relative < 1.25)), relative
    diagonal, _, _, diagonal_gradients = sample(gaussian(CORRELATED), 2, "diag", seed=2)
    low_rank_rate = ess_bulk(draws[None]).min() / gradients
    diagonal_rate = ess_bulk(diagonal[None]).min() / diagonal_gradients
    # measured: 0.26 to 0.39 effective draws per gradient against 0.011 to 0.014
    assert low_rank_rate > 5 * diagonal_rate, (low_rank_rate, diagonal_rate)


def regression(noise: float = 0.15, rows: int = 400) -> tuple[np.ndarray, np.ndarray]:
    """A diamonds-like design: five powers of one skewed predictor (as carat's polynomial)
    and 19 columns driven by three common factors, on scales spread over e^3; the
    posterior's correlation matrix has a condition number of about 3,500."""
    rng = np.random.default_rng(0)
    carat = rng.gamma(4.0, 0.2, size=rows)
    c = (carat - carat.mean()) / carat.std()
    powers = np.stack([c**p for p in range(1, 6)], axis=1)
    factors = rng.normal(size=(rows, 3)) @ rng.normal(size=(3, 19))
    x = np.concatenate([powers, factors + noise * rng.normal(size=(rows, 19))], axis=1)
    x = x * np.exp(rng.uniform(-1.5, 1.5, size=24))
    y = 1.0 + x @ (0.3 * rng.normal(size=24)) + 0.5 * rng.normal(size=rows)
    return np.concatenate([np.ones((rows, 1)), x], axis=1), y


def regression_potential() -> Callable[[torch.Tensor], tuple[list[float], torch.Tensor]]:
    """U of (intercept, 24 coefficients, log sigma) under N(0, 10^2) and N(0, 5^2) priors,
    for a batch of positions (as `lockstep.run_together` asks)."""
    design, y = regression()
    gram, moment, total, rows = design.T @ design, design.T @ y, y @ y, design.shape[0]

    def potential(positions: torch.Tensor) -> tuple[list[float], torch.Tensor]:
        z = positions.numpy()  # one row a chain, all rows at once
        beta, log_sigma = z[:, :-1], z[:, -1]
        with np.errstate(over="ignore"):  # a trajectory far out: U infinite, a divergence
            variance = np.exp(2 * log_sigma)
        gram_beta = beta @ gram  # the Gram matrix is symmetric: gram @ beta of each row
        squares = np.einsum("ij,ij->i", gram_beta, beta) - 2 * beta @ moment + total
        u = (
            0.5 * squares / variance
            + rows * log_sigma
            + np.einsum("ij,ij->i", beta, beta) / 200
            + log_sigma**2 / 50
        )
        grad_beta = (gram_beta - moment) / variance[:, None] + beta / 100
        grad_sigma = -squares / variance + rows + log_sigma / 25
        return u.tolist(), torch.from_numpy(np.concatenate([grad_beta, grad_sigma[:, None]], 1))

    return potential


def _draws(chain: NUTSChain, num_warmup: int, num_draws: int) -> Requests[tuple[np.ndarray, int]]:
    yield from chain.begin()
    kept, gradients = [], 0
    for i in range(num_warmup + num_draws):
        t = yield from chain.advance()
        if i >= num_warmup:
            kept.append(t.z.numpy().copy())
            gradients += t.num_steps
    return np.stack(kept), gradients


@pytest.mark.parametrize(
    ("num_warmup", "num_draws", "r_hat", "ess"),
    [
        # measured: R-hat 1.002, bulk ESS 3,400 (about 20 s)
        pytest.param(1000, 1000, 1.01, 1000, marks=pytest.mark.slow),
        # measured over five seeds: R-hat 1.006 to 1.013, bulk ESS 960 to 1,180 (5 s)
        (300, 300, 1.03, 300),
    ],
)
def test_auto_converges_on_a_diamonds_like_regression_with_four_chains_together(
    num_warmup: int, num_draws: int, r_hat: float, ess: float
) -> None:
    """4 chains advanced together (`lockstep`), each adapting its own metric."""
    kernel = NUTSKernel(mass_matrix="auto")
    chains = []
    for seed in range(4):
        generator = torch.Generator().manual_seed(seed)
        start = torch.rand(26, dtype=torch.float64, generator=generator) * 4 - 2
        chains.append(kernel.chain(None, start, num_warmup, generator))
    tasks = [_draws(c, num_warmup, num_draws) for c in chains]
    results = run_together(tasks, regression_potential())
    draws = np.stack([z for z, _ in results])
    assert all(c.metric == "low-rank" and c._low_rank is not None for c in chains)
    assert float(rhat(draws).max()) <= r_hat
    assert float(ess_bulk(draws).min()) > ess
    # measured about 25 gradients a draw in 1000 draws
    assert max(gradients for _, gradients in results) < 100 * num_draws


# -- chains together -------------------------------------------------------------


@pytest.fixture(scope="module")
def schools() -> PreparedRun:
    source = (MODELS / "eight_schools_noncentered.qvr").read_text()
    return prepare(source, RunArguments(method="nuts"), data=str(MODELS / "eight_schools.json"))


# kernel_free: two paths of the same code on one machine (chains together, each alone),
# compared exactly, as tests/inference/test_lockstep.py: no draw's value decides it.
@pytest.mark.kernel_free
def test_chains_together_with_a_low_rank_metric_draw_what_each_draws_alone(
    schools: PreparedRun,
) -> None:
    """A warmup long enough for Stan's windows (150), so the metric is adapted."""
    kernel = NUTSKernel(max_tree_depth=5, mass_matrix="low-rank")
    seeds = chain_seeds(5, 2)
    layout = chain_layout(schools.program, schools.x, schools.observations)
    records = sample_chains(
        schools.program, schools.x, schools.observations, kernel, 160, 10, seeds, layout
    )
    for seed, record in zip(seeds, records, strict=True):
        torch.manual_seed(seed)
        alone, _ = sample_chain(schools.program, schools.x, schools.observations, kernel, 160, 10)
        assert record.complete and len(record.zs) == 10
        torch.testing.assert_close(
            torch.stack(record.zs), torch.stack(alone.zs), rtol=1e-6, atol=1e-8
        )
