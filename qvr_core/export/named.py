"""A target's tables, named after the builtins registry.

How Stan, NumPyro or PyMC spells a family or a function is an attribute of a
namespace class named after the registry's entry (`class _StanFamilies: Normal =
...`), as the runtime's torch factories are (`runtime.distributions.Factories`).
`named` reads one into a dict by name. So no builtin's name is written as a string
outside the registry (tests/rails/test_registry_closed.py), a name the registry
does not have fails when the module is imported, and which builtins a target has
is a fact a program can list (docs/export.md's table is generated from them).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

T = TypeVar("T")


def named(namespace: type, registry: Mapping[str, object], kind: type[T]) -> dict[str, T]:
    """The public attributes of `namespace` by name, each a `kind`; every name must be
    an entry of `registry` (a misspelt family would otherwise be a silent gap)."""
    table: dict[str, T] = {}
    for name, value in vars(namespace).items():
        if name.startswith("_"):
            continue
        if name not in registry:
            raise ValueError(f"{namespace.__name__}.{name} is not a builtin of the registry")
        if not isinstance(value, kind):
            raise TypeError(f"{namespace.__name__}.{name} is not a {kind.__name__}")
        table[name] = value
    return table


def members(namespace: type, registry: Mapping[str, object]) -> tuple[str, ...]:
    """The names a namespace of flags lists (`Bernoulli = True`), in its order."""
    return tuple(name for name, flag in named(namespace, registry, bool).items() if flag)


__all__ = ["members", "named"]
