"""PSIS-LOO and WAIC of runs, and their comparison, computed by ArviZ.

A fit is the start of the workflow: which of several models predicts new data
best is what `az.loo` (Pareto-smoothed importance sampling leave-one-out, Vehtari,
Gelman and Gabry 2017), `az.waic` and `az.compare` estimate from each run's
pointwise log-likelihood (the `log_likelihood` group `qvr run --output` writes).
Nothing is re-derived here: the numbers are ArviZ's, on the files as written, so
`az.compare` in a notebook gives the same table as `qvr compare`.

What this module adds is the reading of them:

- one run (`loo_of`, or `compare_*` with one run: `az.compare` needs two) gets a
  row of its own, weight 1;
- a run with several observed sites: `az.loo` needs one variable, so the sites
  are combined into one, named `a+b`: summed elementwise when every site has the
  same shape (one term per row: leaving a row out leaves out its value of every
  site), else each observation of each site a term of its own (flattened and
  concatenated); `var_name` picks one site instead;
- ArviZ's warnings are caught and become `FitWarning`s with a remedy, and the
  Pareto k values are counted: k above ArviZ's threshold (`good_k`, 0.7 from
  2,154 draws, lower for fewer) means PSIS-LOO is unreliable for that
  observation (a remedy: refit without it, exact LOO or `az.reloo`, or K-fold).
  For WAIC, the count is of observations whose log predictive density varies by
  more than 0.4 over the draws (ArviZ's criterion for its WAIC warning).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from qvr_core.draws import arviz_adapter
from qvr_core.draws.arviz_adapter import InferenceData
from qvr_core.draws.inference_data import inference_data_of
from qvr_core.host.datafile import quoted
from qvr_core.posterior.run_files import (
    RunFileError,
    RunFileTooLargeError,
    shown_path,
    size_run_file,
)
from qvr_core.sizing.resources import default_budget
from qvr_core.text.units import format_bytes

#: The information criteria, by the name `az.compare` takes.
CRITERIA = ("loo", "waic")

#: ArviZ's WAIC warning: an observation whose log predictive density varies more than
#: this over the draws (its posterior variance) makes WAIC unreliable.
WAIC_VARIANCE = 0.4

#: Observations named in a warning (the worst first); the count says how many in all.
SHOWN = 5

#: The fewest draws per chain a run is compared with: ArviZ's own minimum for the
#: effective sample size `az.loo` weighs the draws by (fewer fail, or give nonsense).
MIN_DRAWS = 4

#: Bytes a number of a group takes in the comparison's working copies, besides the
#: number as read: `az.loo` holds some four float64 copies of the log-likelihood
#: (measured: a peak of about five times the variable), the predictive checks
#: (`--checks`) two of the replicated data.
WORKING = {"log_likelihood": 32, "posterior_predictive": 16}


@dataclass(frozen=True)
class FitWarning:
    """One reason to doubt a number: a stable `code`, what was seen, what to do."""

    code: str
    message: str
    remedy: str

    def to_json(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message, "remedy": self.remedy}


@dataclass(frozen=True)
class ComparisonRow:
    """One run in a comparison, as `az.compare` gives it (`rank` 0 is the best; `d_elpd`
    and `dse` are the difference to the best and its standard error), with how many of
    its observations are unreliable (`pareto_k_bad`: Pareto k over ArviZ's threshold,
    or for WAIC a log predictive density varying more than 0.4)."""

    name: str
    rank: int
    elpd: float
    se: float
    p: float
    d_elpd: float
    dse: float
    weight: float
    warning: bool
    pareto_k_bad: int

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "rank": self.rank,
            "elpd": _finite(self.elpd),
            "se": _finite(self.se),
            "p": _finite(self.p),
            "d_elpd": _finite(self.d_elpd),
            "dse": _finite(self.dse),
            "weight": _finite(self.weight),
            "warning": self.warning,
            "pareto_k_bad": self.pareto_k_bad,
        }


@dataclass(frozen=True)
class Comparison:
    """Runs ranked by expected log predictive density (`ic` "loo" or "waic", on ArviZ's
    `scale`, "log": higher is better), with the warnings of every run; `notes` say how
    each run's log-likelihood was read (sites combined, the site picked)."""

    ic: str
    rows: tuple[ComparisonRow, ...]
    scale: str
    warnings: tuple[FitWarning, ...]
    notes: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """What `qvr compare --json` prints."""
        return {
            "ic": self.ic,
            "scale": self.scale,
            "rows": [r.to_json() for r in self.rows],
            "warnings": [w.to_json() for w in self.warnings],
            "notes": list(self.notes),
        }


