"""Whether simulation-based calibration's ranks are uniform, and what it means if not.

`qvr_core.runs.sbc` ranks each simulated true value among its fit's `L` draws (0 to
`L`). If the fits are right the ranks are uniform on those `L + 1` values, so their
empirical CDF stays within a simultaneous band around the uniform CDF: the band
ArviZ computes (`ecdf_confidence_band`, the "optimized" method of Säilynoja, Bürkner
and Vehtari 2022, deterministic), 95% by default, at `min(L, N)` evaluation points for
N simulations. An element whose ECDF leaves it is miscalibrated, and the ECDF's
difference from the uniform CDF (the ECDF-difference plot's curve) says how:

- above the uniform CDF in the lower half, below it in the upper half (many ranks
  at both ends, a U): the posterior is too narrow;
- the other way round (ranks heaped in the middle): too wide;
- above it throughout (low ranks: draws mostly above the true value): the fit
  overestimates the parameter; below throughout: it underestimates it.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np

from qvr_core.draws import arviz_adapter
from qvr_core.text.units import element_label

PROB = 0.95
CALIBRATED = "calibrated"
TOO_NARROW = "posterior too narrow"
TOO_WIDE = "posterior too wide"
OVERESTIMATES = "overestimates"
UNDERESTIMATES = "underestimates"
REMEDIES = {
    TOO_NARROW: (
        "the fits are overconfident: a sampler that misses part of the posterior (look "
        "for divergences or R-hat warnings; run longer), a guide too narrow for it "
        "(SVI's mean-field Normal: try --guide mvn, or NUTS), or a model that fits with "
        "more information than it simulates with (a `score` term adds to the fit's "
        "density, never to a simulation)"
    ),
    TOO_WIDE: (
        "the fits are underconfident: the model that fits is not the one that simulated "
        "(a scale or a prior that differs between them), or draws too correlated to rank"
    ),
    OVERESTIMATES: (
        "the fits are shifted above the truth: a bug in the model (a sign, an offset, a "
        "prior's location), a sampler that has not converged, or with SVI a guide that "
        "cannot take the posterior's shape (try --method nuts)"
    ),
    UNDERESTIMATES: (
        "the fits are shifted below the truth: a bug in the model (a sign, an offset, a "
        "prior's location), a sampler that has not converged, or with SVI a guide that "
        "cannot take the posterior's shape (the mean-field Normal shrinks a hierarchical "
        "scale: try --method nuts)"
    ),
}


@dataclass(frozen=True)
class Element:
    """One parameter element's ranks over the simulations, judged."""

    site: str
    index: list[int]
    label: str
    simulations: int
    mean: float  # the mean fractional rank, (rank + 0.5) / (L + 1): 0.5 when uniform
    outside: float  # how far the ECDF leaves the band at worst (0: inside it)
    verdict: str


@dataclass
class Calibration:
    draws: int  # L: ranks run from 0 to L
    prob: float = PROB
    elements: list[Element] = field(default_factory=list)

    @property
    def miscalibrated(self) -> list[Element]:
        return [e for e in self.elements if e.verdict != CALIBRATED]

    def to_json(self) -> dict[str, Any]:
        return {
            "draws": self.draws,
            "prob": self.prob,
            "elements": [
                {
                    "site": e.site,
                    "index": e.index,
                    "label": e.label,
                    "simulations": e.simulations,
                    "mean_rank": e.mean,
                    "outside": e.outside,
                    "verdict": e.verdict,
                }
                for e in self.elements
            ],
            "remedies": {v: REMEDIES[v] for v in sorted({e.verdict for e in self.miscalibrated})},
        }


def calibration(ranks: dict[str, np.ndarray], draws: int, prob: float = PROB) -> Calibration:
    """Each element of each site's ranks `(simulation, *shape)` judged (see the module)."""
    out = Calibration(draws, prob)
    for site, values in ranks.items():
        shape = tuple(values.shape[1:])
        flat = values.reshape(values.shape[0], -1)
        for i in range(flat.shape[1]):
            index, label = element_label(site, shape, i)
            out.elements.append(judge(site, index, label, flat[:, i], draws, prob))
    return out


def judge(
    site: str, index: list[int], label: str, ranks: np.ndarray, draws: int, prob: float = PROB
) -> Element:
    """One element's verdict from its ranks (0 to `draws`) over the simulations."""
    n = int(ranks.shape[0])
    fractions = (ranks.astype(float) + 0.5) / (draws + 1)
    mean = float(fractions.mean()) if n else math.nan
    if n < 2:
        return Element(site, index, label, n, mean, 0.0, CALIBRATED)
    found = curve(ranks, draws, prob)
    outside, difference = found.outside, found.difference
    if outside <= 0.0:
        return Element(site, index, label, n, mean, 0.0, CALIBRATED)
    points = difference.shape[0]
    low, high = difference[: points // 2].mean(), difference[points - points // 2 :].mean()
    if low > 0 > high:
        verdict = TOO_NARROW
    elif low < 0 < high:
        verdict = TOO_WIDE
    else:
        verdict = OVERESTIMATES if low + high > 0 else UNDERESTIMATES
    return Element(site, index, label, n, mean, outside, verdict)


@dataclass(frozen=True)
class Curve:
    """The ranks' ECDF against the uniform CDF: what the verdict judges and the
    ECDF-difference plot draws (`qvr plot --kind sbc`)."""

    points: np.ndarray  # the uniform CDF at the evaluation points: the fractional ranks
    difference: np.ndarray  # the ECDF less the uniform CDF there
    lower: np.ndarray  # ArviZ's simultaneous band, as differences from the uniform CDF
    upper: np.ndarray

    @property
    def outside(self) -> float:
        """How far (in probability) the ECDF leaves the band at worst (0 when inside)."""
        worst = np.maximum(self.lower - self.difference, self.difference - self.upper)
        return max(float(worst.max(initial=0.0)), 0.0)


def curve(ranks: np.ndarray, draws: int, prob: float = PROB) -> Curve:
    """The ranks' (0 to `draws`) ECDF and its `prob` band at the evaluation points."""
    ks, lower, upper = band(int(ranks.shape[0]), draws, prob)
    cdf = ks / (draws + 1)
    ecdf = (ranks[None, :] <= (ks - 1)[:, None]).mean(axis=1)
    return Curve(cdf, ecdf - cdf, lower - cdf, upper - cdf)


@lru_cache(maxsize=32)
def band(n: int, draws: int, prob: float = PROB) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The evaluation points (`k`: P(rank <= k - 1) = k / (draws + 1)) and ArviZ's band
    there for `n` simulations: the same for every element of a run, so made once."""
    ks = np.unique(np.linspace(1, draws, num=min(draws, n)).round().astype(int))
    cdf = ks / (draws + 1)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        lower, upper = arviz_adapter.ecdf_band(n, cdf, cdf, prob=prob, method="optimized")
    return ks, np.asarray(lower), np.asarray(upper)
