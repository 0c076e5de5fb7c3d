"""The unconstrained parameterisation shared by the guide and NUTS."""

from __future__ import annotations

import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.distributions import constraints as C

from qvr_core.inference.sites import FlatLayout, LatentSite, constraint_transform

SUPPORTS = {"real": C.real, "positive": C.positive, "unit": C.unit_interval, "simplex": C.simplex}


@st.composite
def layouts(draw) -> FlatLayout:
    sites = []
    for i in range(draw(st.integers(1, 4))):
        support = draw(st.sampled_from(sorted(SUPPORTS)))
        shape = tuple(draw(st.lists(st.integers(1, 3), min_size=0, max_size=2)))
        if support == "simplex":
            shape = (*shape, draw(st.integers(2, 4)))
        sites.append(LatentSite(f"s{i}", shape, constraint_transform(f"s{i}", SUPPORTS[support])))
    return FlatLayout(sites)


@settings(max_examples=60, deadline=None)
@given(layouts(), st.integers(0, 2**31 - 1))
def test_values_lie_in_their_support_and_pack_inverts_unpack(layout: FlatLayout, seed: int):
    u = torch.randn(layout.size, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    values, log_det = layout.unpack(u)
    assert torch.isfinite(log_det)
    for site in layout.sites:
        v = values[site.name]
        assert tuple(v.shape) == site.shape
        if site.transform is not None:  # the constraint the site was built for
            assert bool(site.transform.codomain.check(v).all())
    assert torch.allclose(layout.pack(values), u, atol=1e-6)


def test_log_det_is_the_change_of_volume() -> None:
    # For the exp map, log |det J| at u is sum(u).
    site = LatentSite("r", (3,), constraint_transform("r", C.positive))
    u = torch.tensor([0.1, -0.4, 2.0])
    _, log_det = FlatLayout([site]).unpack(u)
    assert torch.isclose(log_det, u.sum())