@dataclass(frozen=True)
class Loo:
    """PSIS-LOO (or WAIC, `ic`) of one run, `az.loo`'s numbers: the expected log
    predictive density `elpd`, its standard error `se`, the effective number of
    parameters `p`; per observation its Pareto k (`pareto_k`, LOO only; flattened in
    the order of the log-likelihood variable `var_name`), counted against ArviZ's
    threshold `good_k`: good, bad (up to 1), very bad (over 1)."""

    ic: str
    var_name: str
    elpd: float
    se: float
    p: float
    n_samples: int
    n_data_points: int
    scale: str
    good_k: float | None
    pareto_k: tuple[float, ...]
    k_counts: Mapping[str, int]
    warnings: tuple[FitWarning, ...]
    note: str | None = None

    @property
    def bad(self) -> int:
        """Observations the estimate is unreliable for (k over the threshold)."""
        return self.k_counts.get("bad", 0) + self.k_counts.get("very_bad", 0)

    def to_json(self) -> dict[str, Any]:
        return {
            "ic": self.ic,
            "var_name": self.var_name,
            "elpd": _finite(self.elpd),
            "se": _finite(self.se),
            "p": _finite(self.p),
            "n_samples": self.n_samples,
            "n_data_points": self.n_data_points,
            "scale": self.scale,
            "good_k": self.good_k,
            "pareto_k": [_finite(k) for k in self.pareto_k],
            "k_counts": dict(self.k_counts),
            "warnings": [w.to_json() for w in self.warnings],
            "note": self.note,
        }


class ComparisonError(ValueError):
    """Runs that cannot be compared with each other (different numbers of observations)."""


# ---------------------------------------------------------------- one run


def loo_of(idata: InferenceData, *, var_name: str | None = None, name: str = "the run") -> Loo:
    """PSIS-LOO of one run (`arviz.InferenceData` with a `log_likelihood` group) by
    `az.loo`, with its Pareto k counts and warnings; `var_name` picks one observed
    site (default: every site, combined as the module docstring says)."""
    return criterion_of(idata, ic="loo", var_name=var_name, name=name)


def criterion_of(
    idata: InferenceData, *, ic: str = "loo", var_name: str | None = None, name: str = "the run"
) -> Loo:
    """`loo_of`, or with `ic="waic"` WAIC by `az.waic` (its count of unreliable
    observations: those whose log predictive density varies more than 0.4)."""
    return _criterion(idata, ic, var_name, name)[0]


