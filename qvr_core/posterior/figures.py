"""Figures of a saved run, drawn by ArviZ: InferenceData, a kind and a selection -> Figure.

`KINDS` is the one list of kinds (`qvr plot --kind`, docs/plots.md). Every kind
but `sbc` is an ArviZ plotting function, so a notebook user calling `figure(idata,
kind)` or ArviZ directly sees the same figure as `qvr plot`; `sbc` draws the band
ArviZ computes (`posterior.calibration`) around a `qvr sbc` file's ranks. A kind checks first that
the run has what it needs and otherwise raises `FigureError`, one line saying
what to do (rerun with `--predictive`, plot a NUTS run), never ArviZ's
traceback.

Every scalar is reachable: a site with a plate shows each element (a row of the
trace, a line of the forest), `Selection.var_names` picks sites and
`Selection.coords` plate elements. ArviZ alone keeps its first 40 panels (and
warns); here a figure shows all it was asked for, and a request over
`MAX_PANELS` is refused with the number of scalars so the user narrows it.

Chains take the editor's run-view colours (`palette.CHAIN_COLOURS`). The
matplotlib backend is the caller's: `qvr plot` selects Agg, a notebook keeps its own.
ArviZ and matplotlib are imported when a figure is drawn, so `qvr plot`'s
argument parser reads `KINDS` without them (`qvr --help` stays fast).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from qvr_core.draws import arviz_adapter
from qvr_core.draws.arviz_adapter import InferenceData
from qvr_core.host.datafile import quoted
from qvr_core.posterior.palette import CHAIN_COLOURS

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: The most panels one figure draws (a pair plot of 20 scalars is 190).
MAX_PANELS = 200
SAMPLE_DIMS = ("chain", "draw")
#: A value this large leaves matplotlib no room for an axis around it: the axis's
#: margins and ticks overflow a float (1e308 fails, 1e307 draws).
HUGE = 1e300


class FigureError(Exception):
    """This run cannot give this figure; the message says why and what to do, in one line."""


@dataclass(frozen=True)
class Selection:
    """What to draw: sites (all when empty), plate elements by dimension, chains merged."""

    var_names: tuple[str, ...] = ()
    #: dimension -> coordinate values, matched by their text ("0" picks coordinate 0)
    coords: Mapping[str, Sequence[object]] = field(default_factory=dict)
    combined: bool = False


@dataclass(frozen=True)
class Kind:
    """One figure: what it shows, the group its `--var` names, and how ArviZ draws it."""

    summary: str
    draw: Callable[[Any, Selection], Figure]
    #: the group whose variables `Selection` picks (None: the figure has no variables)
    group: str | None
    #: whether `Selection.combined` means something for it
    combinable: bool = False


def figure(idata: InferenceData, kind: str, selection: Selection | None = None) -> Figure:
    """Draw `kind` of `idata` (`arviz.InferenceData`); `FigureError` when the run lacks its data."""
    if kind not in KINDS:
        raise FigureError(f"unknown kind {kind!r}; kinds: {', '.join(KINDS)}")
    spec = KINDS[kind]
    selection = selection or Selection()
    if spec.group is None and (selection.var_names or selection.coords):
        raise FigureError(f"{kind} draws the sampler, not variables: leave out --var and --coords")
    if selection.combined and not spec.combinable:
        combinable = ", ".join(k for k, s in KINDS.items() if s.combinable)
        raise FigureError(f"--combined applies to {combinable}, not {kind}")
    with _style():
        return spec.draw(idata, selection)


@contextmanager
def _style() -> Iterator[None]:
    """The run view's chain colours, a tidy layout, no panel limit (`_check_panels` is
    ours), quiet ArviZ."""
    with warnings.catch_warnings():
        # ArviZ 0.2x announces its rewrite and calls matplotlib APIs that 3.11 deprecates:
        # noise about the libraries, nothing about the run.
        warnings.simplefilter("ignore", FutureWarning)
        import matplotlib
        from matplotlib.rcsetup import cycler

        arviz_adapter.load()
        warnings.simplefilter("ignore", matplotlib.MatplotlibDeprecationWarning)
        colours = cycler(color=list(CHAIN_COLOURS))
        with (
            # constrained layout: ArviZ's own styles set it, or titles overlap tick labels
            matplotlib.rc_context(
                {"axes.prop_cycle": colours, "figure.constrained_layout.use": True}
            ),
            arviz_adapter.rc_context({"plot.max_subplots": None}),
        ):
            yield


def _attribute(idata: InferenceData, name: str) -> str:
    """A run attribute (`qvr run` writes them into every group), or ""."""
    for group in arviz_adapter.groups(idata):
        value = idata[group].attrs.get(name)
        if value is not None:
            return str(value)
    return ""


def draws_problem(
    idata: InferenceData, kind: str, selection: Selection | None = None
) -> str | None:
    """What is wrong with the draws a figure failed on, in words, or None when they look
    well: a value too large for an axis (`HUGE`; ArviZ and matplotlib then fail laying
    out ticks, e.g. "arange: cannot compute length"), else values that are not finite.
    The kind's own group (its selected sites) is looked at first, then the others."""
    import numpy as np

    spec = KINDS.get(kind)
    own = spec.group if spec is not None else None
    present = arviz_adapter.groups(idata)
    groups = [g for g in [own, *present] if g is not None and g in present]
    picked = set(selection.var_names) if selection is not None else set()
    found: list[tuple[str, str, Any]] = []
    for group in dict.fromkeys(groups):
        for name, variable in idata[group].data_vars.items():
            if group == own and picked and str(name) not in picked:
                continue
            values = np.asarray(variable.values)
            if values.dtype.kind in "biuf" and values.size:
                found.append((group, str(name), values.astype(np.float64, copy=False)))
    for group, name, values in found:
        finite = values[np.isfinite(values)]
        if finite.size and float(np.abs(finite).max()) > HUGE:
            largest = float(finite[np.argmax(np.abs(finite))])
            return (
                f"the {group} draws of {quoted(name)} reach {largest:.3g}, too large to draw "
                "on an axis (its margins overflow a float): the run diverged or a site's "
                "scale is far too wide"
            )
    for group, name, values in found:
        bad = int(values.size - np.count_nonzero(np.isfinite(values)))
        if bad:
            return (
                f"{bad:,} of the {values.size:,} {group} draws of {quoted(name)} are not "
                "finite (NaN or infinite)"
            )
    return None


