"""`--device`: which device a run resolves to, a one-line refusal of `cuda` where torch
has no GPU, the default device set for a block and put back (also on an error), values
moved to a device, and the memory budget capped by a GPU's free memory. A CUDA GPU is
faked (`torch.cuda.is_available`, `mem_get_info`) where the test needs none; "meta", a
device every build has, stands in for a non-CPU one."""

from __future__ import annotations

from collections import namedtuple
from typing import Any

import pytest
import torch
from torch import nn

from qvr_core.inference.errors import InferenceError
from qvr_core.run_arguments import DEVICES
from qvr_core.runs.device import (
    AUTO_THRESHOLD,
    DeviceUnavailable,
    check_device,
    computing_on,
    device_memory,
    resolve_device,
    to_device,
)
from qvr_core.runs.sizing import device_budget
from qvr_core.runtime.padding import Padded
from qvr_core.runtime.program import Masked

META = torch.device("meta")
CUDA = torch.device("cuda", 0)
needs_gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


@pytest.fixture
def no_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)


@pytest.fixture
def fake_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """A GPU with 3 GiB free, that nothing here allocates on."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (3 << 30, 80 << 30))


def test_every_device_argument_is_resolved(fake_gpu: None) -> None:
    for name in DEVICES:
        assert resolve_device(name).type in {"cpu", "cuda"}
    with pytest.raises(ValueError):
        resolve_device("tpu")


def test_cpu_is_the_cpu(fake_gpu: None) -> None:
    assert resolve_device("cpu") == torch.device("cpu")
    assert resolve_device("cpu", work=10**12) == torch.device("cpu")


def test_cuda_without_a_gpu_is_refused_in_one_line(no_gpu: None) -> None:
    with pytest.raises(DeviceUnavailable) as e:
        resolve_device("cuda")
    message = str(e.value)
    assert isinstance(e.value, InferenceError)
    assert "\n" not in message
    assert message.startswith("--device cuda: no CUDA GPU is available here (torch ")
    assert check_device("cuda") == message


def test_check_device_passes_what_can_run(no_gpu: None) -> None:
    assert check_device("cpu") is None
    assert check_device("auto") is None  # falls back to the CPU
    assert check_device("tpu") is not None


def test_auto_without_a_gpu_is_the_cpu(no_gpu: None) -> None:
    assert resolve_device("auto", work=AUTO_THRESHOLD * 1000) == torch.device("cpu")


def test_cuda_with_a_gpu(fake_gpu: None) -> None:
    assert resolve_device("cuda") == CUDA
    assert check_device("cuda") is None


def test_auto_picks_the_gpu_for_a_large_run_only(fake_gpu: None) -> None:
    assert resolve_device("auto", work=AUTO_THRESHOLD) == CUDA
    assert resolve_device("auto", work=AUTO_THRESHOLD * 100) == CUDA
    assert resolve_device("auto", work=AUTO_THRESHOLD - 1) == torch.device("cpu")
    assert resolve_device("auto", work=50) == torch.device("cpu")
    assert resolve_device("auto") == torch.device("cpu")  # size unknown


def test_device_memory_and_budget(fake_gpu: None) -> None:
    assert device_memory(torch.device("cpu")) is None
    assert device_memory(CUDA) == 3 << 30
    assert device_budget(8 << 30, CUDA) == 3 << 30  # the GPU has less than the budget
    assert device_budget(1 << 30, CUDA) == 1 << 30  # the budget is less than the GPU's
    assert device_budget(8 << 30, torch.device("cpu")) == 8 << 30


def test_computing_on_sets_the_default_device_for_the_block() -> None:
    with computing_on(META):
        assert torch.zeros(3).device == META
        assert torch.tensor([1.0, 2.0]).device == META
        assert torch.zeros(3, device="cpu").device.type == "cpu"  # an explicit device stays
    assert torch.zeros(3).device.type == "cpu"


def test_computing_on_restores_the_default_after_an_error() -> None:
    with pytest.raises(RuntimeError, match="inside"), computing_on(META):
        assert torch.ones(2).device == META
        raise RuntimeError("inside")
    assert torch.ones(2).device.type == "cpu"
    assert torch.get_default_device().type == "cpu"


def test_computing_on_nests_and_keeps_a_default_set_before() -> None:
    torch.set_default_device(META)
    try:
        with computing_on(META), computing_on(torch.device("cpu")):  # the CPU: no change
            assert torch.empty(1).device == META
        assert torch.empty(1).device == META
    finally:
        torch.set_default_device(None)
    assert torch.empty(1).device.type == "cpu"


def test_to_device_moves_nested_values() -> None:
    Pair = namedtuple("Pair", "a b")
    value: dict[str, Any] = {
        "x": torch.ones(2, 3),
        "seqs": Padded(torch.zeros(2, 4), torch.tensor([4, 2])),
        "obs": Masked(torch.zeros(2, 4), torch.ones(2, 4, dtype=torch.bool)),
        "many": [torch.arange(3), (torch.ones(1), 7)],
        "pair": Pair(torch.ones(1), "name"),
        "n": 3,
        "none": None,
    }
    moved = to_device(value, META)
    assert moved["x"].device == META and moved["x"].shape == (2, 3)
    assert isinstance(moved["seqs"], Padded)
    assert moved["seqs"].values.device == META and moved["seqs"].lengths.device == META
    assert isinstance(moved["obs"], Masked)
    assert moved["obs"].values.device == META and moved["obs"].mask.dtype == torch.bool
    assert moved["obs"].mask.device == META
    assert isinstance(moved["many"], list) and moved["many"][0].device == META
    assert isinstance(moved["many"][1], tuple) and moved["many"][1][0].device == META
    assert moved["many"][1][1] == 7
    assert isinstance(moved["pair"], Pair) and moved["pair"].a.device == META
    assert moved["pair"].b == "name"
    assert moved["n"] == 3 and moved["none"] is None
    assert value["x"].device.type == "cpu"  # the original is left where it was


def test_to_device_moves_a_module_in_place() -> None:
    module = nn.Linear(3, 2)
    assert to_device(module, META) is module
    assert module.weight.device == META and module.bias.device == META


def test_a_tensor_already_there_is_itself() -> None:
    x = torch.ones(2)
    assert to_device(x, torch.device("cpu")) is x


@needs_gpu
def test_a_matmul_on_the_gpu() -> None:
    device = resolve_device("cuda")
    a = torch.arange(6.0).reshape(2, 3)
    b = torch.arange(12.0).reshape(3, 4)
    with computing_on(device):
        x, y = to_device((a, b), device)
        eye = torch.eye(4)  # created without a device: on the GPU
        product = x @ y @ eye
    assert product.device.type == "cuda" and eye.device.type == "cuda"
    assert torch.equal(product.cpu(), a @ b)
    free = device_memory(device)
    assert free is not None and free > 0
    assert 0 < device_budget(1 << 60, device) < 1 << 60  # the GPU's free memory
