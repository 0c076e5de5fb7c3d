"""qvr's side of a scoring comparison: the point a NUTS chain starts from and the log
joint there, on data as a data file gives it (lists, indices from 0)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from qvr_core.check.module import CheckedModule
from qvr_core.runtime.model import ModelProgram, compile_model
from qvr_core.runtime.model.enumerate import SummedModel


@dataclass(frozen=True)
class Start:
    """Each latent site's value (constrained, float64) and qvr's log joint there."""

    point: dict[str, np.ndarray]
    log_joint: float


def qvr_start(
    module: CheckedModule, program: str, data: dict[str, Any], *, summed: bool = False
) -> Start:
    """The point a qvr NUTS chain starts from (each latent uniform in (-2, 2)
    unconstrained, seed 0) and qvr's log joint there, every constant kept and
    marginalized sites summed exactly. `summed`: the discrete latents NUTS sums out are
    summed out too and left out of the point (a target that enumerates them, as
    NumPyro does); else they are in the point at their drawn value (PyMC, which samples
    them)."""
    qvr = compile_model(module, program)
    inputs: dict[str, torch.Tensor] = {}
    observed: dict[str, torch.Tensor] = {}
    for d in module.models[program].data:
        whole = d.indexes is not None or (d.type is not None and d.type.element.discrete)
        value = torch.tensor(data[d.name], dtype=torch.long if whole else torch.float64)
        (observed if d.observed else inputs)[d.name] = value
    torch.manual_seed(0)
    start = qvr.initial_values(inputs, observed)
    scorer: ModelProgram | SummedModel = SummedModel(qvr, observed) if summed else qvr
    out = set(scorer.summed) if isinstance(scorer, SummedModel) else set()
    point = {
        s.name: start[s.name].double().numpy()
        for s in qvr.model.sites
        if s.kind == "sample" and s.name not in out
    }
    given = {k: torch.as_tensor(v) for k, v in point.items()}
    with torch.no_grad():
        joint = float(scorer.log_joint(inputs, {**given, **observed}).reshape(-1)[0])
    return Start(point, joint)
