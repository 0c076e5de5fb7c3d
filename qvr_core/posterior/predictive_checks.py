"""Posterior (and prior) predictive checks of a run: does the model make data like the data?

For each observed site with draws in `posterior_predictive` (`qvr run --output
--predictive`) and values in `observed_data`:

- test statistics of the site's values (all its entries together): mean, sd, min,
  max, and for a continuous site the excess kurtosis (sensitive to modes and tails
  a model lacks: a bimodal sample has a negative one, a heavy-tailed one a large
  one), for a discrete site the proportion of zeros (of the most frequent value
  when the data hold no zero). Each is computed on the data and on every
  replicated data set; its Bayesian p-value is P(T(y_rep) >= T(y)), ties counted
  half (a discrete statistic has many). A p-value below 0.05 or above 0.95 is a
  warning: the model does not reproduce that feature of the data.
- LOO-PIT (`az.loo_pit`): each observation's predictive CDF value under its
  leave-one-out predictive distribution (PSIS weights); uniform on (0, 1) for a
  model that predicts as the data behave. Its uniformity is measured by the
  Kolmogorov-Smirnov distance to the uniform CDF and decided by ArviZ's
  simultaneous 99% ECDF band (`arviz.stats.ecdf_utils.ecdf_confidence_band`, the
  band `az.plot_ecdf` draws): an ECDF that leaves it is a warning, with its shape
  in words: U-shaped (values pile up near 0 and 1: the data are more dispersed
  than the model predicts, the model underdispersed), inverted-U (piled in the
  middle: the model overdispersed), skewed (mean far from 1/2: a bias).
  For integer data the PIT is randomised (Czado, Gneiting and Held 2009): P(y_rep <
  y_i) + u_i P(y_rep = y_i) under the PSIS weights (`az.psislw`), u_i uniform from a
  fixed generator, which is uniform for a model that predicts as the data behave
  (ArviZ's smoothing of integer data is not: binary data of a correct logistic model
  came out U-shaped, "underdispersed"). LOO-PIT needs the site's log-likelihood with the data's
  shape: a site whose terms are per group (a `marginalize` scope, a seed
  program's sequences) has none, and says so.

With 5 statistics per site some p-value of a good model falls outside (0.05,
0.95) now and then (less often than 10% each: posterior predictive p-values
concentrate near 1/2); a warning is a reason to look, not a verdict.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from qvr_core.draws import arviz_adapter
from qvr_core.draws.arviz_adapter import InferenceData
from qvr_core.posterior.comparison import FitWarning

#: A p-value outside (LOW, HIGH) is a warning.
LOW, HIGH = 0.05, 0.95

#: The probability of ArviZ's simultaneous ECDF band LOO-PIT is held against.
BAND = 0.99

#: Where the LOO-PIT ECDF is held against the band (fixed, so the band is calibrated).
EVAL_POINTS = 100

#: How far (in standard errors) a LOO-PIT feature must be from a uniform's to name a shape.
SHAPE_Z = 2.0

Statistic = Callable[[np.ndarray], np.ndarray]


@dataclass(frozen=True)
class StatisticCheck:
    """One test statistic of a site: its value on the data, its mean and sd over the
    replicated data sets, and the Bayesian p-value P(T(y_rep) >= T(y))."""

    name: str
    observed: float
    replicated_mean: float
    replicated_sd: float
    p_value: float

    @property
    def flagged(self) -> bool:
        return not LOW <= self.p_value <= HIGH

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "observed": _finite(self.observed),
            "replicated_mean": _finite(self.replicated_mean),
            "replicated_sd": _finite(self.replicated_sd),
            "p_value": _finite(self.p_value),
            "flagged": self.flagged,
        }


@dataclass(frozen=True)
class LooPit:
    """A site's LOO-PIT values (`az.loo_pit`, flattened), their KS distance to the
    uniform, whether their ECDF leaves ArviZ's simultaneous `BAND` band, and the shape
    of the departure ("uniform", "U-shaped", "inverted-U", "skewed high", "skewed
    low", or "other")."""

    values: tuple[float, ...]
    ks_distance: float
    outside_band: bool
    shape: str
    mean: float
    tails: float  # the share below 0.1 or above 0.9 (0.2 when uniform)
    middle: float  # the share in [0.25, 0.75] (0.5 when uniform)

    def to_json(self) -> dict[str, Any]:
        return {
            "ks_distance": _finite(self.ks_distance),
            "outside_band": self.outside_band,
            "band": BAND,
            "shape": self.shape,
            "mean": _finite(self.mean),
            "tails": _finite(self.tails),
            "middle": _finite(self.middle),
            "values": [_finite(v) for v in self.values],
        }


@dataclass(frozen=True)
class SiteCheck:
    """The checks of one observed site; `loo_pit` None with the reason in `note`."""

    site: str
    discrete: bool
    size: int
    statistics: tuple[StatisticCheck, ...]
    loo_pit: LooPit | None
    note: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "site": self.site,
            "discrete": self.discrete,
            "size": self.size,
            "statistics": [s.to_json() for s in self.statistics],
            "loo_pit": None if self.loo_pit is None else self.loo_pit.to_json(),
            "note": self.note,
        }


