"""The posterior summary a run prints: a row per site element, and warnings with remedies.

Columns are Stan's and ArviZ's: mean, sd, the 5%, 50% and 95% quantiles,
bulk and tail ESS and rank-normalised R-hat (`convergence`). A fit is not
to be trusted, and a warning says so with the usual remedy, when

- R-hat of any element is above 1.01,
- bulk or tail ESS of any element is under 100 per chain,
- any draw after warmup diverged,
- E-BFMI of any chain is under 0.3;

hitting the maximum tree depth is reported too (it costs efficiency, not
validity). Every element's numbers are computed; a site with many elements
lists its first `rows_per_site` and, in `sites`, its worst R-hat and ESS.
Draws from a variational guide are independent, so their summary has no
R-hat or ESS columns (`diagnostics=False`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from qvr_core.inference import convergence
from qvr_core.text.units import element_label

RHAT_MAX = 1.01
ESS_PER_CHAIN = 100
BFMI_MIN = 0.3
#: A chain whose median energy is above this quantile of the energies of the chain lowest
#: in energy sits where that chain almost never goes (`_apart_chains`).
APART_QUANTILE = 0.99
ROWS_PER_SITE = 12
QUANTILES = (0.05, 0.5, 0.95)
CHUNK = 2048

#: The remedies the summary and the run view (`posterior.view`) give: written once.
DIVERGENCE_REMEDY = (
    "raise the target acceptance (--target-accept 0.9 or 0.95: smaller steps) or "
    "reparameterise the model (e.g. non-centred for hierarchical scales)"
)
E_BFMI_REMEDY = "reparameterise the model (e.g. non-centred) or give weakly informative priors"


@dataclass(frozen=True)
class FitWarning:
    """One reason not to trust the fit: `kind`, what was seen, and what to do about it."""

    kind: str
    message: str
    remedy: str

    def to_dict(self) -> dict[str, str]:
        return {"kind": self.kind, "message": self.message, "remedy": self.remedy}


@dataclass(frozen=True)
class SamplerStats:
    """Per draw after warmup, shape `(chains, draws)`; `max_tree_depth` the kernel's limit."""

    diverging: np.ndarray
    tree_depth: np.ndarray
    energy: np.ndarray
    max_tree_depth: int


