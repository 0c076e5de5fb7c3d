"""Convergence diagnostics of MCMC draws, as Stan and ArviZ define them today.

Rank-normalised split R-hat and bulk/tail effective sample size follow
Vehtari, Gelman, Simpson, Carpenter and Bürkner (2021), "Rank-normalization,
folding, and localization: an improved R-hat for assessing convergence of
MCMC", with the details of ArviZ's implementation (Blom's offset 3/8 for the
normal scores, Geyer's initial positive then monotone sequence, ESS at most
`N log10 N`), so that the numbers agree with `arviz.summary` on the same draws.
One difference: R-hat of a single chain is computed (on its two halves), where
ArviZ gives NaN.

E-BFMI is Betancourt's estimated Bayesian fraction of missing information of
each chain's energy.

Every function takes draws of shape `(chains, draws, *shape)` and is vectorised
over `shape`; it returns an array of shape `shape`. Too few draws (fewer than
4) or draws with a NaN give NaN.
"""

from __future__ import annotations

import numpy as np
import torch

MIN_DRAWS = 4
TAIL_PROBS = (0.05, 0.95)
_BLOM = 3.0 / 8.0


def _columns(draws: np.ndarray | torch.Tensor) -> tuple[np.ndarray, tuple[int, ...]]:
    """Draws as float64 `(chains, n, K)` and the trailing shape to give back."""
    if isinstance(draws, torch.Tensor):
        draws = draws.detach().cpu().to(torch.float64).numpy()
    x = np.asarray(draws, dtype=np.float64)
    if x.ndim < 2:
        raise ValueError(f"expected draws of shape (chains, draws, ...), got {x.shape}")
    shape = x.shape[2:]
    return x.reshape(x.shape[0], x.shape[1], -1), shape


def _split(x: np.ndarray) -> np.ndarray:
    """Each chain cut into its first and last halves (the middle draw of an odd one dropped)."""
    half = x.shape[1] // 2
    return np.concatenate([x[:, :half], x[:, x.shape[1] - half :]], axis=0)


def average_ranks(flat: np.ndarray) -> np.ndarray:
    """Ranks from 1 along axis 0, ties given their average rank (scipy's "average")."""
    n = flat.shape[0]
    order = np.argsort(flat, axis=0, kind="stable")
    ordered = np.take_along_axis(flat, order, axis=0)
    index = np.arange(n)[:, None]
    starts = np.ones_like(ordered, dtype=bool)
    starts[1:] = ordered[1:] != ordered[:-1]
    ends = np.ones_like(ordered, dtype=bool)
    ends[:-1] = ordered[1:] != ordered[:-1]
    first = np.maximum.accumulate(np.where(starts, index, 0), axis=0)
    last = np.minimum.accumulate(np.where(ends, index, n)[::-1], axis=0)[::-1]
    ranks = np.empty_like(flat)
    np.put_along_axis(ranks, order, (first + last) / 2.0 + 1.0, axis=0)
    return ranks


def _normal_scores(x: np.ndarray) -> np.ndarray:
    """Rank-normalise each column over all its chains and draws: Phi^-1((r - 3/8) / (S + 1/4))."""
    chains, n, k = x.shape
    flat = x.reshape(chains * n, k)
    size = flat.shape[0]
    p = (average_ranks(flat) - _BLOM) / (size - 2 * _BLOM + 1)
    return torch.special.ndtri(torch.from_numpy(p)).numpy().reshape(x.shape)


