"""Inference moves each latent in the constraint object its program reports (issue 48).

A model program's is its family's support from the registry, read from the checked
site (`Site.support`), never rebuilt from a support's name: the joint guides mapped a
`Pareto(1.0, 2.0)` latent onto all of `positive` through its name, so about half their
draws fell below the scale, where the density is 0. Every guide now draws above it,
whatever the noise: the map is 1 + exp(u), not exp(u).
"""

from __future__ import annotations

import pytest
import torch
from torch.distributions import constraints as C

from qvr_core.check import check
from qvr_core.inference.autoguides import GUIDES
from qvr_core.inference.errors import InferenceError
from qvr_core.inference.sites import constraint_transform, site_transform
from qvr_core.runtime.model.program import compile_model

PARETO = """\
object Row : FinSet 3

program m : Row -> Row
    sample x <- Pareto(1.0, 2.0)
    observe y : Row <- Normal(x, 1.0)
    return x
"""

DATA = {"y": torch.tensor([1.5, 2.0, 2.5], dtype=torch.float64)}


def _program():  # type: ignore[no-untyped-def]
    checked = check(PARETO)
    assert not [d for d in checked.diagnostics if d.is_error]
    return compile_model(checked, "m")


def test_the_checked_site_carries_its_family_s_support() -> None:
    checked = check(PARETO)
    x = next(s for s in checked.models["m"].sites if s.name == "x")
    assert x.support is not None
    assert (x.support.kind, x.support.low) == ("greater_than_eq", "scale")
    assert x.support.label == "greater_than_eq"


def test_the_summary_s_name_is_known_before_any_run() -> None:
    program = _program()
    assert program.site_support("x") == "greater_than_eq"
    assert program.site_support("y") == "real"


@pytest.mark.parametrize("guide", sorted(GUIDES))
def test_every_guide_draws_a_bounded_latent_inside_its_bounds(guide: str) -> None:
    program = _program()
    program.run(DATA, DATA)  # a bound named by a parameter is known once a run binds it
    q = GUIDES[guide](program, observed_names=("y",))
    draws = torch.stack([q.rsample(DATA)["x"] for _ in range(200)])
    assert bool((draws > 1.0).all()), float(draws.min())


def test_a_discrete_latent_is_refused_by_name() -> None:
    with pytest.raises(InferenceError, match="site 'k' is discrete"):
        constraint_transform("k", C.nonnegative_integer)


def test_a_real_latent_needs_no_map() -> None:
    program = _program()
    program.run(DATA, DATA)
    assert constraint_transform("m", C.real) is None
    assert constraint_transform("v", C.independent(C.real, 1)) is None
    transform = site_transform(program, "x")
    assert transform is not None and transform.codomain.check(transform(torch.tensor(-50.0)))