def _criterion(idata: InferenceData, ic: str, var_name: str | None, name: str) -> tuple[Loo, Any]:
    """`criterion_of` with ArviZ's own result (`ELPDData`), which `az.compare` takes
    instead of computing the criterion again."""
    _check_ic(ic)
    single, var, note = likelihood_of(idata, var_name, name)
    caught: list[FitWarning] = []
    with _arviz_warnings(caught, name):
        criterion = arviz_adapter.loo if ic == "loo" else arviz_adapter.waic
        result = criterion(single, pointwise=True)
    log_lik = np.asarray(single.log_likelihood[var].values, dtype=float)
    if ic == "loo":
        k = np.asarray(result["pareto_k"].values, dtype=float).reshape(-1)
        good_k: float | None = float(result["good_k"])
        counts = {
            "good": int(np.sum(k <= good_k)),
            "bad": int(np.sum((k > good_k) & (k <= 1))),
            "very_bad": int(np.sum(k > 1)),
        }
        pareto_k = tuple(float(v) for v in k)
    else:
        good_k, pareto_k = None, ()
        variance = _lpd_variance(log_lik)
        counts = {"good": int(np.sum(variance <= WAIC_VARIANCE))}
        counts["bad"] = int(variance.size - counts["good"])
    loo = Loo(
        ic=ic,
        var_name=var,
        elpd=float(result[f"elpd_{ic}"]),
        se=float(result["se"]),
        p=float(result[f"p_{ic}"]),
        n_samples=int(result["n_samples"]),
        n_data_points=int(result["n_data_points"]),
        scale=str(result["scale"]),
        good_k=good_k,
        pareto_k=pareto_k,
        k_counts=counts,
        warnings=(),
        note=note,
    )
    own = _warnings_of(loo, idata, name, log_lik)
    return _replace_warnings(loo, (*own, *(w for w in caught if w not in own))), result


def _replace_warnings(loo: Loo, found: tuple[FitWarning, ...]) -> Loo:
    unique: list[FitWarning] = []
    for w in found:
        if w not in unique:
            unique.append(w)
    return replace(loo, warnings=tuple(unique))


def _warnings_of(
    loo: Loo, idata: InferenceData, name: str, log_lik: np.ndarray
) -> list[FitWarning]:
    """The reasons to doubt one run's estimate, each with its remedy."""
    out: list[FitWarning] = []
    what = "PSIS-LOO" if loo.ic == "loo" else "WAIC"
    if loo.ic == "loo" and loo.bad:
        k = np.asarray(loo.pareto_k)
        worst = np.argsort(-k)[: min(SHOWN, loo.bad)]
        shown = ", ".join(f"{i} (k = {k[i]:.2f})" for i in worst)
        very = loo.k_counts.get("very_bad", 0)
        out.append(
            FitWarning(
                "pareto_k",
                f"{name}: PSIS-LOO is unreliable for {loo.bad} of {loo.n_data_points} "
                f"observations (Pareto k > {loo.good_k:.2f}"
                + (f"; {very} over 1" if very else "")
                + f"), worst: {shown}",
                "refit without them (exact LOO for those observations, az.reloo) or use "
                "K-fold cross-validation; a model more robust to such observations (a "
                "heavier-tailed likelihood) often lowers k",
            )
        )
    if loo.ic == "waic" and loo.k_counts.get("bad", 0):
        out.append(
            FitWarning(
                "waic_variance",
                f"{name}: WAIC is unreliable for {loo.k_counts['bad']} of "
                f"{loo.n_data_points} observations (their log predictive density varies "
                f"more than {WAIC_VARIANCE} over the draws)",
                "use PSIS-LOO (--ic loo), whose Pareto k says which observations are hard, "
                "or K-fold cross-validation",
            )
        )
    if loo.n_data_points == 1:
        out.append(
            FitWarning(
                "one_term",
                f"{name}: the log-likelihood is one term for all the data (a `marginalize` "
                "scope without groups, or a discrete latent read by every observation): "
                f"{what} leaves the whole data set out, not one observation",
                "give the scope groups (`over=` the observations' plate) for a term per "
                "observation, or compare the models by --var on a site outside the scope",
            )
        )
    parameters = _continuous_parameters(idata)
    if loo.ic == "loo" and parameters and loo.p > parameters and loo.n_data_points > 1:
        out.append(
            FitWarning(
                "p_loo",
                f"{name}: p_loo ({loo.p:.1f}) exceeds the number of parameters "
                f"({parameters}): the model is likely misspecified",
                "check it with posterior predictive checks (qvr compare --checks) and look "
                "at the observations with a high Pareto k",
            )
        )
    divergent = _divergences(idata)
    if divergent:
        out.append(
            FitWarning(
                "divergences",
                f"{name}: {divergent} divergent transitions: the draws may miss part of the "
                f"posterior, and {what} with them",
                "reparameterise (a non-centred form for a hierarchical scale) or raise the "
                "warmup until no draw diverges, before trusting the comparison",
            )
        )
    attrs = _attrs(idata)
    if attrs.get("method") == "svi":
        out.append(
            FitWarning(
                "svi_draws",
                f"{name}: the draws are an SVI guide's, not the posterior's: {what} is that "
                "of the guide's approximation (one chain of independent draws)",
                "fit with --method nuts for a comparison under the posterior",
            )
        )
    if attrs.get("status") == "partial":
        out.append(
            FitWarning(
                "partial",
                f"{name}: the run was stopped early ({attrs.get('stopped', 'partial')}): "
                f"{what} is of the draws it made",
                "rerun it to the end before comparing",
            )
        )
    if not np.all(np.isfinite(log_lik)):
        out.append(
            FitWarning(
                "non_finite",
                f"{name}: the log-likelihood is not finite at some draws (an observation "
                "outside the support the model gives it)",
                "check the data against the model's families and bounds",
            )
        )
    return out


