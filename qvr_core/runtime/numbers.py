"""A number of a program as a tensor, one per value, dtype and device.

Read by the term evaluator and by the family factories (a parameter's default): NUTS
builds a site's distribution thousands of times, so a number is made once, not per call.
"""

from __future__ import annotations

import functools

import torch


def number(v: float) -> torch.Tensor:
    """A number as a tensor; the same one each time (nothing writes into them), one per
    dtype and device: a run on a GPU (`runs.device.computing_on`) reads numbers made
    there, not the CPU's made when the program was compiled."""
    return _number(float(v), torch.get_default_dtype(), torch.get_default_device())


@functools.lru_cache(maxsize=4096)
def _number(v: float, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    return torch.tensor(v, dtype=dtype, device=device)
