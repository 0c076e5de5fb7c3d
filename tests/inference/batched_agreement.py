"""The check that a batched potential (`ManyPotential`) gives, row by row, what the eager
potential gives at random points around the chains' starts."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from qvr_core.inference.mcmc import ProgramPotential, chain_layout
from qvr_core.runs.prepare import PreparedRun


def eager_potential(run: PreparedRun) -> ProgramPotential:
    """The one-position potential NUTS evaluates eagerly for `run`, over its chain layout."""
    layout = chain_layout(run.program, run.x, run.observations)
    return ProgramPotential(run.program, run.x, run.observations, layout)


def assert_rows_are_eager(many: Any, eager: Any, starts: torch.Tensor) -> torch.Tensor:
    """Five batches of points around `starts` (a fixed generator): each row's value and
    gradient are the eager potential's. Returns the last batch."""
    g = torch.Generator().manual_seed(1)
    points = starts
    for _ in range(5):
        points = starts + torch.randn(starts.shape, generator=g, dtype=starts.dtype)
        values, grads = many(points)
        for row in range(points.shape[0]):
            u, grad = eager(points[row])
            assert values[row] == pytest.approx(u, rel=1e-9)
            torch.testing.assert_close(grads[row], grad, rtol=1e-7, atol=1e-9)
    return points
