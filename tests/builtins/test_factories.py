"""Every family of the registry has its runtime implementation, found by the family's name.

The runtime keeps no table keyed by family names (`tests/rails/test_registry_closed.py`):
a torch factory is a method of `Factories` named after its family, a kernel form a
class named after it. These tests fail when a registry family has none, or when an
implementation names no family.
"""

from __future__ import annotations

import pytest

from qvr_core.builtins import FAMILIES, KERNEL_FAMILIES
from qvr_core.builtins.families import FLOW
from qvr_core.runtime.distributions import Factories, factory
from qvr_core.runtime.families import KERNELS


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_every_family_but_a_dirac_one_has_a_torch_factory(name: str) -> None:
    family = FAMILIES[name]
    assert (factory(name) is None) is not family.has_distribution


def test_every_factory_is_named_after_a_family() -> None:
    public = {n for n in vars(Factories) if not n.startswith("_")}
    assert public == {n for n, f in FAMILIES.items() if f.has_distribution}


def test_a_name_that_is_no_family_finds_no_factory() -> None:
    for name in ("mro", "__init__", "__class__", "normal", ""):
        assert factory(name) is None


@pytest.mark.parametrize("name", [n for n in KERNEL_FAMILIES if n != FLOW])
def test_every_kernel_family_has_a_morphism_form_named_after_it(name: str) -> None:
    assert KERNELS[name].name == name
    assert KERNELS[name].__name__ == name
