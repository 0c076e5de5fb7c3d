"""A point of a PyMC model as its value variables take it, for the PyMC export tests."""

from __future__ import annotations

from typing import Any

import numpy as np


def value_point(model: Any, point: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """A point of the model's random variables (constrained) as its value variables take
    it: each moved by the variable's transform (`model.rvs_to_transforms`: log for a
    scale, PyMC's simplex transform for a Dirichlet draw), as NUTS moves them."""
    out = {}
    for rv in model.free_RVs:
        value = np.asarray(point[rv.name])
        transform = model.rvs_to_transforms.get(rv)
        if transform is not None:
            value = transform.forward(value, *rv.owner.inputs).eval()
        out[model.rvs_to_values[rv].name] = value
    return out