@dataclass(frozen=True)
class PredictiveCheck:
    """The predictive checks of a run, per observed site, from `group`
    ("posterior_predictive" or "prior_predictive"), with the warnings they raise."""

    group: str
    sites: tuple[SiteCheck, ...]
    warnings: tuple[FitWarning, ...]

    def site(self, name: str) -> SiteCheck:
        for s in self.sites:
            if s.site == name:
                return s
        raise KeyError(name)

    def to_json(self) -> dict[str, Any]:
        return {
            "group": self.group,
            "sites": [s.to_json() for s in self.sites],
            "warnings": [w.to_json() for w in self.warnings],
        }


class PredictiveCheckError(ValueError):
    """A run without what a check needs (predictive draws, observed data)."""


def check_predictive(
    idata: InferenceData, *, group: str = "posterior_predictive", name: str = "the run"
) -> PredictiveCheck:
    """The predictive checks of every observed site of a run (`arviz.InferenceData`);
    `group="prior_predictive"` checks the prior's draws (no LOO-PIT: it is of the
    posterior). Raises `PredictiveCheckError` when the run has no such draws."""
    groups = set(arviz_adapter.groups(idata))
    if group not in groups:
        flag = "--predictive" if group == "posterior_predictive" else "--method prior"
        raise PredictiveCheckError(
            f"{name} has no {group} group: rerun with qvr run --output ... {flag}"
        )
    if "observed_data" not in groups:
        raise PredictiveCheckError(f"{name} has no observed_data group: nothing to check against")
    predictive, observed = idata[group], idata.observed_data
    sites = [str(v) for v in observed.data_vars if v in predictive.data_vars]
    if not sites:
        raise PredictiveCheckError(
            f"{name}: no observed site has draws in {group} (observed: "
            f"{', '.join(str(v) for v in observed.data_vars)})"
        )
    checks: list[SiteCheck] = []
    found: list[FitWarning] = []
    for site in sites:
        check = _site(idata, group, site)
        checks.append(check)
        found.extend(_warnings(check, name))
    return PredictiveCheck(group, tuple(checks), tuple(found))


def _site(idata: InferenceData, group: str, site: str) -> SiteCheck:
    y = np.asarray(idata.observed_data[site].values, dtype=float)
    rep = np.asarray(idata[group][site].values, dtype=float)
    draws = rep.reshape(rep.shape[0] * rep.shape[1], -1)
    flat = y.reshape(-1)
    if draws.shape[1] != flat.size:
        return SiteCheck(
            site,
            False,
            int(flat.size),
            (),
            None,
            f"its draws have shape {rep.shape[2:]}, the data {y.shape}: not compared",
        )
    discrete = _integers(flat) and _integers(draws)
    statistics = tuple(
        _statistic(label, fn, flat, draws) for label, fn in _statistics(flat, discrete)
    )
    pit: LooPit | None = None
    note = None
    if group != "posterior_predictive":
        note = "LOO-PIT is of the posterior predictive"
    else:
        pit, note = _loo_pit(idata, site, y, rep, discrete)
    return SiteCheck(site, discrete, int(flat.size), statistics, pit, note)


# ---------------------------------------------------------------- test statistics


def _statistics(y: np.ndarray, discrete: bool) -> list[tuple[str, Statistic]]:
    """The statistics of a site's values (each maps (S, n) -> (S,))."""
    out: list[tuple[str, Statistic]] = [
        ("mean", lambda a: a.mean(-1)),
        ("sd", lambda a: a.std(-1, ddof=1) if a.shape[-1] > 1 else np.zeros(a.shape[:-1])),
        ("min", lambda a: a.min(-1)),
        ("max", lambda a: a.max(-1)),
    ]
    if not discrete:
        if y.size > 3:
            out.append(("kurtosis", _kurtosis))
        return out
    if np.any(y == 0):
        out.append(("proportion of zeros", lambda a: (a == 0).mean(-1)))
    else:
        values, counts = np.unique(y, return_counts=True)
        top = float(values[int(np.argmax(counts))])
        out.append((f"proportion of {top:g}", lambda a: (a == top).mean(-1)))
    return out


