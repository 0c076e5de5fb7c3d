"""A run that starts its chains together here and sends the rest to processes when their
trees are long (`chains.worth_splitting`): the decision, and the chains it carries on."""

from __future__ import annotations

import pytest
import torch

from qvr_core.inference import chains
from qvr_core.inference.chains import default_processes, run_chains, worth_splitting
from qvr_core.inference.mcmc import ChainState, MCMCResult
from qvr_core.inference.nuts import NUTSKernel

from .toy_models import ScaledNormal

X = torch.zeros(1, 1)
TWO_CORES = pytest.mark.skipif(default_processes(2) < 2, reason="one usable core: no split")

pytestmark = pytest.mark.timeout(240)


def _states(leapfrogs: list[int], iteration: int) -> list[ChainState]:
    """Chains that have run `iteration` iterations and as many leapfrog steps as given."""
    states = []
    for n in leapfrogs:
        state = ChainState(NUTSKernel().chain(None, torch.zeros(2), 10))
        state.chain.iteration, state.chain.leapfrogs = iteration, n
        states.append(state)
    return states


# kernel_free: counts in, a decision out; nothing is drawn
@pytest.mark.kernel_free
def test_long_trees_split_the_rest_of_a_run_and_short_ones_do_not() -> None:
    # 4 chains of 50 iterations at about 80 leapfrog steps each (gp_pois_regr's warmup):
    # 1,950 iterations left project to 16 s of tree time, half of it taken off here
    long = _states([4_000] * 4, 50)
    assert worth_splitting(long, 2_000, 2)
    assert not worth_splitting(long, 1_000, 2)  # half the run: 3.7 s taken off
    assert worth_splitting(long, 1_000, 4)  # four processes take three quarters
    # eight schools' warmup: about 10 steps an iteration
    assert not worth_splitting(_states([500] * 4, 50), 2_000, 2)
    assert not worth_splitting(long, 2_000, 1)  # nowhere to send them
    assert not worth_splitting(_states([0] * 4, 0), 2_000, 2)  # nothing run yet
    assert not worth_splitting(long, 50, 2)  # nothing left to run


def _run(monkeypatch: pytest.MonkeyPatch, gain: float, **options: object) -> MCMCResult:
    monkeypatch.setattr(chains, "PROBE_ITERATIONS", 15)
    monkeypatch.setattr(chains, "SPLIT_GAIN_SECONDS", gain)
    kernel = NUTSKernel(max_tree_depth=4)
    return run_chains(ScaledNormal([0.5, 2.0]), X, {}, kernel, 30, 20, chains=3, seed=5, **options)  # type: ignore[arg-type]  # the options are run_chains' keywords


# kernel_free: the same chains carried on in processes or here, compared: two paths of the
# same code on one machine (the chain processes inherit the kernels of this one)
@pytest.mark.kernel_free
@TWO_CORES
def test_chains_carried_on_in_processes_draw_what_they_draw_here(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[tuple[int, int]] = []
    split = _run(monkeypatch, 0.0, on_progress=lambda done, total, u, c: seen.append((done, c)))
    here = _run(monkeypatch, float("inf"))
    whole = run_chains(
        ScaledNormal([0.5, 2.0]), X, {}, NUTSKernel(max_tree_depth=4), 30, 20, chains=3, seed=5,
        processes=1,
    )  # fmt: skip
    assert split.processes == default_processes(3) and here.processes == 1
    assert not split.stopped and split.samples["z"].shape == (3, 20, 1, 2)
    for other in (here, whole):
        torch.testing.assert_close(split.samples["z"], other.samples["z"], rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(split.step_sizes, other.step_sizes, rtol=1e-5, atol=0.0)
        assert torch.equal(split.num_leapfrog_steps, other.num_leapfrog_steps)
    # every iteration of every chain reported once, those here and those in processes
    assert [d for d, _ in seen] == list(range(1, 3 * 50 + 1))
    assert sorted(c for _, c in seen) == sorted([0, 1, 2] * 50)


# kernel_free: a run stopped while its chains probe here; what it keeps is counted
@pytest.mark.kernel_free
@TWO_CORES
def test_a_run_stopped_during_its_first_iterations_stops_here(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[int] = []
    result = _run(
        monkeypatch,
        0.0,
        on_progress=lambda done, total, u, c: seen.append(done),
        should_stop=lambda: len(seen) >= 9,
    )
    assert result.stopped and result.processes == 1  # no process was started
    assert 9 <= len(seen) <= 9 + 2  # the other two chains end the iteration they are in


# kernel_free: a process count, nothing is drawn
@pytest.mark.kernel_free
def test_a_process_held_to_one_starts_no_chain_process() -> None:
    cores = chains.usable_cores()
    try:
        chains.limit_processes(1)  # as a `qvr sbc` job does
        assert default_processes(4) == 1
        chains.limit_processes(None)
        assert default_processes(4) == min(4, cores)
    finally:
        chains.limit_processes(None)
