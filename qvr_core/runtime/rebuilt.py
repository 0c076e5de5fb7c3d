"""`expand` for the families qvr builds itself, shared by `distributions.py` and the
modules of single families (`horseshoe.py`)."""

from __future__ import annotations

from typing import Any, ClassVar

import torch
from torch import distributions as D


class Rebuilt(D.Distribution):
    """`expand` by building the family again on expanded parameters: torch asks every
    subclass with a constructor of its own for an `expand`, and the runtime expands a
    family over plates and observed values (`PARAMS`: the constructor's arguments, in
    order, each kept as an attribute of that name)."""

    PARAMS: ClassVar[tuple[str, ...]]

    def expand(
        self, batch_shape: torch.Size | list[int] | tuple[int, ...], _instance: Any = None
    ) -> Any:
        shape = torch.Size(batch_shape)
        return type(self)(*(getattr(self, p).expand(shape) for p in self.PARAMS))
