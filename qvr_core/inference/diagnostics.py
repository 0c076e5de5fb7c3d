"""Convergence diagnostics: split R-hat and effective sample size.

Both follow Stan's definitions (Gelman et al., BDA3 sections 11.4-11.5; Geyer's
initial monotone sequence for the autocorrelation sum). Inputs are arrays of
shape `(chains, draws, *shape)`; outputs have shape `shape`. Coordinates that
never move (zero variance) get NaN, which callers show as "n/a".
"""

from __future__ import annotations

import numpy as np
import torch


def _as_array(samples: torch.Tensor | np.ndarray) -> np.ndarray:
    if isinstance(samples, torch.Tensor):
        samples = samples.detach().cpu().to(torch.float64).numpy()
    x = np.asarray(samples, dtype=np.float64)
    if x.ndim < 2:
        raise ValueError(f"expected samples of shape (chains, draws, ...), got {x.shape}")
    return x


def split_rhat(samples: torch.Tensor | np.ndarray) -> np.ndarray:
    """Potential scale reduction with every chain split in half (so one chain works)."""
    x = _as_array(samples)
    n = x.shape[1] // 2
    if n < 2:
        return np.full(x.shape[2:], np.nan)
    halves = np.concatenate([x[:, :n], x[:, -n:]], axis=0)
    chain_means = halves.mean(axis=1)
    within = halves.var(axis=1, ddof=1).mean(axis=0)
    between = chain_means.var(axis=0, ddof=1)  # this is B / n
    var_plus = (n - 1) / n * within + between
    with np.errstate(divide="ignore", invalid="ignore"):
        rhat = np.sqrt(var_plus / within)
    return np.where(within > 0, rhat, np.nan)


def _autocovariance(x: np.ndarray) -> np.ndarray:
    """Autocovariance along axis 1 (1/N normalised), by FFT."""
    n = x.shape[1]
    centred = x - x.mean(axis=1, keepdims=True)
    size = 1 << (2 * n - 1).bit_length()
    f = np.fft.rfft(centred, n=size, axis=1)
    acov = np.fft.irfft(f * np.conjugate(f), n=size, axis=1)[:, :n]
    return acov / n


def effective_sample_size(samples: torch.Tensor | np.ndarray) -> np.ndarray:
    """Bulk ESS: chains * draws / (1 + 2 sum of autocorrelations), Geyer-truncated."""
    x = _as_array(samples)
    chains, n = x.shape[:2]
    if n < 4:
        return np.full(x.shape[2:], np.nan)
    acov = _autocovariance(x)
    chain_var = acov[:, 0] * n / (n - 1)
    mean_var = chain_var.mean(axis=0)
    var_plus = mean_var * (n - 1) / n
    if chains > 1:
        var_plus = var_plus + x.mean(axis=1).var(axis=0, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        rho = 1.0 - (mean_var - acov.mean(axis=0)) / var_plus
    rho[0] = 1.0
    m = (n // 2) * 2
    pairs = rho[0:m:2] + rho[1:m:2]
    # Initial positive then monotone sequence: clip negatives and enforce decrease.
    tail = np.minimum.accumulate(np.clip(pairs[1:], 0.0, None), axis=0)
    tau = -1.0 + 2.0 * (pairs[0] + tail.sum(axis=0))
    # Antithetic draws (a lag-1 autocorrelation near -1) can make tau negative; like
    # Stan, bound it below so that ESS is at most draws * log10(draws), never negative.
    tau = np.maximum(tau, 1.0 / np.log10(chains * n))
    with np.errstate(divide="ignore", invalid="ignore"):
        ess = chains * n / tau
    return np.where(var_plus > 0, ess, np.nan)