def _require(idata: InferenceData, group: str, why: str) -> Any:
    if group not in arviz_adapter.groups(idata):
        raise FigureError(why)
    return idata[group]


def _posterior(idata: InferenceData) -> Any:
    method = _attribute(idata, "method")
    if method == "prior":
        why = "a prior run (--method prior) has no posterior: plot an SVI or NUTS run"
    else:
        why = "the file has no posterior group: plot a run written by qvr run --output"
    return _require(idata, "posterior", why)


def _predictive(idata: InferenceData) -> Any:
    """The posterior predictive draws, checked to have the observed data beside them."""
    if _attribute(idata, "method") == "prior":
        why = "a prior run (--method prior) has no posterior predictive: plot an SVI or NUTS run"
    else:
        why = "the run has no posterior_predictive group: rerun with qvr run --predictive"
    predictive = _require(idata, "posterior_predictive", why)
    _require(idata, "observed_data", "the file has no observed_data group to compare with")
    return predictive


def _selected(
    dataset: Any, group: str, selection: Selection
) -> tuple[list[str], dict[str, list[Any]]]:
    """The variable names and ArviZ coords of `selection` in `dataset`, checked."""
    known = [str(name) for name in dataset.data_vars]
    for name in selection.var_names:
        if name not in known:
            raise FigureError(f"unknown variable {name!r} in {group}; known: {', '.join(known)}")
    names = list(selection.var_names) or known
    dims = sorted({str(d) for n in names for d in dataset[n].dims if d not in SAMPLE_DIMS})
    coords: dict[str, list[Any]] = {}
    for dim, wanted in selection.coords.items():
        if dim not in dims:
            have = ", ".join(dims) if dims else "none (the selected sites are scalars)"
            raise FigureError(f"unknown dimension {dim!r} in {group}; known: {have}")
        values = {str(v): v for v in dataset[dim].values.tolist()}
        picked = []
        for value in wanted:
            if str(value) not in values:
                raise FigureError(f"{dim} has no coordinate {value}; it has {_span(list(values))}")
            picked.append(values[str(value)])
        coords[dim] = picked
    return names, coords


