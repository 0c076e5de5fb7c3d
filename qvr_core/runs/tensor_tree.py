"""One function over the tensors of a run's inputs, whatever holds them.

A run's input and observations are tensors, `Padded` and `Masked` batches, and
dicts, lists and tuples of these; moving them to a device (`runs.device`) and
cutting a process's examples out of them (`runs.minibatch`) both rebuild the same
structure around new tensors.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import torch

from qvr_core.runtime.padding import Padded
from qvr_core.runtime.program import Masked


def map_tensors(value: Any, fn: Callable[[torch.Tensor], torch.Tensor]) -> Any:
    """`value` rebuilt with `fn` of each tensor in it: a tensor, a `Padded` or `Masked`
    batch, dicts, lists and tuples (named ones too) of these; anything else as it is."""
    if isinstance(value, torch.Tensor):
        return fn(value)
    if isinstance(value, Padded | Masked):
        mapped = {
            f.name: map_tensors(getattr(value, f.name), fn) for f in dataclasses.fields(value)
        }
        return dataclasses.replace(value, **mapped)
    if isinstance(value, dict):
        return {k: map_tensors(v, fn) for k, v in value.items()}
    if isinstance(value, list):
        return [map_tensors(v, fn) for v in value]
    if isinstance(value, tuple):
        items = [map_tensors(v, fn) for v in value]
        return type(value)(*items) if hasattr(value, "_fields") else tuple(items)
    return value
