"""A run's draws kept for later: ArviZ InferenceData, or a plain `.npz` without ArviZ.

`qvr_core.runs.run_program(..., results=RunResults())` fills the groups ArviZ users
expect: `posterior` (NUTS draws, or a guide's draws for SVI), `sample_stats`
(per draw: `diverging`, `tree_depth`, `energy`, `n_steps`, `lp`),
`posterior_predictive` (with `predictive=True`: the observed sites drawn again
under each posterior draw), `log_likelihood` (NUTS and SVI: each observed site's
log-likelihood under each draw, elementwise, what `az.loo` and `az.waic` read;
`attrs["log_likelihood"]` says "pointwise", or why it was skipped), `log_prior` (NUTS
and SVI: each latent site's prior log-density under each draw, summed over its
elements, what `az.psens` and `qvr sensitivity` read; `attrs["log_prior"]` likewise), `prior` and
`prior_predictive` (`method="prior"`), `observed_data` and `constant_data` (the
input `x`). Arrays of the draw groups are `(chain, draw, *shape)`.

`qvr_core.runs.fit(source, ...)` is the Python entry point: the summary `qvr run`
prints and these results, which `inference_data()` turns into
`arviz.InferenceData` (the object `qvr run --output run.nc` writes).

`attrs` describe the run as a whole; `run_program` sets `status` ("complete",
or "partial" for a run stopped early: a Ctrl-C, SIGTERM or stop request),
`partial` (1 or 0), `method`, `steps` and `steps_requested`, and for NUTS
`draws` and `draws_requested` per chain. They become every group's
attributes in netCDF and `attrs/NAME` entries in an `.npz`.

The file is written beside its destination under a temporary name, then
renamed over it: a run interrupted while writing, or a full disk, leaves the
file that was there (or none), never half of one.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from qvr_core.draws import arviz_adapter
from qvr_core.draws.arviz_adapter import InferenceData
from qvr_core.draws.inference_data import ADDED_GROUPS, inference_data_of

DRAW_GROUPS = (
    "posterior",
    "posterior_predictive",
    "log_likelihood",
    "log_prior",
    "sample_stats",
    "prior",
    "prior_predictive",
)
DATA_GROUPS = ("observed_data", "constant_data")


def have_arviz() -> bool:
    """Whether the `arviz` extra is installed (`arviz_adapter.have_arviz`); a name here,
    looked up when called, that the server's views ask and tests replace."""
    return arviz_adapter.have_arviz()


def load_arviz() -> None:
    """Import ArviZ now (`arviz_adapter.load`); ImportError without the extra. Importing
    it takes 1.3 to 2.6 s here (matplotlib, scipy, numba), which the editor's spare
    worker pays before its run."""
    arviz_adapter.load()


def _array(value: Any) -> np.ndarray:
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu()
        if value.is_floating_point():
            value = value.to(torch.float64)
        value = value.numpy()
    return np.asarray(value)


@dataclass
class RunResults:
    """The groups of one run, by name: variable -> array."""

    groups: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)
    attrs: dict[str, str | int | float] = field(default_factory=dict)
    #: a variable's axes after (chain, draw) by name (`theta` -> `("School",)`): the
    #: program's plates, so ArviZ's selections and figures say `School`, not `theta_dim_0`
    dims: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def add(self, group: str, values: Mapping[str, Any]) -> None:
        if group not in DRAW_GROUPS + DATA_GROUPS:
            raise ValueError(f"unknown group {group!r}")
        self.groups.setdefault(group, {}).update({k: _array(v) for k, v in values.items()})

    def inference_data(self) -> InferenceData:
        """`arviz.InferenceData` of the groups (needs the `arviz` extra)."""
        load_arviz()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            groups = {g: dict(v) for g, v in self.groups.items() if v}
            idata = inference_data_of(groups, self._fitting_dims())
        for group in arviz_adapter.groups(idata):
            idata[group].attrs.update(self.attrs)
        return idata

    def _fitting_dims(self) -> dict[str, list[str]]:
        """The named axes of each variable whose arrays have them in every group (a
        variable of another shape somewhere keeps ArviZ's default names)."""
        fitting = {}
        for name, dims in self.dims.items():
            shapes = [
                v[name].shape[2:] if g in DRAW_GROUPS else v[name].shape
                for g, v in self.groups.items()
                if name in v and g not in ADDED_GROUPS  # log_prior: a term per site
            ]
            if shapes and all(len(shape) == len(dims) for shape in shapes):
                sizes = {len({shape[i] for shape in shapes}) for i in range(len(dims))}
                if sizes <= {1}:  # one size per named axis
                    fitting[name] = list(dims)
        return fitting

    @staticmethod
    def destination(path: str | Path) -> Path:
        """The file `write(path)` writes: `path`, or `path` with `.npz` for arrays."""
        path = Path(path)
        if path.suffix != ".npz" and have_arviz():
            return path
        return path.with_suffix(".npz")

    def write(self, path: str | Path) -> Path:
        """Write the results; returns the path written.

        A `.npz` path, or any path when ArviZ is not installed (the suffix then
        becomes `.npz`), gets one array per `group/variable`; otherwise the file
        is InferenceData in netCDF, which `arviz.from_netcdf` opens.
        """
        path = self.destination(path)
        if path.suffix != ".npz":
            idata = self.inference_data()
            write_replacing(path, lambda temporary: idata.to_netcdf(temporary))
            return path
        arrays = {f"{g}/{k}": v for g, values in self.groups.items() for k, v in values.items()}
        arrays.update({f"attrs/{k}": np.asarray(v) for k, v in self.attrs.items()})

        def save(temporary: str) -> None:
            with open(temporary, "wb") as f:
                np.savez(f, **arrays)  # type: ignore[arg-type]  # numpy's stub types **kwds as allow_pickle

        write_replacing(path, save)
        return path


def write_replacing(path: Path, write: Callable[[str], object]) -> None:
    """`write(temporary)` a file beside `path`, then rename it over `path` (a link's target
    is replaced, the link kept). Nothing is left behind when writing fails."""
    target = Path(os.path.realpath(path))
    temporary = _new_file(target)
    try:
        write(temporary)
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def _new_file(target: Path) -> str:
    """An empty new file beside `target`, its mode as any new file's (0666 less the umask)."""
    for _ in range(100):
        name = target.parent / f".{target.name}.{secrets.token_hex(4)}.tmp"
        try:
            os.close(os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
        except FileExistsError:
            continue
        return str(name)
    raise FileExistsError(f"no free temporary name beside {target}")