@dataclass
class Summary:
    rows: list[dict[str, Any]]
    sites: dict[str, dict[str, Any]]
    warnings: list[FitWarning]
    chains: int
    draws: int
    diagnostics: bool
    sampler: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (NaN stays NaN: the callers' JSON writers turn it into null)."""
        return {
            "chains": self.chains,
            "draws": self.draws,
            "rows": self.rows,
            "sites": self.sites,
            "warnings": [w.to_dict() for w in self.warnings],
            **self.sampler,
        }


def summarize(
    draws: Mapping[str, np.ndarray],
    stats: SamplerStats | None = None,
    *,
    diagnostics: bool = True,
    rows_per_site: int = ROWS_PER_SITE,
) -> Summary:
    """The summary of `draws` (site -> `(chains, draws, *shape)`), with `stats` of a sampler."""
    rows: list[dict[str, Any]] = []
    sites: dict[str, dict[str, Any]] = {}
    chains = n = 0
    for name, value in draws.items():
        x = np.asarray(value, dtype=np.float64)
        chains, n = x.shape[:2]
        shape = x.shape[2:]
        flat = x.reshape(chains * n, -1)
        columns = _columns(x, flat, diagnostics)
        size = flat.shape[1]
        for i in range(min(size, rows_per_site)):
            index, label = element_label(name, shape, i)
            rows.append(
                {"site": name, "index": index, "label": label}
                | {k: float(v[i]) for k, v in columns.items()}
            )
        site: dict[str, Any] = {
            "shape": list(shape),
            "size": size,
            "shown": min(size, rows_per_site),
        }
        if diagnostics and size:
            site.update(
                r_hat_max=_worst(columns["r_hat"], np.nanmax),
                ess_bulk_min=_worst(columns["ess_bulk"], np.nanmin),
                ess_tail_min=_worst(columns["ess_tail"], np.nanmin),
            )
        sites[name] = site
    summary = Summary(rows, sites, [], chains, n, diagnostics)
    if diagnostics and draws and n < convergence.MIN_DRAWS:
        summary.warnings.append(
            FitWarning(
                "draws",
                f"only {n} draws per chain: R-hat and ESS need at least {convergence.MIN_DRAWS}, "
                "so convergence cannot be judged",
                "run more iterations (more --steps, of which half are draws)",
            )
        )
    elif diagnostics:
        summary.warnings.extend(_convergence_warnings(sites, chains))
    if stats is not None:
        summary.sampler = _sampler(stats)
        summary.warnings.extend(_sampler_warnings(summary.sampler, stats))
    return summary


def _columns(x: np.ndarray, flat: np.ndarray, diagnostics: bool) -> dict[str, np.ndarray]:
    """Every statistic of every element, a block of elements at a time (a lifted network
    has tens of thousands, and the rank normalisation copies its block several times)."""
    size = flat.shape[1]
    if size > CHUNK:
        x3 = x.reshape(x.shape[0], x.shape[1], size)
        parts = [
            _columns(x3[:, :, i : i + CHUNK], flat[:, i : i + CHUNK], diagnostics)
            for i in range(0, size, CHUNK)
        ]
        return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
    out = {
        "mean": flat.mean(axis=0),
        "sd": flat.std(axis=0, ddof=1) if flat.shape[0] > 1 else np.full(size, np.nan),
    }
    for p in QUANTILES:
        out[f"q{round(p * 100)}"] = convergence.quantiles(flat, p)
    if diagnostics:
        out["ess_bulk"] = convergence.ess_bulk(x).reshape(-1)
        out["ess_tail"] = convergence.ess_tail(x).reshape(-1)
        out["r_hat"] = convergence.rhat(x).reshape(-1)
    return out


def _worst(values: np.ndarray, reduce: Any) -> float:
    return math.nan if values.size == 0 or np.isnan(values).all() else float(reduce(values))


def _convergence_warnings(sites: dict[str, dict[str, Any]], chains: int) -> list[FitWarning]:
    out = []
    high = {k: s["r_hat_max"] for k, s in sites.items() if s.get("r_hat_max", 0) > RHAT_MAX}
    if high:
        out.append(
            FitWarning(
                "r_hat",
                f"R-hat above {RHAT_MAX} ({_worst_of(high, max)}): the chains disagree, "
                "they have not converged to one distribution",
                "run longer chains (more --steps, of which half are warmup) and more than one "
                "chain; if it stays high, reparameterise the model (e.g. non-centred)",
            )
        )
    floor = ESS_PER_CHAIN * max(chains, 1)
    low = {
        k: min(s["ess_bulk_min"], s["ess_tail_min"])
        for k, s in sites.items()
        if min(s.get("ess_bulk_min", math.inf), s.get("ess_tail_min", math.inf)) < floor
    }
    if low:
        out.append(
            FitWarning(
                "ess",
                f"effective sample size under {ESS_PER_CHAIN} per chain (< {floor}; "
                f"{_worst_of(low, min)}): means and quantiles are estimated from too few "
                "independent draws",
                "run more iterations (more --steps); a small ESS with a high R-hat means "
                "the chains have not mixed",
            )
        )
    return out


def _worst_of(values: dict[str, float], pick: Any) -> str:
    name = pick(values, key=values.__getitem__)
    return f"worst {name}: {values[name]:.4g}" + (
        f"; {len(values)} sites" if len(values) > 1 else ""
    )


def _sampler(stats: SamplerStats) -> dict[str, Any]:
    saturated = stats.tree_depth >= stats.max_tree_depth
    return {
        "divergences": int(np.asarray(stats.diverging).sum()),
        "divergences_per_chain": [int(v) for v in np.asarray(stats.diverging).sum(axis=1)],
        "tree_depth_saturated": int(saturated.sum()),
        "max_tree_depth": stats.max_tree_depth,
        "e_bfmi": [float(v) for v in convergence.e_bfmi(stats.energy)],
    }


def _apart_chains(energy: np.ndarray) -> tuple[list[int], int]:
    """The chains whose median energy is above the `APART_QUANTILE` quantile of the chain
    lowest in median energy, and that chain. Chains of one distribution have their medians
    near one another, far inside each other's range; a chain stuck in a local mode (a
    slower oscillation of an ODE, a collapsed scale) keeps its whole range away. Two chains
    stuck together are found too: they are compared with the lowest, not with the rest."""
    e = np.asarray(energy, dtype=np.float64)
    if e.ndim != 2 or e.shape[0] < 2 or e.shape[1] < 2 or not np.isfinite(e).all():
        return [], 0
    medians = np.median(e, axis=1)
    best = int(np.argmin(medians))
    ceiling = float(np.quantile(e[best], APART_QUANTILE))
    return [c for c in range(e.shape[0]) if medians[c] > ceiling], best


def _sampler_warnings(sampler: dict[str, Any], stats: SamplerStats) -> list[FitWarning]:
    out = []
    total = int(np.asarray(stats.diverging).size)
    if sampler["divergences"]:
        out.append(
            FitWarning(
                "divergences",
                f"{sampler['divergences']} of {total} draws after warmup diverged: the sampler "
                "missed a region of high curvature and the draws may be biased",
                DIVERGENCE_REMEDY,
            )
        )
    if sampler["tree_depth_saturated"]:
        out.append(
            FitWarning(
                "tree_depth",
                f"{sampler['tree_depth_saturated']} of {total} draws hit the maximum tree depth "
                f"{stats.max_tree_depth}: trajectories were cut short, so sampling is slow",
                "raise the maximum tree depth (--max-tree-depth) or reparameterise the model",
            )
        )
    apart, best = _apart_chains(stats.energy)
    if apart:
        one = len(apart) == 1
        shown = ", ".join(str(c) for c in apart)
        median = "its median" if one else "the median"
        each, they = ("", "it is") if one else (" of each", "they are")
        out.append(
            FitWarning(
                "apart",
                f"{'chain' if one else 'chains'} {shown} stayed where chain {best} almost never "
                f"went: {median} energy (the negative log density plus the momentum's){each} "
                f"is above chain {best}'s {APART_QUANTILE:.0%} quantile, so {they} stuck in "
                "another mode or region, of much lower density",
                "run more chains or another --seed to see how often a chain lands there; "
                "priors or a parameterisation that rule such a mode out remove it (a "
                "mode of much lower density holds little of the posterior)",
            )
        )
    low = [(c, v) for c, v in enumerate(sampler["e_bfmi"]) if v < BFMI_MIN]
    if low:
        shown = ", ".join(f"chain {c}: {v:.3g}" for c, v in low)
        out.append(
            FitWarning(
                "e_bfmi",
                f"E-BFMI under {BFMI_MIN} ({shown}): the momentum resampling explores the "
                "energy poorly, typically heavy tails or a funnel",
                E_BFMI_REMEDY,
            )
        )
    return out