def _lpd_variance(log_lik: np.ndarray) -> np.ndarray:
    """Each observation's posterior variance of its log predictive density (ArviZ's
    WAIC criterion), `(chain, draw, ...)` -> flat."""
    flat = log_lik.reshape(log_lik.shape[0] * log_lik.shape[1], -1)
    return np.asarray(np.var(flat, axis=0, ddof=1), dtype=float)


def _continuous_parameters(idata: InferenceData) -> int:
    """How many continuous values one posterior draw holds (0 without a posterior)."""
    posterior = getattr(idata, "posterior", None)
    if posterior is None:
        return 0
    total = 0
    for v in posterior.data_vars.values():
        if np.issubdtype(v.dtype, np.floating):
            total += int(np.prod(v.shape[2:], dtype=int))
    return total


def _divergences(idata: InferenceData) -> int:
    stats = getattr(idata, "sample_stats", None)
    if stats is None or "diverging" not in stats.data_vars:
        return 0
    return int(np.asarray(stats["diverging"].values).sum())


def _attrs(idata: InferenceData) -> dict[str, Any]:
    for group in ("posterior", "log_likelihood"):
        ds = getattr(idata, group, None)
        if ds is not None:
            return dict(ds.attrs)
    return {}


# ---------------------------------------------------------------- several runs


def compare_runs(
    runs: Mapping[str, Any], *, ic: str = "loo", var_name: str | None = None
) -> Comparison:
    """Rank runs (name -> `arviz.InferenceData`) by `az.compare` (stacking weights); one
    run gets its own row from `az.loo` (or `az.waic`). `var_name` picks the same
    observed site in every run."""
    _check_ic(ic)
    if not runs:
        raise ComparisonError("nothing to compare: give at least one run")
    computed: dict[str, Any] = {}  # ArviZ's ELPDData: az.compare does not compute it again
    each: dict[str, Loo] = {}
    for name, idata in runs.items():
        each[name], computed[name] = _criterion(idata, ic, var_name, name)
    found = [w for loo in each.values() for w in loo.warnings]
    notes = tuple(f"{n}: {loo.note}" for n, loo in each.items() if loo.note)
    if len(runs) == 1:
        ((name, loo),) = each.items()
        row = ComparisonRow(name, 0, loo.elpd, loo.se, loo.p, 0.0, 0.0, 1.0, bool(loo.bad), loo.bad)
        return Comparison(ic, (row,), loo.scale, _unique(found), notes)
    _same_observations(each)
    found.extend(_data_differs(runs))
    caught: list[FitWarning] = []
    with _arviz_warnings(caught, "the comparison"):
        table = arviz_adapter.compare(computed, ic=ic)
    rows = []
    for name, r in table.iterrows():
        key = str(name)
        rows.append(
            ComparisonRow(
                name=key,
                rank=int(r["rank"]),
                elpd=float(r[f"elpd_{ic}"]),
                se=float(r["se"]),
                p=float(r[f"p_{ic}"]),
                d_elpd=float(r["elpd_diff"]),
                dse=float(r["dse"]),
                weight=float(r["weight"]),
                warning=bool(r["warning"]),
                pareto_k_bad=each[key].bad,
            )
        )
    found.extend(_close_calls(rows))
    found.extend(w for w in caught if not _covered(w, found))
    scale = str(table["scale"].iloc[0]) if len(table) else "log"
    return Comparison(ic, tuple(rows), scale, _unique(found), notes)


