"""`arviz.InferenceData` from a run's groups, for every ArviZ this project supports.

ArviZ 0.2x's `az.from_dict` takes a keyword per group it knows and silently drops
any other: `log_prior` (what `az.psens` reads for power-scaling sensitivity) is one.
Both places that build a run's InferenceData (`inference.results` when a run is
written, `posterior.comparison` reading an `.npz` back) build it here, so a group
ArviZ adds or renames is one change. Nothing here imports ArviZ, numpy or torch:
the caller hands in the `arviz` module it loaded.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: Groups `az.from_dict` leaves out, added to its result by name.
ADDED_GROUPS = ("log_prior",)


def inference_data_of(
    az: Any, groups: Mapping[str, Mapping[str, Any]], dims: Mapping[str, Any] | None = None
) -> Any:
    """`arviz.InferenceData` of `groups` (group -> variable -> array): the groups
    `az.from_dict` takes made by it with the variables' named axes `dims`, the others
    (`ADDED_GROUPS`, one term per variable and draw: no axes to name) added after."""
    known = {g: dict(v) for g, v in groups.items() if g not in ADDED_GROUPS}
    added = {g: dict(v) for g, v in groups.items() if g in ADDED_GROUPS and v}
    idata = az.from_dict(**known, dims=dict(dims or {}))
    if added:
        idata.add_groups(added)
    return idata
