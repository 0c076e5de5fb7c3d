"""A small model's chains sample on one of torch's intra-op threads (`inference.threads`):
a second thread gains it nothing and, with the other core busy, costs it a scheduler
slice at every operation torch splits (a batched Cholesky factorisation)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from threadpoolctl import threadpool_info, threadpool_limits

from qvr_core.inference import chains, pathfinder
from qvr_core.inference.chains import run_chains
from qvr_core.inference.many import ManyPotential
from qvr_core.inference.nuts import NUTSKernel
from qvr_core.inference.threads import (
    ONE_THREAD_BELOW_SECONDS,
    intra_op_threads,
    sampling_threads,
)
from qvr_core.inference.work import ELEMENT_SECONDS, GRAIN_ELEMENTS, Work, count_work

from .toy_models import ScaledNormal

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def two_threads() -> Iterator[None]:
    """torch on two intra-op threads for the test (then as it was)."""
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(before)


class _Watched(ScaledNormal):
    """ScaledNormal noting how many threads torch has at each evaluation."""

    def __init__(self, scales: list[float]) -> None:
        super().__init__(scales)
        self.threads: list[int] = []

    def dist(self, name, x, values):  # type: ignore[no-untyped-def]  # the toy protocol
        self.threads.append(torch.get_num_threads())
        return super().dist(name, x, values)


# kernel_free: the thread count seen by the model is asserted, not any draw
@pytest.mark.kernel_free
@pytest.mark.usefixtures("two_threads")
def test_a_small_model_s_chains_run_on_one_thread_and_the_threads_come_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    model = _Watched([0.5, 2.0])
    decided: list[int] = []  # how many evaluations came before the choice

    def noted(work: Work) -> int:
        decided.append(len(model.threads))
        return sampling_threads(work)

    monkeypatch.setattr(chains, "sampling_threads", noted)
    batched: list[int] = []  # the threads at each batched evaluation (recorded or eager)
    call = ManyPotential.__call__

    def watched(self: ManyPotential, positions: torch.Tensor) -> object:
        batched.append(torch.get_num_threads())
        return call(self, positions)

    monkeypatch.setattr(ManyPotential, "__call__", watched)
    kernel = NUTSKernel(max_tree_depth=3)
    result = run_chains(model, torch.zeros(1, 1), {}, kernel, 10, 5, chains=2, seed=3, processes=1)
    assert result.samples["z"].shape == (2, 5, 1, 2)
    (before,) = decided
    assert set(model.threads[:before]) == {2}  # the layout, a start, the work counted
    assert set(model.threads[before:]) == {1}  # recording, checking the recording
    assert len(batched) > 30 and set(batched) == {1}
    assert torch.get_num_threads() == 2


@pytest.mark.kernel_free
@pytest.mark.usefixtures("two_threads")
def test_only_arithmetic_torch_can_split_keeps_torch_s_threads() -> None:
    enough = int(2 * ONE_THREAD_BELOW_SECONDS / ELEMENT_SECONDS)  # 2 ms of arithmetic
    small = Work(operations=155, elements=20_000, split_elements=0)  # gp_pois_regr, 4 chains
    # a lifted network: much arithmetic, most of it in operations too small to split
    network = Work(operations=3_000, elements=enough, split_elements=enough // 10)
    wide = Work(operations=100, elements=enough, split_elements=enough)  # columns of rows
    assert sampling_threads(small) == 1
    assert sampling_threads(network) == 1
    assert sampling_threads(wide) == 2
    with intra_op_threads(1):
        assert torch.get_num_threads() == 1
        with intra_op_threads(1):  # already so: nothing to put back
            pass
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == 2
    with pytest.raises(RuntimeError), intra_op_threads(1):
        raise RuntimeError("a failing block")
    assert torch.get_num_threads() == 2


def test_the_count_keeps_apart_the_elements_of_operations_torch_splits() -> None:
    column = torch.ones(GRAIN_ELEMENTS)
    row = torch.ones(GRAIN_ELEMENTS - 1)

    def evaluation() -> None:
        (column * 2.0).sum()  # GRAIN_ELEMENTS split, then 1 not
        (row * 2.0).exp()  # twice GRAIN_ELEMENTS - 1, neither split

    work = count_work(evaluation)
    assert work.operations == 4
    assert work.elements == GRAIN_ELEMENTS + 1 + 2 * (GRAIN_ELEMENTS - 1)
    assert work.split_elements == GRAIN_ELEMENTS
    assert work.split_seconds == GRAIN_ELEMENTS * ELEMENT_SECONDS


def blas_threads() -> int:
    """How many threads NumPy's BLAS uses now (the fewest of the BLAS libraries loaded)."""
    return min(i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas")


class _BlasNoted(ScaledNormal):
    """ScaledNormal appending, at each evaluation, its process and NumPy's BLAS threads
    to a file: a chain process's evaluations are seen from the test's process."""

    def __init__(self, scales: list[float], log: Path) -> None:
        super().__init__(scales)
        self.log = log

    def dist(self, name, x, values):  # type: ignore[no-untyped-def]  # the toy protocol
        with self.log.open("a") as out:
            out.write(f"{os.getpid()} {blas_threads()}\n")
        return super().dist(name, x, values)


@pytest.fixture
def two_blas_threads() -> Iterator[None]:
    """NumPy's BLAS on two threads for the test, whatever the machine's cores."""
    with threadpool_limits(limits=2, user_api="blas"):
        assert blas_threads() == 2
        yield


# kernel_free: the thread counts seen are asserted, not any draw
@pytest.mark.kernel_free
@pytest.mark.usefixtures("two_blas_threads")
def test_pathfinder_s_numpy_arithmetic_runs_on_one_blas_thread_then_two_again(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    seen: list[int] = []
    approximation = pathfinder._approximation

    def noted(*args: object) -> object:
        seen.append(blas_threads())
        return approximation(*args)  # type: ignore[arg-type]  # the arguments as given

    monkeypatch.setattr(pathfinder, "_approximation", noted)
    model = _BlasNoted([0.5, 2.0], tmp_path / "evaluations")
    run_chains(
        model, torch.zeros(1, 1), {}, NUTSKernel(max_tree_depth=3), 10, 5, chains=2, processes=1
    )
    assert len(seen) > 10 and set(seen) == {1}
    assert blas_threads() == 2


@pytest.mark.kernel_free
def test_a_chain_process_runs_its_numpy_arithmetic_on_one_blas_thread(tmp_path: Path) -> None:
    log = tmp_path / "evaluations"
    model = _BlasNoted([0.5, 2.0], log)
    run_chains(
        model, torch.zeros(1, 1), {}, NUTSKernel(max_tree_depth=3), 10, 5, chains=2, processes=2
    )
    rows = [line.split() for line in log.read_text().splitlines()]
    in_children = {int(threads) for pid, threads in rows if int(pid) != os.getpid()}
    assert in_children == {1}
