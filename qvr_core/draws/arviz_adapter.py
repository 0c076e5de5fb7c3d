"""Every use of ArviZ in qvr, behind one module (issue 51).

Why: qvr pins `arviz>=0.17,<1`. ArviZ 1.0 replaced `InferenceData` with xarray's
`DataTree` and split the library into `arviz_base` (data), `arviz_stats` (diagnostics,
LOO, comparison) and `arviz_plots` (figures, returning a `PlotCollection` rather than
matplotlib axes). With a dozen modules calling `az.` directly, lifting the bound meant
finding and changing each; here it is one change in one file. No other module of
`qvr`, `qvr_core`, `qvr_lsp` or `qvr_cli` imports `arviz` (`tests/rails/test_arviz_adapter.py`).

ArviZ is an optional extra (`qvr[arviz]`, `qvr[plot]`): this module imports it inside
each function, never at import, so the server and `qvr check` start without it (and
without paying its 1.3 to 2.6 s import: matplotlib, scipy, numba). ArviZ 0.2x announces
its rewrite with a FutureWarning when imported; the import here is quiet. The wrappers
take the arguments qvr passes, by the names qvr uses, and return ArviZ's own objects,
typed `Any` (`InferenceData`, `ELPDData`, `Array`): ArviZ 0.x ships no annotations that
mypy can check, and this package imports no numpy or xarray to name their types (the
`no-torch-below-runtime` contract keeps numpy out of `qvr_core.draws`).

What changes under ArviZ 1.x, per function (0.x -> 1.x; check each against ArviZ's
migration guide when the bound is lifted):

- `InferenceData`: `arviz.InferenceData` -> `xarray.DataTree`. A group is a child
  node (`dt["posterior"]`, a `DataTree`; `.dataset` for the `Dataset`); attribute
  access, `.attrs`, `.data_vars`, `.copy()` and `.to_netcdf()` carry over.
- `have_arviz`, `load`: unchanged (`arviz` stays the import name, a meta-package over
  `arviz_base`, `arviz_stats` and `arviz_plots`).
- `from_dict`: `az.from_dict(posterior=..., ...)`, a keyword per group it knows ->
  `arviz_base.from_dict({"posterior": {...}, ...}, dims=...)`, one mapping of groups;
  it keeps any group name, so `add_groups` is no longer needed for `log_prior`.
- `add_groups`: `idata.add_groups({...})` -> `dt[name] = xarray.DataTree(dataset)`.
- `of_groups`: `az.InferenceData(**datasets)` -> `xarray.DataTree.from_dict(datasets)`.
- `from_netcdf`: `az.from_netcdf` -> `arviz_base.from_netcdf` (or
  `xarray.open_datatree`); the files qvr wrote under 0.x open as a tree.
- `groups`: `idata.groups()` -> the child names, `list(dt.children)`.
- `rhat`: `az.rhat` -> `arviz_stats.rhat` (also the `.azstats.rhat()` accessor).
- `loo`: `az.loo(idata, pointwise=True)` -> `arviz_stats.loo(dt, pointwise=True)`; its
  `ELPDData` holds `elpd`, `se`, `p`, `pareto_k`, `good_k` as attributes, not the
  `elpd_loo` / `p_loo` keys `posterior.comparison` reads.
- `waic`: `az.waic` has no successor (arviz_stats keeps PSIS-LOO only): compute WAIC
  from the log-likelihood here, or drop `qvr compare --ic waic`.
- `compare`: `az.compare(elpds, ic=...)` -> `arviz_stats.compare(elpds)` (LOO only);
  its table's columns are renamed (`elpd`, `p`, `elpd_diff`, `dse`, `weight`).
- `loo_pit`: `az.loo_pit(idata, y=name)` -> `arviz_stats.loo_pit(dt, var_names=name)`.
- `psislw`: `az.psislw(log_weights)` -> arviz_stats' PSIS (`arviz_stats.psislw`, or
  the `log_weights` of `arviz_stats.loo`'s result).
- `psens`: `az.psens` -> `arviz_stats.psense` (and `psense_summary` for the table).
- `ecdf_band`: `arviz.stats.ecdf_utils.ecdf_confidence_band` -> the simultaneous band
  of `arviz_stats.ecdf_utils` (the "optimized" method of Säilynoja et al. 2022).
- `rc_context`: `az.rc_context({"plot.max_subplots": None})` -> `arviz_base.rc_context`;
  arviz_plots draws every panel asked for, so the limit may go.
- the plots return matplotlib axes under 0.x; `arviz_plots` returns a `PlotCollection`
  (`pc.viz["plot"]` / `pc.show()`; backend by `backend="matplotlib"`), so each caller's
  `_figure_of(axes)` reads the figure from it instead:
  `plot_trace` -> `arviz_plots.plot_trace_dist` (`compact=False` -> per-element
  faceting), `plot_rank` -> `plot_rank`, `plot_pair` -> `plot_pair_focus` or
  `plot_pairs`, `plot_energy` -> `plot_energy` (E-BFMI: `arviz_stats.bfmi`),
  `plot_forest` -> `plot_forest` (`figures._r_hat_beside` reads 0.x's axes: redo it),
  `plot_ppc` -> `plot_ppc_dist`,
  `plot_loo_pit` -> `plot_ppc_pit` with LOO (or `plot_loo_pit`), `plot_autocorr` ->
  `plot_autocorr`. `ax=` becomes the `PlotCollection`'s own layout.
"""

