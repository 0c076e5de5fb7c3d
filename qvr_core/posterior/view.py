"""The editor's run view after a fit: `fit_view(results)`, the run's draws made small enough
to send and draw.

The inference worker (`qvr_lsp.runs.worker`) calls it on the run's `RunResults` and sends
the dict with its result; the VS Code extension draws it (rank plots per chain, the pair
plot with divergent draws marked, the energy plot with E-BFMI, the forest plot, the
autocorrelation and the predictive check). Everything here is numpy: the numbers are
ArviZ's definitions, computed without ArviZ (an editor's environment may not have it),
and `tests/lsp_commands/test_fit_view.py` checks them against ArviZ.

Per scalar (an element of a site: `theta[3]`), in the sites' order, elements in C order:

- `draws`: per chain, the values at that chain's `draw_index` (at most `max_points`
  evenly spaced draws, plus every divergent draw up to as many again, so that no
  divergence is thinned away from the pair plot); `None` past the value budget;
- `ranks`: per chain, the histogram of the draws' ranks among all chains' draws
  (average ranks, as `az.plot_rank`; its bins: twice Sturges' formula over `rank_edges`);
- `autocorr`: per chain, `az.autocorr` at lags 0 to `MAX_LAG`, to two decimals;
- `intervals`: per chain and combined, `[mean, 25%, 75%, 94% HDI low, high]`
  (the thick and thin lines of `az.plot_forest`).

Besides: `energy` (NUTS: per chain the marginal energy `energy - mean` and the energy
transitions `diff(energy)`, thinned, and `bfmi`, `az.bfmi`), `ppc` (per observed site
its observed values and up to `PPC_DRAWS` replicated draws, each at most `PPC_VALUES`
values, with the support kind: "discrete" when every value is a whole number,
else "continuous"), and `warnings` with remedies for what these plots show.

Bounds: at most `max_scalars` scalars (the rest of a site is counted in its `omitted`),
and at most `max_values` numbers for all of them (draws, ranks, lags and intervals of
every chain): past that the draws per chain shrink to `MIN_POINTS`, then the last
scalars lose their `draws` (their other numbers stay; fewer scalars are shown when even
those do not fit). Numbers keep `SIGNIFICANT` significant digits, so the default
budget is at most some 8 MB of JSON. `bounds` in the result says what was cut.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from qvr_core.draws.series import evenly_spaced
from qvr_core.host.extras import ARVIZ_MODULES, missing
from qvr_core.inference.convergence import average_ranks
from qvr_core.inference.summary import DIVERGENCE_REMEDY, E_BFMI_REMEDY

if TYPE_CHECKING:
    from qvr_core.inference.results import RunResults

VERSION = 1
#: Draws per chain and scalar kept for the trace and pair plots.
MAX_POINTS = 500
#: ... down to this many when the value budget is tight.
MIN_POINTS = 100
#: Numbers of all scalars together (at most some 8 MB of JSON; ranks and lags are short).
MAX_VALUES = 1_000_000
#: Scalars in the view; a site's further elements are counted, not sent.
MAX_SCALARS = 1000
#: Lags of the autocorrelation (ArviZ's `plot_autocorr` default).
MAX_LAG = 100
#: Replicated draws and values per draw of an observed site in the predictive check.
PPC_DRAWS = 50
PPC_VALUES = 1000
HDI_PROB = 0.94
#: Below it the energy plot warns (Betancourt 2016; the summary's threshold too).
BFMI_MIN = 0.3
SIGNIFICANT = 4
#: The autocorrelation lies in [-1, 1]: two decimals are a pixel of its plot.
AUTOCORR_DECIMALS = 2
#: What each scalar's intervals hold, in order.
INTERVALS = ("mean", "q25", "q75", "hdi_low", "hdi_high")


def fit_view(
    results: RunResults,
    *,
    max_points: int = MAX_POINTS,
    max_values: int = MAX_VALUES,
    max_scalars: int = MAX_SCALARS,
) -> dict[str, Any]:
    """The run view's data of `results` (see the module docstring); JSON-ready."""
    if max_points < 2:
        raise ValueError(f"max_points must be 2 or more, not {max_points}")
    groups = results.groups
    method = str(results.attrs.get("method", ""))
    group = next((g for g in ("posterior", "prior") if groups.get(g)), None)
    sites = _numeric(groups.get(group, {})) if group is not None else {}
    stats = groups.get("sample_stats", {})
    chains, draws = next(iter(sites.values())).shape[:2] if sites else (0, 0)
    diverging = _diverging(stats, chains, draws)
    mcmc = "energy" in stats or "diverging" in stats
    ranked = mcmc and chains >= 2 and draws >= 2
    lags = min(MAX_LAG, draws - 1) if mcmc and draws >= 2 else -1
    edges = _rank_edges(chains, draws) if ranked else np.zeros(0)

    total = sum(math.prod(a.shape[2:]) for a in sites.values())
    # the numbers every scalar carries besides its draws: ranks, lags, intervals, its index
    dims = max((a.ndim - 2 for a in sites.values()), default=0)
    fixed = chains * (max(0, len(edges) - 1) + (lags + 1) + len(INTERVALS)) + len(INTERVALS)
    fixed += dims + 1
    shown = min(total, max_scalars, max(1, max_values // max(1, fixed)))
    room = max(0, max_values - shown * fixed)  # for the draws
    points = min(max_points, draws)
    divergent = int(np.minimum(diverging.sum(axis=1), points).sum())  # kept besides
    if shown * (chains * points + divergent) > room:
        least = min(MIN_POINTS, draws)
        points = max(least, (room // max(1, shown) - divergent) // max(1, chains))
    index = _kept_draws(diverging, draws, points)
    per_scalar = max(1, sum(len(idx) for idx in index))
    with_draws = min(shown, room // per_scalar)

    scalars: list[dict[str, Any]] = []
    site_rows: list[dict[str, Any]] = []
    for name, values in sites.items():
        shape = tuple(int(n) for n in values.shape[2:])
        size = math.prod(shape)
        count = max(0, min(size, shown - len(scalars)))
        site_rows.append(
            {
                "name": name,
                "shape": list(shape),
                "size": size,
                "first": len(scalars),
                "count": count,
                "omitted": size - count,
            }
        )
        if count == 0:
            continue
        x = values.reshape(chains, draws, size)[:, :, :count]
        scalars.extend(_site_scalars(name, shape, x, index, edges, lags, len(scalars), with_draws))

    view: dict[str, Any] = {
        "version": VERSION,
        "method": method,
        "group": group,
        "chains": chains,
        "draws": draws,
        "draw_index": [idx.tolist() for idx in index],
        "diverging": [diverging[c, idx].tolist() for c, idx in enumerate(index)],
        "divergences": int(diverging.sum()),
        "rank_edges": _listed(edges) if ranked else None,
        "intervals": list(INTERVALS),
        "hdi_prob": HDI_PROB,
        "sites": site_rows,
        "scalars": scalars,
        "energy": _energy(stats, max_points) if "energy" in stats else None,
        "ppc": _ppc(groups, method),
        "bounds": {
            "max_points": max_points,
            "points": points,
            "max_values": max_values,
            "max_scalars": max_scalars,
            "scalars": total,
            "shown": shown,
            "with_draws": with_draws,
            "ppc_draws": PPC_DRAWS,
            "ppc_values": PPC_VALUES,
        },
    }
    view.update(_sensitivity(results, total))
    view["warnings"] = _warnings(view)
    return view


#: The most scalars whose prior sensitivity the view computes (an importance-weighted
#: distance each, twice): past it, `qvr sensitivity` on the saved run.
MAX_SENSITIVITY_SCALARS = 200


def _sensitivity(results: RunResults, scalars: int) -> dict[str, Any]:
    """The run's power-scaling sensitivity (`posterior.sensitivity`, its JSON form) as
    `sensitivity`, or a `sensitivity_note` saying why there is none; nothing for a run
    without the groups it reads (a prior run, a model that sums out discrete sites)."""
    groups = results.groups
    if not groups.get("log_prior") or not groups.get("log_likelihood"):
        return {}
    if scalars > MAX_SENSITIVITY_SCALARS:
        return {
            "sensitivity_note": f"no prior sensitivity in the editor for {scalars:,} scalars "
            f"(at most {MAX_SENSITIVITY_SCALARS}): `qvr run --output run.nc` and `qvr "
            "sensitivity run.nc` compute it"
        }
    if missing(ARVIZ_MODULES):
        return {"sensitivity_note": "prior sensitivity needs ArviZ: pip install 'qvr[arviz]'"}
    from qvr_core.posterior.run_files import RunFileError
    from qvr_core.posterior.sensitivity import sensitivity

    try:
        found = sensitivity(results.inference_data(), "the run")
    except RunFileError as e:
        return {"sensitivity_note": f"no prior sensitivity: {str(e).removeprefix('the run: ')}"}
    return {"sensitivity": found.to_json()}


# ------------------------------------------------------------------ draws


def _numeric(group: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The group's numeric variables as float64 `(chain, draw, ...)` arrays."""
    out: dict[str, np.ndarray] = {}
    for name, value in group.items():
        array = np.asarray(value)
        if array.ndim >= 2 and array.dtype.kind in "biuf":
            out[name] = array.astype(np.float64, copy=False)
    return out


def _diverging(stats: Mapping[str, np.ndarray], chains: int, draws: int) -> np.ndarray:
    flags = stats.get("diverging")
    if flags is None or np.shape(flags) != (chains, draws):
        return np.zeros((chains, draws), dtype=bool)
    return np.asarray(flags).astype(bool)


def _kept_draws(diverging: np.ndarray, draws: int, points: int) -> list[np.ndarray]:
    """Per chain: `points` evenly spaced draws and its divergent draws (at most `points`)."""
    spaced = np.asarray(evenly_spaced(draws, max(2, points)), dtype=np.int64)
    kept = []
    for flags in diverging:
        divergent = np.flatnonzero(flags)[:points]
        kept.append(np.union1d(spaced, divergent).astype(np.int64))
    return kept


def _site_scalars(
    name: str,
    shape: tuple[int, ...],
    x: np.ndarray,
    index: list[np.ndarray],
    edges: np.ndarray,
    lags: int,
    start: int,
    with_draws: int,
) -> list[dict[str, Any]]:
    """Every scalar of one site (`x`: `(chain, draw, elements)`), computed a site at a time."""
    count = x.shape[2]
    drawn = max(0, min(count, with_draws - start))
    kept = [_round(x[c, idx, :drawn]) for c, idx in enumerate(index)]
    ranks = _rank_counts(x, edges) if len(edges) else None
    autocorr = np.round(_autocorr(x, lags), AUTOCORR_DECIMALS) if lags >= 0 else None
    per_chain = _round(_intervals(x))
    combined = _round(_intervals(x.reshape(1, -1, count))[0])
    out = []
    for i in range(count):
        element = [int(j) for j in np.unravel_index(i, shape)] if shape else []
        label = name + (f"[{', '.join(map(str, element))}]" if element else "")
        scalar: dict[str, Any] = {
            "label": label,
            "site": name,
            "index": element,
            "draws": [_listed(chain[:, i]) for chain in kept] if i < drawn else None,
            "ranks": ranks[:, :, i].tolist() if ranks is not None else None,
            "autocorr": (
                [_listed(row) for row in autocorr[:, :, i]] if autocorr is not None else None
            ),
            "intervals": {
                "chains": [_listed(row) for row in per_chain[:, :, i]],
                "combined": _listed(combined[:, i]),
            },
        }
        out.append(scalar)
    return out


# ------------------------------------------------------------------ statistics


def _rank_edges(chains: int, draws: int) -> np.ndarray:
    """`az.plot_rank`'s bins: twice Sturges' formula over the draws per chain, spanning
    the ranks of all draws."""
    bins = int(np.ceil(2 * np.log2(draws)) + 1)
    return np.histogram_bin_edges(np.zeros(1), bins=bins, range=(0, chains * draws))


def _rank_counts(x: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """`(chain, bin, element)`: each chain's histogram of its draws' ranks among all draws."""
    chains, draws, count = x.shape
    bins = len(edges) - 1
    ranks = average_ranks(x.reshape(chains * draws, count)).reshape(chains, draws, count)
    # np.histogram's bins: [a, b) and the last [a, b]
    where = np.clip(np.searchsorted(edges, ranks, side="right") - 1, 0, bins - 1)
    cells = (np.arange(chains)[:, None, None] * bins + where) * count + np.arange(count)
    return np.bincount(cells.ravel(), minlength=chains * bins * count).reshape(chains, bins, count)


def autocorrelation(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """`az.autocorr`: the autocovariance by FFT, over its value at lag 0."""
    x = np.moveaxis(np.asarray(x, dtype=np.float64), axis, -1)
    n = x.shape[-1]
    m = 2 ** int(np.ceil(np.log2(max(1, 2 * n))))
    centred = x - x.mean(axis=-1, keepdims=True)
    spectrum = np.fft.rfft(centred, n=m, axis=-1)
    cov = np.fft.irfft(spectrum * np.conjugate(spectrum), n=m, axis=-1)[..., :n] / n
    with np.errstate(divide="ignore", invalid="ignore"):
        corr = cov / cov[..., :1]
    return np.moveaxis(corr, -1, axis)


def _autocorr(x: np.ndarray, lags: int) -> np.ndarray:
    """`(chain, lag, element)` for lags 0 to `lags`."""
    return autocorrelation(x, axis=1)[:, : lags + 1, :]


def hdi(x: np.ndarray, prob: float = HDI_PROB) -> tuple[np.ndarray, np.ndarray]:
    """`az.hdi` of unimodal draws along axis 0: the narrowest interval holding `prob`."""
    ordered = np.sort(x, axis=0)
    n = ordered.shape[0]
    inside = int(np.floor(prob * n))
    widths = ordered[inside:] - ordered[: n - inside]
    low = np.argmin(widths, axis=0)
    columns = np.arange(ordered.shape[1])
    return ordered[low, columns], ordered[low + inside, columns]


def _intervals(x: np.ndarray) -> np.ndarray:
    """`(chain, statistic, element)` with the statistics of `INTERVALS`."""
    out = np.full((x.shape[0], len(INTERVALS), x.shape[2]), np.nan)
    for c in range(x.shape[0]):
        draws = x[c]
        finite = np.all(np.isfinite(draws), axis=0)
        if draws.shape[0] == 0 or not finite.any():
            continue
        kept = draws[:, finite]
        low, high = hdi(kept)
        q25, q75 = np.quantile(kept, [0.25, 0.75], axis=0)
        out[c, :, finite] = np.stack([kept.mean(axis=0), q25, q75, low, high], axis=1)
    return out


def bfmi(energy: np.ndarray) -> np.ndarray:
    """`az.bfmi`: per chain the mean squared energy transition over the energy's variance."""
    e = np.atleast_2d(np.asarray(energy, dtype=np.float64))
    if e.shape[1] < 2:
        return np.full(e.shape[0], np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio: np.ndarray = np.square(np.diff(e, axis=1)).mean(axis=1) / np.var(e, axis=1, ddof=1)
    return ratio


def _energy(stats: Mapping[str, np.ndarray], max_points: int) -> dict[str, Any] | None:
    """The energy plot's data: per chain marginal energy and transitions, thinned; E-BFMI."""
    energy = np.asarray(stats["energy"], dtype=np.float64)
    if energy.ndim != 2 or energy.shape[1] < 2:
        return None
    marginal = energy - energy.mean()
    transition = np.diff(energy, axis=1)
    return {
        "marginal": [_rounded(row[evenly_spaced(len(row), max_points)]) for row in marginal],
        "transition": [_rounded(row[evenly_spaced(len(row), max_points)]) for row in transition],
        "bfmi": _rounded(bfmi(energy), 4),
    }


# ------------------------------------------------------------------ predictive


def _ppc(groups: Mapping[str, Mapping[str, np.ndarray]], method: str) -> list[dict[str, Any]]:
    """Per observed site: observed values and replicated draws (prior or posterior)."""
    name = "prior_predictive" if method == "prior" else "posterior_predictive"
    predictive = _numeric(groups.get(name, {}))
    observed = groups.get("observed_data", {})
    out = []
    for site, values in predictive.items():
        chains, draws = values.shape[:2]
        flat = values.reshape(chains * draws, -1)
        rows = evenly_spaced(chains * draws, PPC_DRAWS)
        columns = evenly_spaced(flat.shape[1], PPC_VALUES)
        replicated = flat[np.ix_(rows, columns)]
        seen = observed.get(site)
        seen_values: np.ndarray | None = None
        if seen is not None and np.asarray(seen).dtype.kind in "biuf" and np.size(seen):
            seen_flat = np.asarray(seen, dtype=np.float64).reshape(-1)
            seen_values = seen_flat[evenly_spaced(len(seen_flat), PPC_VALUES)]
        discrete = _whole(flat) and (seen_values is None or _whole(seen_values))
        out.append(
            {
                "site": site,
                "group": name,
                "kind": "discrete" if discrete else "continuous",
                "size": int(flat.shape[1]),
                "draws": int(chains * draws),
                "observed": _rounded(seen_values) if seen_values is not None else None,
                "replicated": [_rounded(row) for row in replicated],
            }
        )
    return out


def _whole(x: np.ndarray) -> bool:
    finite = np.isfinite(x)
    return bool(finite.all() and np.all(x == np.round(x)))


# ------------------------------------------------------------------ warnings


def _warnings(view: Mapping[str, Any]) -> list[dict[str, str]]:
    """What the plots show that should not be trusted, each with the usual remedy."""
    out = []
    divergent = int(view["divergences"])
    if divergent:
        total = view["chains"] * view["draws"]
        out.append(
            {
                "kind": "divergences",
                "plot": "pair",
                "message": f"{divergent} of {total} draws after warmup diverged (marked ✕ in "
                "the pair plot): where they gather, the sampler missed a region of high "
                "curvature, and the draws may be biased",
                "remedy": DIVERGENCE_REMEDY,
            }
        )
    energy = view["energy"]
    if energy is not None:
        low = [(c, v) for c, v in enumerate(energy["bfmi"]) if v is not None and v < BFMI_MIN]
        if low:
            shown = ", ".join(f"chain {c + 1}: {v:.3g}" for c, v in low)
            out.append(
                {
                    "kind": "e_bfmi",
                    "plot": "energy",
                    "message": f"E-BFMI under {BFMI_MIN} ({shown}): the energy transitions are "
                    "narrower than the marginal energy, so the chains explore the energy poorly, "
                    "typically heavy tails or a funnel",
                    "remedy": E_BFMI_REMEDY,
                }
            )
    return out


# ------------------------------------------------------------------ numbers


def _round(x: np.ndarray | list[float], digits: int = SIGNIFICANT) -> np.ndarray:
    """`x` as float64, each number to `digits` significant digits; NaN for the non-finite."""
    values = np.asarray(x, dtype=np.float64)
    finite = np.isfinite(values)
    magnitude = np.where(finite & (values != 0), np.abs(values), 1.0)
    shift = np.clip(digits - 1 - np.floor(np.log10(magnitude)).astype(np.int64), -300, 300)
    scale = 10.0 ** np.abs(shift)  # a power of ten, exact up to 10**22
    with np.errstate(over="ignore", invalid="ignore"):
        rounded = np.where(
            shift >= 0, np.round(values * scale) / scale, np.round(values / scale) * scale
        )
    return np.where(finite, np.where(np.isfinite(rounded), rounded, values), np.nan)


def _listed(x: np.ndarray) -> list[float | None]:
    """`x` flattened to a JSON list: NaN becomes None (JSON has neither it nor infinity),
    -0.0 becomes 0.0."""
    values = np.asarray(x, dtype=np.float64).reshape(-1) + 0.0
    return [None if v != v else v for v in values.tolist()]


def _rounded(x: np.ndarray | list[float], digits: int = SIGNIFICANT) -> list[float | None]:
    """`_round` then `_listed`."""
    return _listed(_round(x, digits))
