"""The random generators a recorded step saves, restores and forks (`inference.generators`):
on the CPU the one CPU generator, which every other test of the recorded step relies on;
the GPU's own generator is checked on a GPU (`test_recorded_step`'s GPU case)."""

from __future__ import annotations

import torch

from qvr_core.inference import generators


def test_tensors_on_the_cpu_or_meta_touch_no_accelerator() -> None:
    tensors = [torch.zeros(2), torch.empty(3, device="meta"), "not a tensor"]
    assert generators.devices_of(tensors) == ()


def test_forked_draws_leave_the_cpu_stream_where_it_was() -> None:
    torch.manual_seed(11)
    expected = torch.rand(3)
    torch.manual_seed(11)
    with generators.forked(()):
        torch.rand(5)
    torch.testing.assert_close(torch.rand(3), expected)


def test_a_restored_state_replays_the_same_draws() -> None:
    saved = generators.save(generators.devices_of([torch.zeros(1)]))
    first = torch.randn(4)
    generators.restore(saved)
    torch.testing.assert_close(torch.randn(4), first)
