"""`run_chains`' hand-over (`--engine auto`): the chains pause after warmup and their first
`HANDOVER_DRAWS` draws, here or in their processes; the caller either takes them on
(`HandedOver`, with every chain's state there) or lets them go on, and then the run is
the one it would have been without the pause, draw for draw."""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

import pytest
import torch

from qvr_core.inference.chains import (
    HANDOVER_DRAWS,
    TREE_SECONDS,
    HandedOver,
    projected_tree_seconds,
    run_chains,
)
from qvr_core.inference.mcmc import ChainState
from qvr_core.inference.nuts import NUTSKernel

from .toy_models import ScaledNormal

X = torch.zeros(1, 1)
WARMUP, DRAWS = 20, 2 * HANDOVER_DRAWS + 10

pytestmark = pytest.mark.timeout(240)


class Hook:
    """A `hand_over` that records what it was given and answers `take`."""

    def __init__(self, take: bool) -> None:
        self.take, self.calls = take, 0
        #: each chain's iteration and draws when the hook was asked (the chains go on)
        self.seen: list[tuple[int, int, bool]] = []

    def __call__(self, states: Sequence[ChainState]) -> bool:
        self.calls += 1
        self.seen = [(s.chain.iteration, len(s.record.zs), s.chain.warming_up) for s in states]
        return self.take


def _run(processes: int, hook: Hook | None, draws: int = DRAWS) -> Any:
    kernel = NUTSKernel(max_tree_depth=4)
    return run_chains(
        ScaledNormal([0.5, 2.0]), X, {}, kernel, WARMUP, draws, chains=3, seed=5,
        processes=processes, hand_over=hook,
    )  # fmt: skip


# kernel_free: the projection is arithmetic on crafted counts
@pytest.mark.kernel_free
def test_the_projection_counts_the_draws_leapfrog_steps_over_the_rest() -> None:
    def state(steps: list[int]) -> Any:
        return SimpleNamespace(record=SimpleNamespace(steps=steps))

    states = [state([3, 5]), state([7, 1, 9])]  # the shortest chain's two draws count
    assert projected_tree_seconds(states, 10) == pytest.approx(
        (3 + 5 + 7 + 1) * 8 / 2 * TREE_SECONDS
    )
    assert projected_tree_seconds([state([])], 10) == 0.0  # no draw yet: nothing to project
    assert projected_tree_seconds([state([1] * 10)], 10) == 0.0  # no draw left


# kernel_free: the same chains with and without the pause, compared exactly on one machine
@pytest.mark.kernel_free
@pytest.mark.parametrize("processes", [1, 2])
def test_chains_left_to_go_on_are_the_run_without_the_pause(processes: int) -> None:
    hook = Hook(take=False)
    paused = _run(processes, hook)
    plain = _run(processes, None)
    assert hook.calls == 1
    assert hook.seen == [(WARMUP + HANDOVER_DRAWS, HANDOVER_DRAWS, False)] * 3
    assert paused.samples["z"].shape == (3, DRAWS, 1, 2) and not paused.stopped
    torch.testing.assert_close(paused.samples["z"], plain.samples["z"], rtol=0, atol=0)
    torch.testing.assert_close(paused.energies, plain.energies, rtol=0, atol=0)


# kernel_free: which chains are handed over and where, not what they drew
@pytest.mark.kernel_free
@pytest.mark.parametrize("processes", [1, 2])
def test_chains_taken_over_come_back_by_index_at_the_pause(processes: int) -> None:
    hook = Hook(take=True)
    with pytest.raises(HandedOver) as handed:
        _run(processes, hook)
    states = handed.value.states
    assert [s.chain.iteration for s in states] == [WARMUP + HANDOVER_DRAWS] * 3
    assert handed.value.starts in ("pathfinder", "prior")
    # by chain index: chain c's first draws are the ones the run without a pause draws
    plain = _run(1, None)
    for c, state in enumerate(states):
        got = plain.samples["z"][c, :HANDOVER_DRAWS].reshape(HANDOVER_DRAWS, -1)
        kept = torch.stack(state.record.zs).to(got.dtype)
        torch.testing.assert_close(kept, got, rtol=0, atol=0)


# kernel_free: a run too short to pause, counted in draws
@pytest.mark.kernel_free
def test_a_run_of_few_draws_never_pauses() -> None:
    hook = Hook(take=True)
    result = _run(1, hook, draws=2 * HANDOVER_DRAWS)
    assert hook.calls == 0 and result.samples["z"].shape[1] == 2 * HANDOVER_DRAWS