def _span(values: list[str]) -> str:
    return ", ".join(values) if len(values) <= 6 else f"{values[0]} to {values[-1]}"


def _scalars(dataset: Any, names: list[str], coords: Mapping[str, list[Any]]) -> int:
    """How many scalars the selection draws: each plate element counts."""
    total = 0
    for name in names:
        sizes = dataset[name].sizes
        total += math.prod(
            len(coords[d]) if d in coords else sizes[d] for d in sizes if d not in SAMPLE_DIMS
        )
    return total


def _check_panels(kind: str, panels: int, scalars: int) -> None:
    if panels > MAX_PANELS:
        raise FigureError(
            f"a {kind} plot of {scalars} scalars is {panels} panels (at most {MAX_PANELS}): "
            "pick sites with --var or plate elements with --coords"
        )


def _figure_of(axes: Any) -> Figure:
    """The figure an ArviZ plot drew on (it returns one axes or an array of them)."""
    import numpy as np
    from matplotlib.figure import Figure

    first = np.ravel(np.asarray(axes, dtype=object))[0]
    fig = first.get_figure(root=True)
    assert isinstance(fig, Figure)
    return fig


def _posterior_selection(
    idata: InferenceData, selection: Selection, kind: str, panels: Callable[[int, int], int]
) -> tuple[list[str], dict[str, list[Any]]]:
    """The checked selection of the posterior; `panels(scalars, chains)` counts the figure."""
    posterior = _posterior(idata)
    names, coords = _selected(posterior, "posterior", selection)
    scalars = _scalars(posterior, names, coords)
    _check_panels(kind, panels(scalars, int(posterior.sizes["chain"])), scalars)
    return names, coords


def _trace(idata: InferenceData, selection: Selection) -> Figure:
    """A row per scalar (`compact=False`): its density and its draws, a line per chain."""
    names, coords = _posterior_selection(idata, selection, "trace", lambda n, _: 2 * n)
    axes = arviz_adapter.plot_trace(
        idata, var_names=names, coords=coords, compact=False, combined=selection.combined
    )
    return _figure_of(axes)


def _rank(idata: InferenceData, selection: Selection) -> Figure:
    """Each chain's histogram of ranks among all chains' draws: uniform when they agree."""
    names, coords = _posterior_selection(idata, selection, "rank", lambda n, _: n)
    chains = int(idata.posterior.sizes["chain"])
    if chains < 2:
        raise FigureError(
            "a rank plot compares chains and this run has one: "
            "plot a NUTS run with --chains 2 or more"
        )
    return _figure_of(arviz_adapter.plot_rank(idata, var_names=names, coords=coords))


def _diverging(idata: InferenceData) -> bool:
    return (
        "sample_stats" in arviz_adapter.groups(idata)
        and "diverging" in idata.sample_stats.data_vars
    )


