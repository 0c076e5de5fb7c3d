"""priorsense's two examples with exact posterior draws, and priorsense's sensitivity
written from its definition: what `test_sensitivity.py` holds qvr's numbers against.

The draws are exact, no sampler: once its normal parts are integrated out in closed
form each posterior is one-dimensional in its scale (sigma, tau), drawn through the
inverse CDF of a fine grid of its density, and the rest are normal given it. numpy's
generators give the same draws on every platform, so what is computed from them is
deterministic; the spread over sets of draws is the Monte Carlo error of a run of as
many draws.

- The univariate normal: `univariate_normal.qvr` beside this file, the data and priors
  of priorsense's `example_powerscale_model("univariate_normal")` (mu ~ Normal(0, 1),
  sigma ~ HalfNormal(2.5), 25 observations).
- Eight schools, non-centred: `examples/models/eight_schools_noncentered.qvr` (mu ~
  Normal(0, 5), tau ~ HalfCauchy(5), theta_raw ~ Normal(0, 1)), priorsense's first
  eight-schools example, whose log prior is mu's and tau's only.
"""

from __future__ import annotations

import json
import math
import warnings
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from qvr_core.inference.results import RunResults
from tests.conftest import EXAMPLES

with warnings.catch_warnings():
    warnings.simplefilter("ignore", FutureWarning)
    import arviz

az: Any = arviz  # unannotated

MODELS = EXAMPLES / "models"
HERE = Path(__file__).resolve().parent
NORMAL_MODEL = HERE / "univariate_normal.qvr"
NORMAL_DATA = HERE / "univariate_normal.json"
Y = np.asarray(json.loads(NORMAL_DATA.read_text())["y"], dtype=float)
_SCHOOLS = json.loads((MODELS / "eight_schools.json").read_text())
SCHOOL_Y = np.asarray(_SCHOOLS["y"], dtype=float)
SCHOOL_SIGMA = np.asarray(_SCHOOLS["sigma"], dtype=float)

#: What priorsense prints for its univariate normal example, (prior, likelihood) per
#: parameter: `powerscale_sensitivity(example_powerscale_model()$draws)`, the 4 chains of
#: 1,000 CmdStan draws the package ships (its getting-started vignette and the reference
#: pages of powerscale_sensitivity and powerscale_gradients), a prior-data conflict for
#: both parameters.
PUBLISHED = {"mu": (0.390, 0.558), "sigma": (0.288, 0.527)}
#: The draws of priorsense's example runs (CmdStan's default: 4 chains of 1,000).
CHAINS, DRAWS = 4, 1000

_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


@dataclass(frozen=True)
class Draws:
    """Exact posterior draws, flat: each site's values, its prior log-density per draw,
    and the pointwise log-likelihood (draws, observations)."""

    posterior: dict[str, np.ndarray]
    log_prior: dict[str, np.ndarray]
    log_likelihood: np.ndarray
    scaled: tuple[str, ...]  # the prior terms priorsense scales

    def run(self) -> object:
        """The draws as the InferenceData `qvr run --output` writes: CHAINS chains."""
        results = RunResults()
        results.add("posterior", {k: _chains(v) for k, v in self.posterior.items()})
        results.add("log_prior", {k: _chains(v) for k, v in self.log_prior.items()})
        results.add("log_likelihood", {"y": _chains(self.log_likelihood)})
        return results.inference_data()

    def log_component(self, component: str) -> np.ndarray:
        """The joint log prior (of the scaled terms) or log-likelihood per draw."""
        if component == "prior":
            return np.asarray(np.sum([self.log_prior[s] for s in self.scaled], axis=0))
        return np.asarray(self.log_likelihood.sum(axis=1))


def _chains(values: np.ndarray) -> np.ndarray:
    return values.reshape(CHAINS, -1, *values.shape[1:])


def _normal_logpdf(x: np.ndarray, loc: np.ndarray | float, scale: np.ndarray | float) -> np.ndarray:
    z = (x - loc) / scale
    return np.asarray(-0.5 * z * z - np.log(scale) - _LOG_SQRT_2PI)


@cache
def _grid_cdf(model: str) -> tuple[np.ndarray, np.ndarray]:
    """(grid, CDF) of the posterior of the model's scale, the CDF by the trapezoid rule."""
    if model == "normal":
        grid = np.geomspace(0.05, 60.0, 400_001)
        log_density = _normal_scale_log_density(grid)
    else:
        grid = np.concatenate(
            [np.linspace(0.0, 50.0, 500_001), np.geomspace(50.0, 5e3, 50_001)[1:]]
        )
        log_density = _schools_scale_log_density(grid)
    density = np.exp(log_density - log_density.max())
    cdf = np.concatenate([[0.0], np.cumsum(0.5 * (density[1:] + density[:-1]) * np.diff(grid))])
    return grid, cdf / cdf[-1]


def _normal_scale_log_density(sigma: np.ndarray) -> np.ndarray:
    """log p(sigma | y) up to a constant: y ~ Normal(0, sigma^2 I + 1 1') with mu
    integrated out, times the HalfNormal(2.5) prior."""
    n = len(Y)
    log_det = 2 * n * np.log(sigma) + np.log1p(n / sigma**2)
    quad = (np.sum(Y**2) - np.sum(Y) ** 2 / (sigma**2 + n)) / sigma**2
    return np.asarray(-0.5 * (log_det + quad) - 0.5 * (sigma / 2.5) ** 2)