def compare_files(
    paths: Sequence[str | Path],
    *,
    ic: str = "loo",
    var_name: str | None = None,
    budget: int | None = None,
) -> Comparison:
    """`compare_runs` of the files `qvr run --output` wrote (netCDF or `.npz`), each named
    by its file's stem (with its folders when two stems are the same). A file that
    cannot be read, has no log-likelihood or would not fit the memory budget with those
    before it raises `RunFileError` naming it."""
    return compare_runs(
        read_runs(paths, need_log_likelihood=True, budget=budget), ic=ic, var_name=var_name
    )


def run_names(paths: Sequence[str | Path]) -> list[str]:
    """A name per file: its stem, with as many of its folders as make the names differ
    (`a/run` and `b/run`), and `#2`, `#3` for the same file given again."""
    parts = [Path(p).with_suffix("").parts or (str(p),) for p in paths]
    longest = max((len(p) for p in parts), default=1)
    depth = next(
        (d for d in range(1, longest + 1) if len({p[-d:] for p in parts}) == len(parts)), 1
    )
    names = ["/".join(p[-depth:]) for p in parts]
    seen: dict[str, int] = {}
    out = []
    for n in names:
        seen[n] = seen.get(n, 0) + 1
        out.append(n if seen[n] == 1 else f"{n}#{seen[n]}")
    return out


def read_runs(
    paths: Sequence[str | Path], *, need_log_likelihood: bool = False, budget: int | None = None
) -> dict[str, Any]:
    """`read_run` of each file, by `run_names`: together within the memory `budget`
    (None: the default budget, half the memory available), since a comparison holds
    every run it reads."""
    limit = budget if budget is not None else default_budget()
    runs: dict[str, Any] = {}
    held = 0
    for name, path in zip(run_names(paths), paths, strict=True):
        runs[name], need = _read_run(path, need_log_likelihood, limit, held)
        held += need
    return runs


def read_run(
    path: str | Path, *, need_log_likelihood: bool = False, budget: int | None = None
) -> Any:
    """The `arviz.InferenceData` of a file `qvr run --output` wrote: netCDF, or the
    `.npz` written without ArviZ (`group/variable` arrays). `RunFileError` when it
    cannot be read, when its arrays (by their headers, before any is read) would not
    fit the memory `budget` (None: the default budget), or (`need_log_likelihood`)
    when it has no `log_likelihood` group or one PSIS-LOO cannot read (`check_run`)."""
    limit = budget if budget is not None else default_budget()
    return _read_run(path, need_log_likelihood, limit, 0)[0]


