"""`arviz.InferenceData` from a run's groups, for every ArviZ this project supports.

ArviZ 0.2x's `az.from_dict` takes a keyword per group it knows and silently drops
any other: `log_prior` (what `az.psens` reads for power-scaling sensitivity) is one.
Both places that build a run's InferenceData (`inference.results` when a run is
written, `posterior.comparison` reading an `.npz` back) build it here, so a group
ArviZ adds or renames is one change. ArviZ itself is reached through
`arviz_adapter`, which imports it when called; nothing here imports numpy or torch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from qvr_core.draws import arviz_adapter
from qvr_core.draws.arviz_adapter import InferenceData

#: Groups `az.from_dict` leaves out, added to its result by name.
ADDED_GROUPS = ("log_prior",)


def inference_data_of(
    groups: Mapping[str, Mapping[str, Any]], dims: Mapping[str, Sequence[str]] | None = None
) -> InferenceData:
    """`arviz.InferenceData` of `groups` (group -> variable -> array): the groups
    `az.from_dict` takes made by it with the variables' named axes `dims`, the others
    (`ADDED_GROUPS`, one term per variable and draw: no axes to name) added after."""
    known = {g: dict(v) for g, v in groups.items() if g not in ADDED_GROUPS}
    added = {g: dict(v) for g, v in groups.items() if g in ADDED_GROUPS and v}
    idata = arviz_adapter.from_dict(known, dims)
    if added:
        arviz_adapter.add_groups(idata, added)
    return idata
