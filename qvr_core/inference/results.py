"""A run's draws kept for later: ArviZ InferenceData, or a plain `.npz` without ArviZ.

`qvr_core.runs.run_program(..., results=RunResults())` fills the groups ArviZ users
expect: `posterior` (NUTS draws, or a guide's draws for SVI), `sample_stats`
(per draw: `diverging`, `tree_depth`, `energy`, `n_steps`, `lp`),
`posterior_predictive` (with `predictive=True`: the observed sites drawn again
under each posterior draw), `prior` and `prior_predictive` (`method="prior"`),
`observed_data` and `constant_data` (the input `x`). Arrays of the draw groups
are `(chain, draw, *shape)`.

`qvr_core.runs.fit(source, ...)` is the Python entry point: the summary `qvr run`
prints and these results, which `inference_data()` turns into
`arviz.InferenceData` (the object `qvr run --output run.nc` writes).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

DRAW_GROUPS = ("posterior", "posterior_predictive", "sample_stats", "prior", "prior_predictive")
DATA_GROUPS = ("observed_data", "constant_data")


def have_arviz() -> bool:
    return importlib.util.find_spec("arviz") is not None


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

    def add(self, group: str, values: Mapping[str, Any]) -> None:
        if group not in DRAW_GROUPS + DATA_GROUPS:
            raise ValueError(f"unknown group {group!r}")
        self.groups.setdefault(group, {}).update({k: _array(v) for k, v in values.items()})

    def inference_data(self) -> Any:
        """`arviz.InferenceData` of the groups (needs the `arviz` extra)."""
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)  # arviz 0.2x announces its rewrite
            import arviz as az

            groups = {g: dict(v) for g, v in self.groups.items() if v}
            return az.from_dict(**groups)  # type: ignore[arg-type]  # one keyword per group, each a dict

    def write(self, path: str | Path) -> Path:
        """Write the results; returns the path written.

        A `.npz` path, or any path when ArviZ is not installed (the suffix then
        becomes `.npz`), gets one array per `group/variable`; otherwise the file
        is InferenceData in netCDF, which `arviz.from_netcdf` opens.
        """
        path = Path(path)
        if path.suffix != ".npz" and have_arviz():
            self.inference_data().to_netcdf(str(path))
            return path
        path = path.with_suffix(".npz")
        arrays = {f"{g}/{k}": v for g, values in self.groups.items() for k, v in values.items()}
        with path.open("wb") as f:
            np.savez(f, **arrays)  # type: ignore[arg-type]  # numpy's stub types **kwds as allow_pickle
        return path