from __future__ import annotations

import importlib.util
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

#: A run's draws as ArviZ holds them: `arviz.InferenceData` under ArviZ 0.x
#: (`xarray.DataTree` under 1.x). `Any`: ArviZ is optional and unannotated.
InferenceData = Any
#: ArviZ's result of `loo` / `waic` (`ELPDData`), which `compare` takes as it is.
ELPDData = Any
#: A numpy array or an xarray object (this package imports neither).
Array = Any


def have_arviz() -> bool:
    """Whether the `arviz` extra is installed, without importing it (fast: the editor asks
    before every run)."""
    return importlib.util.find_spec("arviz") is not None


def _arviz() -> Any:
    """The `arviz` module, imported quietly (ArviZ 0.2x announces its rewrite with a
    FutureWarning): the first call may come inside a block that records warnings and
    reports them as the run's (`posterior.comparison`, `qvr plot`), and what importing
    the library says is nothing about the run. ImportError without the extra. `Any`:
    its functions carry no annotations for mypy to check."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import arviz

    return arviz


def load() -> None:
    """Import ArviZ now; ImportError without the extra. `qvr plot` asks before it reads
    a file, and the editor's spare worker pays the import before its run."""
    _arviz()


# ---------------------------------------------------------------- InferenceData


def from_dict(
    groups: Mapping[str, Mapping[str, Array]], dims: Mapping[str, Sequence[str]] | None = None
) -> InferenceData:
    """InferenceData of `groups` (group -> variable -> array, `(chain, draw, *shape)` for
    the draw groups), the variables' named axes `dims`. ArviZ 0.x silently drops a group
    it does not know: add those with `add_groups`."""
    by_group = {g: dict(v) for g, v in groups.items()}
    return _arviz().from_dict(**by_group, dims={k: list(v) for k, v in (dims or {}).items()})


def add_groups(idata: InferenceData, groups: Mapping[str, Mapping[str, Array]]) -> None:
    """Add `groups` (group -> variable -> array) to `idata` in place, by name."""
    idata.add_groups({g: dict(v) for g, v in groups.items()})


def of_groups(datasets: Mapping[str, Any]) -> InferenceData:
    """InferenceData of ready `xarray.Dataset`s by group name (a run cut down to what one
    ArviZ function reads, or `qvr sbc`'s ranks)."""
    return _arviz().InferenceData(**datasets)


def from_netcdf(path: str | Path) -> InferenceData:
    """The InferenceData of a netCDF file (`qvr run --output`, `qvr sbc --output`);
    netCDF's and HDF5's readers raise their own errors."""
    return _arviz().from_netcdf(path)


def groups(idata: InferenceData) -> list[str]:
    """The names of `idata`'s groups (`posterior`, `log_likelihood`, ...)."""
    return [str(g) for g in idata.groups()]


# ---------------------------------------------------------------- diagnostics


def rhat(data: Any) -> Any:
    """Rank-normalised split R-hat of each variable of `data` (a Dataset or InferenceData),
    as a Dataset of the variables' R-hats."""
    return _arviz().rhat(data)


# ---------------------------------------------------------------- LOO, WAIC, comparison


def loo(idata: InferenceData, *, pointwise: bool = True) -> ELPDData:
    """PSIS-LOO of a run with one log-likelihood variable (`elpd_loo`, `se`, `p_loo`,
    `pareto_k`, `good_k`, ...)."""
    return _arviz().loo(idata, pointwise=pointwise)


def waic(idata: InferenceData, *, pointwise: bool = True) -> ELPDData:
    """WAIC of a run with one log-likelihood variable (`elpd_waic`, `se`, `p_waic`, ...)."""
    return _arviz().waic(idata, pointwise=pointwise)


def compare(computed: Mapping[str, ELPDData], *, ic: str) -> Any:
    """ArviZ's comparison table (a pandas DataFrame, one row per run, `rank` 0 the best)
    of runs whose criterion `ic` ("loo" or "waic") was computed already."""
    return _arviz().compare(dict(computed), ic=ic)


def loo_pit(idata: InferenceData, *, y: str) -> Array:
    """Each observation of site `y`'s LOO-PIT value (PSIS weights)."""
    return _arviz().loo_pit(idata, y=y)


def psislw(log_weights: Array) -> tuple[Array, Array]:
    """Pareto-smoothed importance log-weights of `log_weights` (observation x draw),
    normalised per observation, and each observation's Pareto k."""
    smoothed, k = _arviz().psislw(log_weights)
    return smoothed, k


