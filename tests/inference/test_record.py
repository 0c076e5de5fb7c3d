"""The recorder of aten operations behind the compiled potential (`inference.record`)."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
import torch
from torch.func import vmap

from qvr_core.inference.record import NotRecordable, record, record_call
from qvr_core.inference.simplify import simplify
from qvr_core.runtime.value_checks import check_values, run_check

DATA = torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64)


def log_density(z: torch.Tensor) -> torch.Tensor:
    """A small density with data captured from outside, a reduction and a log1p."""
    return (
        -0.5 * ((DATA - z[0]) ** 2).sum() / torch.exp(z[1]) ** 2 - 3 * z[1] + torch.log1p(z[0] ** 2)
    )


def value_and_grad(zs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    zs = zs.detach().requires_grad_(True)
    values = vmap(log_density)(zs)
    (grads,) = torch.autograd.grad(values.sum(), zs)
    return grads, values


def test_a_recording_replays_values_and_gradients_at_other_points() -> None:
    example = torch.tensor([[0.1, 0.2], [0.3, -0.4], [1.0, 0.0]], dtype=torch.float64)
    graph = record(value_and_grad, example)
    assert any(n.op == "get_attr" for n in graph.graph.nodes)  # the data, a constant
    other = torch.randn(3, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    for got, expected in zip(graph(other), value_and_grad(other), strict=True):
        torch.testing.assert_close(got, expected.detach(), rtol=1e-12, atol=0.0)


def test_in_place_operations_replay_in_order() -> None:
    def accumulate(x: torch.Tensor) -> tuple[torch.Tensor]:
        y = x.clone()
        y.mul_(2.0)
        y.add_(x)
        return (y * y,)

    graph = record(accumulate, torch.ones(2))
    torch.testing.assert_close(graph(torch.tensor([1.0, -2.0]))[0], torch.tensor([9.0, 36.0]))


def test_a_value_read_into_python_cannot_be_recorded() -> None:
    def branching(x: torch.Tensor) -> tuple[torch.Tensor]:
        return (x * 2 if float(x.sum()) > 0 else x,)

    with pytest.raises(NotRecordable, match="reads a value of the input back into Python"):
        record(branching, torch.ones(2))


def test_a_read_of_a_constant_is_recorded_as_the_branch_it_took() -> None:
    """An index's bounds check reads the data, not the input: every replay takes the
    same branch, so the recording holds (what made gathers unrecordable before)."""
    index = torch.tensor([2, 0, 2, 1])

    def gathered(x: torch.Tensor) -> tuple[torch.Tensor]:
        if int(index.max()) >= x.shape[0]:
            raise IndexError("out of range")
        return (x[index] * 3.0,)

    graph = record(gathered, torch.ones(3))
    torch.testing.assert_close(
        graph(torch.tensor([1.0, 2.0, 4.0]))[0], torch.tensor([12.0, 3.0, 12.0, 6.0])
    )


def test_an_in_place_write_into_a_constant_does_not_accumulate_over_replays() -> None:
    """torch's own functions write into tensors they made (the log density of a
    Bernoulli: `fill_`, `sub_`, `exp_`). Zeros made from shapes alone are folded to a
    constant; written into in place, each replay would add to the last one's."""

    def accumulate(x: torch.Tensor) -> tuple[torch.Tensor]:
        total = x.new_zeros(x.shape)
        total.add_(x * 2.0)
        return (total,)

    example = torch.tensor([1.0, -3.0], dtype=torch.float64)
    graph = simplify(record(accumulate, example), example.clone())
    for _ in range(3):
        torch.testing.assert_close(graph(example)[0], example * 2.0)


def test_a_write_into_a_view_cannot_be_recorded() -> None:
    def through_view(x: torch.Tensor) -> tuple[torch.Tensor]:
        y = x * 1.0
        y[0:1].add_(1.0)  # changes y through the slice
        return (y,)

    with pytest.raises(NotRecordable, match="in place"):
        record(through_view, torch.ones(2))


def test_a_random_draw_cannot_be_recorded() -> None:
    with pytest.raises(NotRecordable, match="random"):
        record(lambda x: (x + torch.randn_like(x),), torch.ones(2))


# kernel_free: which modules recording imports; no draw decides it
@pytest.mark.kernel_free
def test_recording_does_not_import_torchs_compiler_stack() -> None:
    """make_fx imports dynamo and inductor (over a second of every run); this must not."""
    code = (
        "import sys, torch\n"
        "from tests.inference.test_record import value_and_grad\n"
        "from qvr_core.inference.record import record\n"
        "record(value_and_grad, torch.zeros(2, 2, dtype=torch.float64))\n"
        "print('torch._dynamo' in sys.modules, 'torch._inductor' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.split() == ["False", "False"]


def test_a_shape_made_from_an_inputs_values_cannot_be_recorded() -> None:
    x = torch.tensor([1.0, -2.0, 3.0])
    with pytest.raises(NotRecordable, match="shape"):
        record_call(lambda: [x[x > 0].sum()], [x])
    with pytest.raises(NotRecordable, match="shape"):
        record_call(lambda: [torch.nonzero(x > 0).float().sum()], [x])
    picks = torch.tensor([0, 2])  # an integer index: the result has the index's shape
    recorded = record_call(lambda: [x[picks].sum()], [x])
    torch.testing.assert_close(recorded(torch.tensor([5.0, 0.0, 1.0]))[0], torch.tensor(6.0))


def test_a_declared_check_of_an_inputs_values_is_kept_and_returned() -> None:
    x = torch.tensor([1.0, 2.0])

    def positive(lo: float) -> None:
        if lo <= 0:
            raise ValueError(f"not positive: {lo}")

    def fn() -> list[torch.Tensor]:
        check_values(positive, x.min())
        return [x.log().sum()]

    with pytest.raises(NotRecordable):  # not asked for checks: a read of the input
        record_call(fn, [x])
    checks: list[tuple[Any, int]] = []
    recorded = record_call(fn, [x], checks=checks)
    assert [count for _, count in checks] == [1]
    _, low = recorded(torch.tensor([-1.0, 3.0]))
    with pytest.raises(ValueError, match=r"not positive: -1\.0"):
        run_check(checks[0][0], [low])