def _read_run(
    path: str | Path, need_log_likelihood: bool, budget: int, held: int
) -> tuple[Any, int]:
    """`read_run` within `budget` less the `held` bytes of the runs before it; with what
    reading it may hold."""
    shown = shown_path(path)
    p = Path(path)
    if not p.is_file():
        raise RunFileError(shown, "no such file" if not p.exists() else "not a file")
    size = size_run_file(p, WORKING)
    size.check(shown, budget, held)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            idata = _read_npz(p) if p.suffix == ".npz" else arviz_adapter.from_netcdf(p)
    except MemoryError:
        raise RunFileTooLargeError(
            shown,
            f"ran out of memory reading it, within the memory budget of {format_bytes(budget)} "
            "(the machine had less to give): lower --memory-budget",
        ) from None
    except Exception as e:  # netCDF, HDF5 and numpy each fail in their own words
        why = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise RunFileError(
            shown,
            f"cannot read it as InferenceData (netCDF) or .npz ({why}): give a file "
            "written by qvr run --output",
        ) from None
    if need_log_likelihood and "log_likelihood" not in arviz_adapter.groups(idata):
        skipped = str(_attrs(idata).get("log_likelihood", ""))
        why = f" (the run skipped it: {skipped.removeprefix('skipped: ')})" if skipped else ""
        raise RunFileError(
            shown,
            f"has no log_likelihood group{why}: rerun with qvr run --output "
            "(--method nuts or svi keeps it)",
        )
    if need_log_likelihood:
        check_run(idata, shown)
    return idata, size.total


def check_run(idata: InferenceData, name: str) -> None:
    """Refuse (`RunFileError` naming `name`) a run PSIS-LOO and WAIC cannot read, which
    ArviZ would fail on with a traceback or answer with nonsense: a log-likelihood that
    is not real numbers (booleans, integers, complex numbers, text), without chain and
    draw axes, with fewer than `MIN_DRAWS` draws per chain or no observations; no
    posterior, or one whose draws are not numbers (`az.loo` weighs the draws by their
    effective sample size)."""
    if "log_likelihood" not in arviz_adapter.groups(idata):
        raise RunFileError(
            name, "has no log_likelihood group: rerun with qvr run --output (nuts or svi)"
        )
    ds = idata.log_likelihood
    if not ds.data_vars:
        raise RunFileError(name, "its log_likelihood group is empty")
    for var, values in ds.data_vars.items():
        what = f"its log-likelihood {quoted(str(var))}"
        if values.dtype.kind != "f":
            raise RunFileError(
                name,
                f"{what} holds {_dtype_name(values.dtype)} values, not real numbers: give a "
                "file written by qvr run --output",
            )
        _check_draws(values, what, name)
        if values.size == 0:
            raise RunFileError(name, f"{what} has no observations (shape {values.shape})")
    if "posterior" not in arviz_adapter.groups(idata) or not idata.posterior.data_vars:
        raise RunFileError(
            name,
            "has no posterior draws, which PSIS-LOO weighs the log-likelihood by: give a "
            "file written by qvr run --output",
        )
    for var, values in idata.posterior.data_vars.items():
        what = f"its posterior {quoted(str(var))}"
        if values.dtype.kind not in "biuf":
            raise RunFileError(
                name,
                f"{what} holds {_dtype_name(values.dtype)} values, not numbers: give a file "
                "written by qvr run --output",
            )
        _check_draws(values, what, name)


def _check_draws(values: Any, what: str, name: str) -> None:
    dims = tuple(str(d) for d in values.dims)
    if dims[:2] != ("chain", "draw"):
        raise RunFileError(
            name,
            f"{what} has axes {dims}, not (chain, draw, ...): give a file written by "
            "qvr run --output",
        )
    draws = int(values.sizes["draw"])
    if draws < MIN_DRAWS:
        raise RunFileError(
            name,
            f"{what} has {draws} draw{'s' if draws != 1 else ''} per chain: PSIS-LOO and "
            f"WAIC need at least {MIN_DRAWS} (rerun with more --steps)",
        )


def _dtype_name(dtype: np.dtype[Any]) -> str:
    """A dtype in a message: `bool`, `int64`, `complex128`, `text` (numpy's `<U3`, or the
    `object` xarray reads a netCDF string as)."""
    return "text" if dtype.kind in "OSU" else str(dtype)