def _schools_mu_given_tau(tau: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The precision and the mean of mu given tau and the data (theta integrated out)."""
    var = SCHOOL_SIGMA**2 + tau[:, None] ** 2
    precision = 1 / 25 + (1 / var).sum(axis=1)
    return precision, (SCHOOL_Y / var).sum(axis=1) / precision


def _schools_scale_log_density(tau: np.ndarray) -> np.ndarray:
    """log p(tau | y) up to a constant: y_j ~ Normal(mu, sigma_j^2 + tau^2) with mu ~
    Normal(0, 5) integrated out, times the HalfCauchy(5) prior."""
    var = SCHOOL_SIGMA**2 + tau[:, None] ** 2
    precision, mean = _schools_mu_given_tau(tau)
    log_lik = (
        -0.5 * np.log(var).sum(axis=1)
        - 0.5 * (SCHOOL_Y**2 / var).sum(axis=1)
        + 0.5 * precision * mean**2
        - 0.5 * np.log(precision)
    )
    return np.asarray(log_lik - np.log1p((tau / 5) ** 2))


def _scale_draws(model: str, rng: np.random.Generator, n: int) -> np.ndarray:
    grid, cdf = _grid_cdf(model)
    return np.asarray(np.interp(rng.uniform(size=n), cdf, grid))


def normal_draws(rng: np.random.Generator, n: int = CHAINS * DRAWS) -> Draws:
    """`n` exact posterior draws of priorsense's univariate normal example."""
    sigma = _scale_draws("normal", rng, n)
    precision = 1 + len(Y) / sigma**2
    mu = rng.normal(Y.sum() / sigma**2 / precision, 1 / np.sqrt(precision))
    log_prior = {
        "mu": _normal_logpdf(mu, 0.0, 1.0),
        "sigma": _normal_logpdf(sigma, 0.0, 2.5) + math.log(2),
    }
    log_lik = _normal_logpdf(Y, mu[:, None], sigma[:, None])
    return Draws({"mu": mu, "sigma": sigma}, log_prior, log_lik, ("mu", "sigma"))


def schools_draws(rng: np.random.Generator, n: int = CHAINS * DRAWS) -> Draws:
    """`n` exact posterior draws of the non-centred eight schools."""
    tau = np.maximum(_scale_draws("schools", rng, n), 1e-12)
    precision, mean = _schools_mu_given_tau(tau)
    mu = rng.normal(mean, 1 / np.sqrt(precision))
    theta_precision = 1 / SCHOOL_SIGMA**2 + 1 / tau[:, None] ** 2
    theta_mean = (SCHOOL_Y / SCHOOL_SIGMA**2 + mu[:, None] / tau[:, None] ** 2) / theta_precision
    theta = rng.normal(theta_mean, 1 / np.sqrt(theta_precision))
    theta_raw = (theta - mu[:, None]) / tau[:, None]
    log_prior = {
        "mu": _normal_logpdf(mu, 0.0, 5.0),
        "tau": math.log(2 / (math.pi * 5)) - np.log1p((tau / 5) ** 2),
        "theta_raw": _normal_logpdf(theta_raw, 0.0, 1.0).sum(axis=1),
    }
    log_lik = _normal_logpdf(SCHOOL_Y, theta, SCHOOL_SIGMA)
    posterior = {"mu": mu, "tau": tau, "theta_raw": theta_raw}
    return Draws(posterior, log_prior, log_lik, ("mu", "tau"))


# ------------------------------------------------------------------ priorsense's definition


def priorsense_sensitivity(x: np.ndarray, log_component: np.ndarray) -> float:
    """priorsense's power-scaling sensitivity of the draws `x` to the component whose
    log-density per draw is `log_component`, written from its definition (Kallioinen et
    al. 2023; priorsense's powerscale_sensitivity with its defaults): the component
    raised to the powers 0.99 and 1.01 by Pareto-smoothed importance weights, the
    cumulative Jensen-Shannon distance of each weighted ECDF from the draws' (the larger
    of the draws' and their negatives'), summed and divided by 2 log2(1.01)."""
    upper = 1.01
    distance = 0.0
    for alpha in (0.99, upper):
        weights = _smoothed_weights((alpha - 1) * log_component)
        distance += max(_cjs_distance(x, weights), _cjs_distance(-x, weights))
    return distance / (2 * math.log2(upper))


def _smoothed_weights(log_ratio: np.ndarray) -> np.ndarray:
    """Pareto-smoothed importance weights (ArviZ's PSIS of the right tail), the tail as
    long as priorsense's: its relative efficiency is the log ratios' tail ESS over their
    number (taken as one chain), so 3 sqrt(S / r_eff) draws at most (ArviZ rounds that
    up, priorsense down: one draw more at most)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r_eff = float(az.ess(log_ratio[None, :], method="tail")) / len(log_ratio)
        log_weights, _ = az.psislw(log_ratio, reff=r_eff)
    weights = np.exp(np.asarray(log_weights))
    return np.asarray(weights / weights.sum())


def _cjs_distance(x: np.ndarray, weights: np.ndarray) -> float:
    """The cumulative Jensen-Shannon distance between the ECDF P of the draws `x` and
    their weighted ECDF Q, at the draws (the bins between sorted draws): the square root
    of CJS(P||Q) + CJS(Q||P) over its bound, the integral of P + Q. Neither half is
    clamped at 0, as priorsense's are not; their linear terms, (Q - P) and (P - Q) over
    2 ln 2, cancel in the sum."""
    order = np.argsort(x, kind="stable")
    width = np.diff(x[order])
    n = len(x)
    p = np.arange(1, n) / n
    q = np.cumsum(weights[order])[:-1] / weights.sum()
    m = 0.5 * (p + q)
    with np.errstate(divide="ignore", invalid="ignore"):  # 0 log 0 = 0: nansum drops it
        pq = np.nansum(width * p * (np.log2(p) - np.log2(m)))
        qp = np.nansum(width * q * (np.log2(q) - np.log2(m)))
    return math.sqrt((pq + qp) / float((p + q) @ width))
