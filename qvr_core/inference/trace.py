"""`trace(model, x, observations=None)`: one run of a program, site by site."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import torch

from qvr_core.runtime.program import Observed, ProgramModule


@dataclass(frozen=True)
class SiteRecord:
    """One site of a run: its value, `(B,)` log-density and whether data fixed it."""

    name: str
    value: torch.Tensor
    log_prob: torch.Tensor
    is_observed: bool


@dataclass(frozen=True)
class Trace:
    sites: dict[str, SiteRecord]
    output: torch.Tensor
    log_joint: torch.Tensor  # (B,): the sum of the sites' log-densities


def trace(
    model: ProgramModule,
    x: torch.Tensor,
    observations: Mapping[str, Observed] | None = None,
) -> Trace:
    """Run `model` once on `x`, clamping observed sites to `observations`."""
    observed = set(observations or {})
    result = model.run(x, observations=observations)
    sites = {
        name: SiteRecord(name, result.values[name], result.log_probs[name], name in observed)
        for name in model.site_names
    }
    return Trace(sites, result.output, result.log_joint)