def psens(
    idata: InferenceData,
    *,
    component: str,
    var_names: Sequence[str],
    component_var_names: Sequence[str] | None = None,
) -> Any:
    """Power-scaling sensitivity of `var_names` to the prior or the likelihood
    (`component`); `component_var_names` the prior terms scaled (default: all)."""
    kwargs: dict[str, Any] = {"component": component, "var_names": list(var_names)}
    if component_var_names is not None:
        kwargs["component_var_names"] = list(component_var_names)
    return _arviz().psens(idata, **kwargs)


#: The band's work (values times evaluation points) up to which ArviZ computes it with
#: numpy even where numba is installed. Its numba kernels compile at their first call in
#: a process, about 3 s, which numpy's loop only overtakes far beyond an SBC run's size:
#: 60 simulations x 21 points took 0.06 s with numpy against 3.0 s with numba, 4,000 x 21
#: 0.9 s against 3.5 s, 1,000 x 1,001 7.9 s against 6.3 s (2 cores, numba 0.65).
NUMPY_BAND_WORK = 500_000


def ecdf_band(
    n: int, eval_points: Array, cdf_at_eval_points: Array, *, prob: float, method: str
) -> tuple[Array, Array]:
    """The lower and upper ends at `eval_points` of the simultaneous `prob` band of the
    ECDF of `n` uniform values ("optimized": Säilynoja, Bürkner and Vehtari 2022), with
    ArviZ's numpy kernels up to `NUMPY_BAND_WORK` (its switch restored afterwards)."""
    arviz = _arviz()  # imported quietly first: the submodule's import would import it
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from arviz.stats.ecdf_utils import ecdf_confidence_band

    switch: Any = getattr(arviz, "Numba", None)  # ArviZ 0.x's global numba switch
    small = n * len(eval_points) <= NUMPY_BAND_WORK
    by_numpy = switch is not None and bool(switch.numba_flag) and small
    if by_numpy:
        switch.disable_numba()
    try:
        lower, upper = ecdf_confidence_band(
            n, eval_points, cdf_at_eval_points, prob=prob, method=method
        )
    finally:
        if by_numpy:
            switch.enable_numba()
    return lower, upper


# ---------------------------------------------------------------- figures


def rc_context(settings: Mapping[str, Any]) -> Any:
    """ArviZ's settings for the block (a context manager), e.g. `plot.max_subplots`."""
    return _arviz().rc_context(dict(settings))


def plot_trace(
    idata: InferenceData,
    *,
    var_names: Sequence[str],
    coords: Mapping[str, Sequence[Any]],
    compact: bool,
    combined: bool,
) -> Any:
    """Each variable's density and draws, a line per chain; the axes drawn on."""
    return _arviz().plot_trace(
        idata, var_names=list(var_names), coords=dict(coords), compact=compact, combined=combined
    )


def plot_rank(
    idata: InferenceData, *, var_names: Sequence[str], coords: Mapping[str, Sequence[Any]]
) -> Any:
    """Each chain's rank histogram; the axes drawn on."""
    return _arviz().plot_rank(idata, var_names=list(var_names), coords=dict(coords))


def plot_pair(
    idata: InferenceData,
    *,
    var_names: Sequence[str],
    coords: Mapping[str, Sequence[Any]],
    kind: str,
    divergences: bool,
) -> Any:
    """Scatter of every pair of scalars; the axes drawn on."""
    return _arviz().plot_pair(
        idata, var_names=list(var_names), coords=dict(coords), kind=kind, divergences=divergences
    )


def plot_energy(idata: InferenceData, *, bfmi: bool) -> Any:
    """NUTS's marginal energy and its transitions (E-BFMI per chain); the axes drawn on."""
    return _arviz().plot_energy(idata, bfmi=bfmi)


def plot_forest(
    idata: InferenceData,
    *,
    var_names: Sequence[str],
    coords: Mapping[str, Sequence[Any]],
    combined: bool,
    r_hat: bool,
) -> Any:
    """Credible intervals per scalar (a line per chain unless `combined`), R-hat beside;
    the axes drawn on."""
    return _arviz().plot_forest(
        idata, var_names=list(var_names), coords=dict(coords), combined=combined, r_hat=r_hat
    )


def plot_ppc(
    idata: InferenceData, *, var_names: Sequence[str], coords: Mapping[str, Sequence[Any]]
) -> Any:
    """The observed data over the posterior predictive draws; the axes drawn on."""
    return _arviz().plot_ppc(idata, var_names=list(var_names), coords=dict(coords))


def plot_loo_pit(idata: InferenceData, *, y: str, ax: Any) -> Any:
    """Site `y`'s LOO-PIT against the uniform, drawn on `ax`."""
    return _arviz().plot_loo_pit(idata, y=y, ax=ax)


def plot_autocorr(
    idata: InferenceData,
    *,
    var_names: Sequence[str],
    coords: Mapping[str, Sequence[Any]],
    combined: bool,
) -> Any:
    """Autocorrelation by lag, per chain unless `combined`; the axes drawn on."""
    return _arviz().plot_autocorr(
        idata, var_names=list(var_names), coords=dict(coords), combined=combined
    )