def _kurtosis(a: np.ndarray) -> np.ndarray:
    """Excess kurtosis (0 for a normal sample; -2 for two equal spikes), per row."""
    centred = a - a.mean(-1, keepdims=True)
    var = (centred**2).mean(-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray((centred**4).mean(-1) / var**2 - 3.0)


def _statistic(label: str, fn: Statistic, y: np.ndarray, draws: np.ndarray) -> StatisticCheck:
    observed = float(fn(y[None])[0])
    replicated = np.asarray(fn(draws), dtype=float)
    finite = replicated[np.isfinite(replicated)]
    if not math.isfinite(observed) or not finite.size:
        return StatisticCheck(label, observed, math.nan, math.nan, math.nan)
    p = float(np.mean(finite > observed) + 0.5 * np.mean(finite == observed))
    sd = float(finite.std(ddof=1)) if finite.size > 1 else 0.0
    return StatisticCheck(label, observed, float(finite.mean()), sd, p)


def _integers(a: np.ndarray) -> bool:
    return bool(a.size) and bool(np.all(np.isfinite(a))) and bool(np.all(a == np.round(a)))


# ---------------------------------------------------------------- LOO-PIT


def _loo_pit(
    idata: InferenceData, site: str, y: np.ndarray, rep: np.ndarray, discrete: bool
) -> tuple[LooPit | None, str | None]:
    if "log_likelihood" not in arviz_adapter.groups(idata):
        return None, "no log_likelihood group: LOO-PIT needs it (rerun with qvr run --output)"
    ll = idata.log_likelihood
    if site not in ll.data_vars:
        return None, (
            f"no log-likelihood term of {site} alone; the run's terms: "
            f"{', '.join(str(v) for v in ll.data_vars)}"
        )
    if tuple(ll[site].shape[2:]) != tuple(y.shape):
        return None, (
            f"its log-likelihood has one term per group {tuple(ll[site].shape[2:])}, the data "
            f"shape {y.shape}: LOO-PIT needs one per observation"
        )
    if discrete:
        return uniformity(randomised_loo_pit(y, rep, ll[site].values)), None
    import xarray as xr

    dims = ll[site].dims
    groups: dict[str, xr.Dataset] = {
        "posterior_predictive": xr.Dataset({site: (dims, rep.astype(np.float64))}),
        "observed_data": xr.Dataset({site: (dims[2:], y.astype(np.float64))}),
        "log_likelihood": xr.Dataset({site: ll[site]}),
    }
    if "posterior" in arviz_adapter.groups(idata):
        groups["posterior"] = idata.posterior
    single = arviz_adapter.of_groups(groups)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PSIS's k warning: comparison counts it
        pit = arviz_adapter.loo_pit(single, y=site)
    values = np.asarray(pit, dtype=np.float64).reshape(-1)
    return uniformity(values), None


def randomised_loo_pit(y: np.ndarray, rep: np.ndarray, log_lik: np.ndarray) -> np.ndarray:
    """The randomised LOO-PIT of integer data: for each observation i, P(y_rep < y_i) +
    u_i P(y_rep = y_i) under its leave-one-out predictive (the draws weighted by PSIS
    of -log p(y_i | theta)), with u_i uniform on (0, 1) from a fixed generator, so the
    same run gives the same values. `rep` and `log_lik` are (chain, draw, *y.shape)."""
    n = int(y.size)
    draws = rep.reshape(-1, n)  # (S, n)
    ll = np.asarray(log_lik, dtype=np.float64).reshape(-1, n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PSIS's k warning: comparison counts it
        log_w, _ = arviz_adapter.psislw(-ll.T)  # (n, S), normalised
    w = np.exp(np.asarray(log_w, dtype=np.float64))
    observed = y.reshape(-1)
    below = np.sum(w * (observed[:, None] > draws.T), axis=1)
    equal = np.sum(w * (observed[:, None] == draws.T), axis=1)
    u = np.random.default_rng(0).uniform(size=n)
    return np.asarray(np.clip(below + u * equal, 0.0, 1.0), dtype=np.float64)


def uniformity(values: np.ndarray) -> LooPit:
    """How far LOO-PIT values are from uniform: KS distance, ArviZ's simultaneous ECDF
    band, and the shape of the departure."""
    u = np.sort(np.clip(values[np.isfinite(values)], 0.0, 1.0))
    n = u.size
    if n == 0:
        return LooPit((), math.nan, False, "no values", math.nan, math.nan, math.nan)
    i = np.arange(1, n + 1)
    ks = float(max(np.max(i / n - u), np.max(u - (i - 1) / n)))
    points = np.linspace(0.0, 1.0, EVAL_POINTS + 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lower, upper = arviz_adapter.ecdf_band(n, points, points, prob=BAND, method="optimized")
    ecdf = np.searchsorted(u, points, side="right") / n
    outside = bool(np.any(ecdf < lower - 1e-12) or np.any(ecdf > upper + 1e-12))
    mean = float(u.mean())
    tails = float(np.mean((u < 0.1) | (u > 0.9)))
    middle = float(np.mean((u >= 0.25) & (u <= 0.75)))
    shape = _shape(n, mean, tails, middle) if outside else "uniform"
    return LooPit(tuple(float(v) for v in values), ks, outside, shape, mean, tails, middle)


def _shape(n: int, mean: float, tails: float, middle: float) -> str:
    """The strongest departure from a uniform's mean (1/2), tails (0.2) and middle (0.5),
    in standard errors; "other" when none is clear (several modes the model lacks)."""
    z = {
        "U-shaped": (tails - 0.2) / math.sqrt(0.2 * 0.8 / n),
        "inverted-U": (middle - 0.5) / math.sqrt(0.25 / n),
        "skewed": abs(mean - 0.5) / math.sqrt(1 / 12 / n),
    }
    best = max(z, key=lambda k: z[k])
    if z[best] < SHAPE_Z:
        return "other"
    if best == "skewed":
        return "skewed high" if mean > 0.5 else "skewed low"
    return best


# ---------------------------------------------------------------- warnings

_REMEDIES = {
    "mean": "a bias: check the mean structure (a missing predictor, the link, the data's units)",
    "sd": "the spread is off: a scale per group, another family (overdispersion: "
    "NegativeBinomial for Poisson), or heavier or lighter tails",
    "min": "the lower tail is off: a heavier-tailed family if the data go further, a "
    "lighter one or a bound if they stop short",
    "max": "the upper tail is off: a heavier-tailed family if the data go further, a "
    "lighter one or a bound if they stop short",
    "kurtosis": "the shape is off: modes or tails the model lacks (a mixture for several "
    "modes, StudentT for heavy tails)",
    "proportion of zeros": "more or fewer zeros than the model makes: a zero-inflated or "
    "hurdle model",
}

_SHAPES = {
    "U-shaped": (
        "U-shaped (values pile up near 0 and 1): the data are more dispersed than the model "
        "predicts, the model underdispersed",
        "a larger or group-level scale, a heavier-tailed or overdispersed family",
    ),
    "inverted-U": (
        "inverted-U (values pile up in the middle): the data are less dispersed than the "
        "model predicts, the model overdispersed",
        "a smaller scale, or predictors that explain more of the spread",
    ),
    "skewed high": (
        "skewed towards 1: the observations lie above their predictions, the model "
        "under-predicts (a bias)",
        "check the mean structure (a missing predictor, the link, an offset)",
    ),
    "skewed low": (
        "skewed towards 0: the observations lie below their predictions, the model "
        "over-predicts (a bias)",
        "check the mean structure (a missing predictor, the link, an offset)",
    ),
    "other": (
        "neither U-shaped, inverted-U nor skewed: the predictive distribution has the "
        "wrong shape (several modes the model lacks, or a skew it does not have)",
        "look at the predictive density against the data (qvr plot --kind ppc); a mixture "
        "for several modes, a skewed family for skewed data",
    ),
}


def _warnings(check: SiteCheck, name: str) -> list[FitWarning]:
    out = []
    for s in check.statistics:
        if not s.flagged:
            continue
        out.append(
            FitWarning(
                "ppc_statistic",
                f"{name}: the model does not reproduce the data's {s.name} of {check.site}: "
                f"{s.observed:.4g} in the data, {s.replicated_mean:.4g} +/- "
                f"{s.replicated_sd:.3g} in the replicated data (p = {s.p_value:.3f})",
                _REMEDIES.get(s.name, "the model misses how often the data take that value"),
            )
        )
    pit = check.loo_pit
    if pit is not None and pit.outside_band:
        what, remedy = _SHAPES.get(pit.shape, _SHAPES["other"])
        out.append(
            FitWarning(
                "loo_pit",
                f"{name}: the LOO-PIT of {check.site} is far from uniform (KS distance "
                f"{pit.ks_distance:.3f}, outside ArviZ's {BAND:.0%} ECDF band): {what}",
                remedy,
            )
        )
    return out


def _finite(v: float) -> float | None:
    return v if math.isfinite(v) else None


__all__ = [
    "LooPit",
    "PredictiveCheck",
    "PredictiveCheckError",
    "SiteCheck",
    "StatisticCheck",
    "check_predictive",
    "uniformity",
]