def _read_npz(path: Path) -> Any:
    groups: dict[str, dict[str, np.ndarray]] = {}
    attrs: dict[str, Any] = {}
    with np.load(path, allow_pickle=False) as arrays:
        for key in arrays.files:
            group, _, var = key.partition("/")
            if group == "attrs":
                attrs[var] = arrays[key].item()
            else:
                groups.setdefault(group, {})[var] = arrays[key]
    if not groups:
        raise ValueError("no arrays of a run in it")
    idata = inference_data_of(groups)
    for group in arviz_adapter.groups(idata):
        idata[group].attrs.update(attrs)
    return idata


# ---------------------------------------------------------------- the log-likelihood


def likelihood_of(
    idata: InferenceData, var_name: str | None, name: str
) -> tuple[Any, str, str | None]:
    """The run reduced to one log-likelihood variable, what `az.loo` takes: the run
    itself when it has one (or `var_name` picks one), else its sites combined into
    `a+b` (see the module docstring); with the variable's name and how it was made.
    `RunFileError` for a run PSIS-LOO cannot read (`check_run`)."""
    check_run(idata, name)
    ds = idata.log_likelihood
    sites = [str(v) for v in ds.data_vars]
    if var_name is not None:
        if var_name not in sites:
            raise RunFileError(
                name,
                f"has no log-likelihood of {var_name!r}; its variables: {', '.join(sites)}",
            )
        if len(sites) == 1:
            return idata, var_name, None
        return _single(idata, var_name, ds[var_name]), var_name, f"site {var_name} only"
    if len(sites) == 1:
        return idata, sites[0], None
    joined = "+".join(sites)
    arrays = [np.asarray(ds[s].values) for s in sites]
    if all(a.shape == arrays[0].shape for a in arrays):
        combined = xr.DataArray(sum(arrays[1:], arrays[0]), dims=ds[sites[0]].dims)
        how = f"sites {', '.join(sites)} summed per observation (one term per row)"
    else:
        chains, draws = arrays[0].shape[:2]
        flat = np.concatenate([a.reshape(chains, draws, -1) for a in arrays], axis=-1)
        combined = xr.DataArray(flat, dims=("chain", "draw", "observation"))
        how = f"sites {', '.join(sites)} concatenated (each observation of each a term)"
    return _single(idata, joined, combined), joined, how


def _single(idata: InferenceData, var: str, values: xr.DataArray) -> Any:
    """A run with only `posterior` (for the relative efficiency `az.loo` reads) and one
    log-likelihood variable."""
    groups: dict[str, xr.Dataset] = {"log_likelihood": xr.Dataset({var: values})}
    if "posterior" in arviz_adapter.groups(idata):
        groups["posterior"] = idata.posterior
    return arviz_adapter.of_groups(groups)


def _same_observations(each: Mapping[str, Loo]) -> None:
    counts = {n: loo.n_data_points for n, loo in each.items()}
    if len(set(counts.values())) > 1:
        listed = ", ".join(f"{n}: {c}" for n, c in counts.items())
        raise ComparisonError(
            f"the runs have different numbers of log-likelihood terms ({listed}): models are "
            "compared on the same observations; pick one site with --var, or refit on the "
            "same data"
        )


def _data_differs(runs: Mapping[str, Any]) -> list[FitWarning]:
    """A warning when the runs' observed data are not the same numbers (values that are
    not numbers, text say, compared as they are)."""
    seen: dict[str, list[np.ndarray]] = {}
    for name, idata in runs.items():
        if "observed_data" not in arviz_adapter.groups(idata):
            continue
        ds = idata.observed_data
        seen[name] = [np.asarray(ds[v].values).reshape(-1) for v in sorted(ds.data_vars)]
    if len(seen) < 2:
        return []
    first_name, first = next(iter(seen.items()))
    differ = [n for n, v in seen.items() if not _same_values(v, first)]
    if not differ:
        return []
    return [
        FitWarning(
            "different_data",
            f"the observed data of {', '.join(differ)} differ from those of {first_name}: "
            "an elpd difference then compares data sets as well as models",
            "fit every model to the same data file",
        )
    ]