def _rhat_of(x: np.ndarray) -> np.ndarray:
    """Classic R-hat of already split chains, per column."""
    n = x.shape[1]
    between = n * x.mean(axis=1).var(axis=0, ddof=1)
    within = x.var(axis=1, ddof=1).mean(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.sqrt((between / within + n - 1) / n)


def _autocovariance(x: np.ndarray) -> np.ndarray:
    """Autocovariance along the draws (1/n normalised), by FFT."""
    n = x.shape[1]
    centred = x - x.mean(axis=1, keepdims=True)
    size = 1 << (2 * n - 1).bit_length()
    f = np.fft.rfft(centred, n=size, axis=1)
    return np.fft.irfft(f * np.conjugate(f), n=size, axis=1)[:, :n] / n


def _ess_of(x: np.ndarray) -> np.ndarray:
    """ESS of chains `(chains, n, K)` per column (Geyer's initial monotone sequence).

    The sequential rule (pairs of autocorrelations summed while positive, then
    made non-increasing) is computed for all columns at once: the sum stops at
    the first pair that is not positive, and the running minimum of the pairs
    before it is their monotone version.
    """
    chains, n, k = x.shape
    total = chains * n
    acov = _autocovariance(x)
    mean_var = acov[:, 0].mean(axis=0) * n / (n - 1.0)
    var_plus = mean_var * (n - 1.0) / n
    if chains > 1:
        var_plus = var_plus + x.mean(axis=1).var(axis=0, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        rho = 1.0 - (mean_var - acov.mean(axis=0)) / var_plus
    rho[0] = 1.0
    last = max((n - 3) // 2, 0)  # the last pair Geyer's loop looks at
    pairs = rho[0 : 2 * last + 1 : 2] + rho[1 : 2 * last + 2 : 2]
    positive = pairs > 0
    first_bad = np.where(positive.all(axis=0), last + 1, np.argmin(positive, axis=0))
    m = np.minimum(first_bad, last)  # pairs 0..m-1 are summed, the even half of pair m too
    used = np.arange(pairs.shape[0])[:, None] < m
    monotone = np.minimum.accumulate(np.where(used, pairs, np.inf), axis=0)
    summed = np.where(used, monotone, 0.0).sum(axis=0)
    cols = np.arange(k)
    even = rho[2 * m, cols]
    stored = (m >= 1) & (pairs[m, cols] >= 0)
    tail = np.where(m == 0, 1.0, np.where((even > 0) | stored, even, 0.0))
    tau = -1.0 + 2.0 * summed + tail
    tau = np.maximum(tau, 1.0 / np.log10(total))
    with np.errstate(divide="ignore", invalid="ignore"):
        ess = total / tau
    constant = (x.max(axis=(0, 1)) - x.min(axis=(0, 1))) < np.finfo(float).resolution
    ess = np.where(np.isnan(rho[: 2 * last + 2]).any(axis=0), np.nan, ess)
    return np.where(constant, float(total), ess)


def _valid(x: np.ndarray) -> np.ndarray:
    return ~np.isnan(x).any(axis=(0, 1))


def rhat(draws: np.ndarray | torch.Tensor) -> np.ndarray:
    """Rank-normalised split R-hat: the larger of the bulk and the folded (tail) R-hat."""
    x, shape = _columns(draws)
    if x.shape[1] < MIN_DRAWS:
        return np.full(shape, np.nan)
    split = _split(x)
    bulk = _rhat_of(_normal_scores(split))
    folded = np.abs(split - np.median(split.reshape(-1, split.shape[2]), axis=0))
    tail = _rhat_of(_normal_scores(folded))
    out = np.where(_valid(x), np.maximum(bulk, tail), np.nan)
    return out.reshape(shape)


def ess_bulk(draws: np.ndarray | torch.Tensor) -> np.ndarray:
    """Bulk ESS: the ESS of the rank-normalised split chains."""
    x, shape = _columns(draws)
    if x.shape[1] < MIN_DRAWS:
        return np.full(shape, np.nan)
    out = np.where(_valid(x), _ess_of(_normal_scores(_split(x))), np.nan)
    return out.reshape(shape)


def ess_tail(draws: np.ndarray | torch.Tensor) -> np.ndarray:
    """Tail ESS: the smaller ESS of the indicators of the 5% and 95% quantiles."""
    x, shape = _columns(draws)
    if x.shape[1] < MIN_DRAWS:
        return np.full(shape, np.nan)
    flat = x.reshape(-1, x.shape[2])
    out = np.full(x.shape[2], np.inf)
    for p in TAIL_PROBS:
        q = quantiles(flat, p)
        out = np.minimum(out, _ess_of(_split((x <= q).astype(np.float64))))
    out = np.where(_valid(x), out, np.nan)
    return out.reshape(shape)


def quantiles(flat: np.ndarray, p: float) -> np.ndarray:
    """The `p` quantile of each column of `(N, K)`, R's type 7, computed as ArviZ does.

    (`numpy.quantile` is the same definition, but its interpolation can land a
    rounding error off a draw that is exactly the quantile, which moves the
    indicator `draw <= quantile` of the tail ESS.)
    """
    ordered = np.sort(flat, axis=0)
    n = ordered.shape[0]
    aleph = n * p + 1.0 - p
    k = int(np.floor(np.clip(aleph, 1, n - 1)))
    gamma = float(np.clip(aleph - k, 0.0, 1.0))
    return (1.0 - gamma) * ordered[k - 1] + gamma * ordered[min(k, n - 1)]


def e_bfmi(energy: np.ndarray | torch.Tensor) -> np.ndarray:
    """Per chain: mean squared change of the energy over its variance (`(chains, draws)`)."""
    e, _ = _columns(energy)
    e = e[:, :, 0]
    if e.shape[1] < 2:
        return np.full(e.shape[0], np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.square(np.diff(e, axis=1)).mean(axis=1) / e.var(axis=1, ddof=1)
