"""Runs kept for the run view's model comparison (issue #28), in the inference worker.

The language server makes one private directory per server process
(`InferenceRuns.keep_dir`, `keep_dirs`: `qvr-runs-<pid>-<token>` under the system's
temporary directory, mode 0700, removed when the server stops, or by a later server
once the server that made it is gone (its marker's lock released); never in the
workspace) and names it in
each NUTS or SVI request (`keep_dir`). After a completed run with a
`log_likelihood` group the worker writes the run there (`keep_run`:
`RunResults.write`, atomic) as `<key>.nc`, the key made of the document's file name
and the program (`run_key`: `eight_schools_centered.eight_schools`): the same
program run again replaces its file, and at most `MAX_KEPT` files stay (the
oldest by modification time go first). Then it reads the kept runs
(`posterior.comparison.read_run`: ArviZ's reader, through `qvr_core.draws.arviz_adapter`),
keeps those whose `observed_data` equal this run's (the same
variables, shapes and values: `comparable_runs`), and with two or more ranks them
by `qvr_core.posterior.comparison.compare_runs` (PSIS-LOO, ArviZ's numbers) for
the view's `comparison`, the current run's name under `current`
(`comparison_view`). With this run alone the view has no `comparison`, and its
`comparison_note` says to run another model on the same data.

Bounds: at most `MAX_KEPT` runs, and a run is kept (and compared) only when its
log-likelihood holds at most `MAX_POINTS` numbers (draws x observations: 4,000
draws of the eight schools are 32,000); a larger run gets a note
pointing at `qvr run --output` and `qvr compare`. Comparison needs the `arviz`
extra: without it the view's note says so.

Everything here runs in the worker (it imports numpy, and ArviZ when called),
never in the server.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from qvr_core.draws import arviz_adapter
from qvr_core.draws.arviz_adapter import InferenceData

#: Kept runs per server: the oldest beyond these are deleted.
MAX_KEPT = 8
#: A run is kept for comparison when its log-likelihood has at most these many numbers
#: (draws x observed values).
MAX_POINTS = 200_000
SUFFIX = ".nc"
ALONE_NOTE = (
    "run another model on the same data to compare it with this one (the editor keeps the "
    f"last {MAX_KEPT} NUTS and SVI runs of this session)"
)
NO_ARVIZ_NOTE = (
    "no model comparison: it needs ArviZ (install qvr with the arviz extra: pip install "
    "'qvr[arviz]')"
)


def check_keep_dir(path: object) -> Path:
    """The request's `keep_dir` as a path: an existing directory this process can write;
    ValueError otherwise."""
    if not isinstance(path, str) or not path:
        raise ValueError(f"keep_dir must be a directory's path, not {path!r}")
    directory = Path(path)
    if not directory.is_absolute():
        raise ValueError(f"keep_dir must be an absolute path, not {path!r}")
    if not directory.is_dir():
        raise ValueError(f"keep_dir {path!r} is not an existing directory")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise ValueError(f"keep_dir {path!r} is not writable")
    return directory


def run_key(path: str | None, program: str | None) -> str:
    """A file-name-safe key of a document's program: `eight_schools_centered.eight_schools`
    (the document's file name without `.qvr`, then the program)."""
    stem = Path(path).stem if path else "untitled"
    return f"{_safe(stem)}.{_safe(program or 'program')}"


def _safe(text: str) -> str:
    cleaned = re.sub(r"[^A-Za-z0-9_-]+", "_", text).strip("_")
    return (cleaned or "_")[:80]


def log_likelihood_points(results: Any) -> int:
    """Numbers in the run's log-likelihood (draws x observed values), 0 without it."""
    group = results.groups.get("log_likelihood") or {}
    return sum(int(np.asarray(v).size) for v in group.values())


def keep_run(results: Any, keep_dir: Path, key: str, *, limit: int = MAX_KEPT) -> Path:
    """Write `results` to `keep_dir/<key>.nc` (replacing that key's earlier run), then
    delete the oldest files past `limit`; the path written."""
    target = keep_dir / f"{key}{SUFFIX}"
    if target.is_symlink():  # the directory is private; a link there is not ours to follow
        target.unlink()
    written = Path(results.write(target))
    prune(keep_dir, limit, keep=written)
    return written


def kept_files(keep_dir: Path) -> list[Path]:
    """The kept runs, newest first (temporary files of a write in progress excluded)."""
    files = [
        p
        for p in keep_dir.glob(f"*{SUFFIX}")
        if not p.name.startswith(".") and p.is_file() and not p.is_symlink()
    ]
    return sorted(files, key=_mtime, reverse=True)


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:  # deleted by another worker meanwhile
        return 0.0


def prune(keep_dir: Path, limit: int, keep: Path | None = None) -> list[Path]:
    """Delete the oldest kept runs past `limit` (never `keep`); the ones deleted."""
    files = kept_files(keep_dir)
    if keep is not None and keep in files:
        files.remove(keep)
        files.insert(0, keep)
    gone = files[limit:]
    for p in gone:
        with contextlib.suppress(OSError):
            p.unlink()
    return gone


def comparable_runs(keep_dir: Path, key: str) -> dict[str, InferenceData]:
    """The kept runs (name -> InferenceData) whose observed data equal those of `key`'s
    run, that run first; a file that cannot be read is left out."""
    from qvr_core.posterior.comparison import RunFileError, read_run

    current = keep_dir / f"{key}{SUFFIX}"
    mine = read_run(current, need_log_likelihood=True)
    observed = _observed(mine)
    runs: dict[str, InferenceData] = {key: mine}
    for path in kept_files(keep_dir):
        name = path.name.removesuffix(SUFFIX)
        if name == key:
            continue
        try:
            idata = read_run(path, need_log_likelihood=True)
        except RunFileError:  # deleted meanwhile, or not a run: not compared
            continue
        if _same_data(observed, _observed(idata)):
            runs[name] = idata
    return runs


def _observed(idata: InferenceData) -> dict[str, np.ndarray] | None:
    if "observed_data" not in arviz_adapter.groups(idata):
        return None
    ds = idata.observed_data
    return {str(v): np.asarray(ds[v].values) for v in ds.data_vars}


def _same_data(a: Mapping[str, np.ndarray] | None, b: Mapping[str, np.ndarray] | None) -> bool:
    """The same variables, each of the same shape and values (NaN equal to NaN)."""
    if a is None or b is None or set(a) != set(b):
        return False
    for name, x in a.items():
        y = b[name]
        if x.shape != y.shape:
            return False
        numeric = np.issubdtype(x.dtype, np.number) and np.issubdtype(y.dtype, np.number)
        if not (np.array_equal(x, y, equal_nan=True) if numeric else np.array_equal(x, y)):
            return False
    return True


def comparison_view(results: Any, keep_dir: Path, key: str) -> dict[str, Any]:
    """The view's keys for the comparison: `comparison` (with `current`) when the run was
    kept and another kept run has the same data, else a `comparison_note` saying why not."""
    from qvr_core.inference.results import have_arviz

    if not have_arviz():
        return {"comparison_note": NO_ARVIZ_NOTE}
    if "log_likelihood" not in results.groups:
        why = str(results.attrs.get("log_likelihood", "")).removeprefix("skipped: ")
        return {
            "comparison_note": "no model comparison: the run has no pointwise log-likelihood"
            + (f" ({why})" if why else "")
        }
    points = log_likelihood_points(results)
    if points > MAX_POINTS:
        return {
            "comparison_note": f"no model comparison in the editor for {points:,} log-likelihood "
            f"values (draws x observations; at most {MAX_POINTS:,}): `qvr run --output a.nc` "
            "per model, then `qvr compare a.nc b.nc`"
        }
    keep_run(results, keep_dir, key)
    runs = comparable_runs(keep_dir, key)
    if len(runs) < 2:
        return {"comparison_note": ALONE_NOTE}
    from qvr_core.posterior.comparison import compare_runs

    comparison = compare_runs(runs).to_json()
    comparison["current"] = key
    return {"comparison": comparison}