def _same_values(a: list[np.ndarray], b: list[np.ndarray]) -> bool:
    """The same values variable by variable, numbers within floating-point error (NaN
    equal to NaN), anything else exactly."""
    if len(a) != len(b):
        return False
    for x, y in zip(a, b, strict=True):
        if x.shape != y.shape:
            return False
        if x.dtype.kind in "biuf" and y.dtype.kind in "biuf":
            if not np.allclose(x.astype(float), y.astype(float), equal_nan=True):
                return False
        elif not np.array_equal(x, y):
            return False
    return True


def _close_calls(rows: list[ComparisonRow]) -> list[FitWarning]:
    """A note of models the comparison cannot tell apart: |d_elpd| within 2 dse."""
    out = []
    for r in rows[1:]:
        if math.isfinite(r.dse) and abs(r.d_elpd) <= 2 * r.dse:
            out.append(
                FitWarning(
                    "indistinct",
                    f"{r.name} is within two standard errors of {rows[0].name} "
                    f"(d_elpd {r.d_elpd:.2f}, dse {r.dse:.2f}): the data do not tell them apart",
                    "prefer the simpler or better-checked model, or average them by the "
                    "stacking weights",
                )
            )
    return out


# ---------------------------------------------------------------- ArviZ's warnings


@contextmanager
def _arviz_warnings(into: list[FitWarning], name: str) -> Iterator[None]:
    """ArviZ's warnings in the block, caught (never printed) and turned into ours."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    for w in caught:
        found = _translate(w.category, str(w.message), name)
        if found is not None and found not in into:
            into.append(found)


def _translate(category: type[Warning], message: str, name: str) -> FitWarning | None:
    if issubclass(category, FutureWarning | DeprecationWarning | PendingDeprecationWarning):
        return None  # ArviZ's own plans, nothing about the model
    first = message.strip().splitlines()[0] if message.strip() else category.__name__
    if "shape parameter of Pareto" in message:
        return None  # counted, with the observations named, by `_warnings_of`
    if "posterior variance of the log predictive densities exceeds" in message:
        return None  # counted by `_warnings_of` (waic_variance)
    if "point-wise LOO is the same with the sum LOO" in message:
        return FitWarning(
            "not_pointwise",
            f"{name}: every observation has the same LOO term: the log-likelihood looks "
            "summed, not one term per observation",
            "check the run's log_likelihood group; rerun with qvr run --output",
        )
    if issubclass(category, RuntimeWarning):
        return FitWarning(
            "numerics",
            f"{name}: ArviZ met a numerical problem: {first}",
            "the log-likelihood may hold -inf or very large values (an observation "
            "outside the model's support); check the data and the model",
        )
    return FitWarning("arviz", f"{name}: ArviZ: {first}", "see ArviZ's documentation")


def _covered(w: FitWarning, found: list[FitWarning]) -> bool:
    return any(w.message.split(": ", 1)[-1] == f.message.split(": ", 1)[-1] for f in found)


def _unique(found: list[FitWarning]) -> tuple[FitWarning, ...]:
    out: list[FitWarning] = []
    for w in found:
        if w not in out:
            out.append(w)
    return tuple(out)


def _check_ic(ic: str) -> None:
    if ic not in CRITERIA:
        raise ValueError(f"unknown information criterion {ic!r}: one of {', '.join(CRITERIA)}")


def _finite(v: float) -> float | None:
    return v if math.isfinite(v) else None


__all__ = [
    "Comparison",
    "ComparisonError",
    "ComparisonRow",
    "FitWarning",
    "Loo",
    "RunFileError",
    "RunFileTooLargeError",
    "check_run",
    "compare_files",
    "compare_runs",
    "criterion_of",
    "loo_of",
    "read_run",
    "read_runs",
    "run_names",
]
