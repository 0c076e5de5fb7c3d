"""A ModuleDict that accepts any QVR identifier as a key.

`nn.ModuleDict` refuses keys that shadow one of its attributes, and QVR
names such as `update`, `keys` or `values` are perfectly good morphism and
site names. Entries are stored in `_modules` directly, which is all
parameter naming, `state_dict` and `.to()` look at; read them with `d[key]`.
"""

from __future__ import annotations

from torch import nn


class NameTable(nn.ModuleDict):
    """`nn.ModuleDict` keyed by QVR names (no `.`), including ones like `update`."""

    def __setitem__(self, key: str, module: nn.Module) -> None:
        if not isinstance(key, str) or not key or "." in key:
            raise KeyError(f"invalid module name {key!r}")
        self._modules[key] = module