def _pair(idata: InferenceData, selection: Selection) -> Figure:
    """Scatter of every pair of scalars, divergent draws marked (a funnel shows there)."""
    names, coords = _posterior_selection(idata, selection, "pair", lambda n, _: n * (n - 1) // 2)
    scalars = _scalars(idata.posterior, names, coords)
    if scalars < 2:
        raise FigureError(f"a pair plot needs two scalars or more; the selection has {scalars}")
    axes = arviz_adapter.plot_pair(
        idata, var_names=names, coords=coords, kind="scatter", divergences=_diverging(idata)
    )
    return _figure_of(axes)


def _energy(idata: InferenceData, selection: Selection) -> Figure:
    """The marginal energy against its transitions per draw, with each chain's E-BFMI."""
    stats = idata.sample_stats if "sample_stats" in arviz_adapter.groups(idata) else None
    if stats is None or "energy" not in stats.data_vars:
        method = _attribute(idata, "method")
        run = {"svi": "an SVI run", "prior": "a prior run"}.get(method, "this run")
        raise FigureError(f"{run} has no energy: plot a NUTS run")
    return _figure_of(arviz_adapter.plot_energy(idata, bfmi=True))


def _forest(idata: InferenceData, selection: Selection) -> Figure:
    """Each scalar's credible interval, a line per chain (or combined), R-hat beside."""
    names, coords = _posterior_selection(idata, selection, "forest", lambda n, _: n)
    chains = int(idata.posterior.sizes["chain"])
    axes = arviz_adapter.plot_forest(
        idata,
        var_names=names,
        coords=coords,
        combined=selection.combined,
        r_hat=chains > 1,
    )
    if chains > 1 and not selection.combined:
        drawn = idata.posterior[names]
        _r_hat_beside(axes, arviz_adapter.rhat(drawn.sel(coords) if coords else drawn), names)
    return _figure_of(axes)


def _r_hat_beside(axes: Any, r_hat: Any, names: list[str]) -> None:
    """ArviZ 0.23 draws the R-hat column only for merged chains (it computes R-hat from
    the values of one line), so a forest with a line per chain had an empty column: each
    scalar's R-hat is drawn at its row, the rows top to bottom in the order of `names`."""
    import numpy as np

    rows = sorted(axes[0].get_yticks(), reverse=True)  # ArviZ's first scalar on top
    values = [float(v) for name in names for v in np.ravel(r_hat[name].values)]
    if len(rows) != len(values):  # not the layout this was written for: leave it as ArviZ drew it
        return
    axes[-1].plot(values, rows, "o", color="C0", markeredgecolor="k")


def _ppc(idata: InferenceData, selection: Selection) -> Figure:
    """The observed data's density over densities of data drawn again from the posterior."""
    predictive = _predictive(idata)
    names, coords = _selected(predictive, "posterior_predictive", selection)
    missing = [n for n in names if n not in idata.observed_data.data_vars]
    if missing:
        raise FigureError(f"observed_data has no {missing[0]!r} to compare with")
    _check_panels("ppc", len(names), _scalars(predictive, names, coords))
    counted = _counted(idata, names)
    return _figure_of(arviz_adapter.plot_ppc(counted, var_names=names, coords=coords))


def _counted(idata: InferenceData, names: list[str]) -> Any:
    """`idata` with each of `names` as integers where its observed and replicated values
    are all whole numbers: ArviZ draws integer data as a histogram of its values, and
    floats as density curves (0/1 outcomes stored as floats came out as curves over 0
    and 1)."""
    import numpy as np

    def whole(a: Any) -> bool:
        v = np.asarray(a)
        return v.size > 0 and bool(np.all(np.isfinite(v)) and np.all(v == np.round(v)))

    counted = [
        n
        for n in names
        if idata.observed_data[n].dtype.kind == "f"
        and whole(idata.observed_data[n].values)
        and whole(idata.posterior_predictive[n].values)
    ]
    if not counted:
        return idata
    copy = idata.copy()
    for group in ("observed_data", "posterior_predictive"):
        dataset = copy[group]
        for n in counted:
            dataset[n] = dataset[n].astype(np.int64)
    return copy


def _loo_pit(idata: InferenceData, selection: Selection) -> Figure:
    """Each observation's leave-one-out predictive quantile; uniform when calibrated."""
    import matplotlib.pyplot as plt

    predictive = _predictive(idata)
    if selection.coords:
        raise FigureError("loo-pit uses every observation of a site: leave out --coords")
    names, _ = _selected(predictive, "posterior_predictive", selection)
    skipped = _attribute(idata, "log_likelihood")  # `qvr run` says why it left it out
    why = (
        f"the run has no log_likelihood group ({skipped})"
        if skipped.startswith("skipped")
        else "the run has no log_likelihood group (each observation's log-likelihood): "
        "rerun with qvr run --predictive --output"
    )
    likelihood = _require(idata, "log_likelihood", why)
    for name in names:
        if name not in likelihood.data_vars or name not in idata.observed_data.data_vars:
            raise FigureError(f"log_likelihood or observed_data has no {name!r}")
    _check_panels("loo-pit", len(names), len(names))
    fig, axes = plt.subplots(
        len(names), 1, squeeze=False, figsize=(6.4, 4.0 * len(names)), layout="constrained"
    )
    for name, ax in zip(names, axes[:, 0], strict=True):
        arviz_adapter.plot_loo_pit(idata, y=name, ax=ax)
    return fig


def _autocorr(idata: InferenceData, selection: Selection) -> Figure:
    """Each chain's autocorrelation by lag: how slowly draws forget their past."""
    names, coords = _posterior_selection(
        idata, selection, "autocorr", lambda n, chains: n * (1 if selection.combined else chains)
    )
    axes = arviz_adapter.plot_autocorr(
        idata, var_names=names, coords=coords, combined=selection.combined
    )
    return _figure_of(axes)


#: The group `qvr sbc --output` writes its ranks in (`simulation` first, `draws` in its
#: attributes): the file is InferenceData with this group alone.
SBC_GROUP = "sbc_ranks"


def _sbc(idata: InferenceData, selection: Selection) -> Figure:
    """Simulation-based calibration's ECDF-difference plot: per parameter element, the
    ranks' ECDF less the uniform CDF, inside the simultaneous band it is judged by
    (`posterior.calibration`: the same band, of the file's `prob`, and points, so the
    figure shows the verdict)."""
    if SBC_GROUP not in arviz_adapter.groups(idata):
        raise FigureError("it holds no ranks: plot --kind sbc draws a file qvr sbc --output wrote")
    import matplotlib.pyplot as plt
    import numpy as np

    from qvr_core.posterior.calibration import PROB, curve, judge
    from qvr_core.text.units import element_label

    ranks = idata[SBC_GROUP]
    draws = int(ranks.attrs["draws"])
    prob = float(ranks.attrs.get("prob", PROB))  # files before `--prob`: the default
    names, coords = _selected(ranks, SBC_GROUP, selection)
    picked = ranks[names].sel(coords) if coords else ranks[names]
    panels = []
    for name in names:
        values = np.asarray(picked[name].values)
        flat = values.reshape(values.shape[0], -1)
        for i in range(flat.shape[1]):
            index, label = element_label(name, tuple(values.shape[1:]), i)
            panels.append((label, flat[:, i], judge(name, index, label, flat[:, i], draws, prob)))
    _check_panels("sbc", len(panels), len(panels))
    if not panels:
        raise FigureError("it holds no ranks yet: run qvr sbc --output again")
    columns = min(4, len(panels))
    rows = math.ceil(len(panels) / columns)
    fig, axes = plt.subplots(rows, columns, figsize=(3.2 * columns, 2.4 * rows), squeeze=False)
    for ax, (label, values, element) in zip(axes.flat, panels, strict=False):
        drawn = curve(values, draws, prob)
        ax.fill_between(
            drawn.points, drawn.lower, drawn.upper, color="0.85", step="post", linewidth=0
        )
        ax.step(drawn.points, drawn.difference, where="post", color=CHAIN_COLOURS[0])
        ax.axhline(0.0, color="0.5", linewidth=0.8)
        ax.set_title(f"{label}: {element.verdict}", fontsize=9)
        ax.set_xlabel("fractional rank", fontsize=8)
    for ax in list(axes.flat)[len(panels) :]:
        ax.set_visible(False)
    axes[0][0].set_ylabel("ECDF - uniform", fontsize=8)
    return fig


KINDS: dict[str, Kind] = {
    "trace": Kind("each scalar's density and draws, a line per chain", _trace, "posterior", True),
    "rank": Kind("rank histograms per chain: uniform when chains agree", _rank, "posterior"),
    "pair": Kind("scatter of pairs of scalars, divergent draws marked", _pair, "posterior"),
    "energy": Kind("NUTS energy and its transitions, with E-BFMI", _energy, None),
    "forest": Kind("credible intervals of every scalar, per chain", _forest, "posterior", True),
    "ppc": Kind("observed data against posterior predictive draws", _ppc, "posterior_predictive"),
    "loo-pit": Kind("leave-one-out predictive calibration", _loo_pit, "posterior_predictive"),
    "autocorr": Kind("autocorrelation by lag, per chain", _autocorr, "posterior", True),
    "sbc": Kind("simulation-based calibration: the ranks' ECDF in its band", _sbc, SBC_GROUP),
}
