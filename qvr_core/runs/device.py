"""Where a run computes: `qvr run --device cpu|cuda|auto` decided and applied.

`resolve_device` turns the argument into a `torch.device`: `cuda` is refused in one
line (`DeviceUnavailable`) where torch finds no CUDA GPU, and `auto` picks a GPU only
for a run large enough to gain from one (`AUTO_THRESHOLD`, measured in `work_of`'s
elements per step); `check_device` is the same refusal as a string, for the command
line to print before it compiles anything. `computing_on` makes the tensors torch
creates without a device land on the chosen one, `to_device` moves what already
exists (data, padded and masked batches, modules), and `device_memory` is what the
device has free, which caps the run's memory budget (`sizing.device_budget`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch
from torch import nn

from qvr_core.inference.errors import InferenceError
from qvr_core.plan.run_arguments import DEVICES
from qvr_core.runs.tensor_tree import map_tensors
from qvr_core.sizing.resources import Estimate

#: The elements a run touches per step (`work_of`) from which `--device auto` takes a
#: GPU. Each torch operation costs about 5-10 us to launch on a GPU (on top of the
#: Python dispatch it costs on either device), while a CPU core goes through roughly
#: one element per nanosecond: an operation on fewer than ~10^4 elements is done on
#: the CPU before its kernel would start. A step runs some tens to hundreds of
#: operations, so below ~10^6 elements per step the run is bound by the interpreter
#: and launches, and a GPU only adds them (and the copies back for every draw); a
#: model of tens of numbers is several times slower there. Above it the GPU's
#: bandwidth starts to pay; a run this size is, in float32, about 4 MB per step.
AUTO_THRESHOLD = 1_000_000

CPU = torch.device("cpu")


class DeviceUnavailable(InferenceError):
    """`--device cuda` where torch finds no CUDA GPU: refused in one line, before the
    program is compiled, rather than failing at its first tensor."""


def resolve_device(name: str, *, work: int | None = None) -> torch.device:
    """The device `--device name` runs on.

    `cpu` is the CPU; `cuda` the first CUDA GPU, or `DeviceUnavailable` when torch
    has none; `auto` a GPU when there is one and `work` (the run's estimated elements
    touched per step, `work_of`) is at least `AUTO_THRESHOLD`, else the CPU: a small
    run, or one whose size is unknown (None), is faster where it has no kernels to
    launch.
    """
    if name not in DEVICES:
        raise ValueError(f"--device {name}: expected one of {', '.join(DEVICES)}")
    if name == "cpu":
        return CPU
    if name == "cuda":
        if not torch.cuda.is_available():
            raise DeviceUnavailable(f"--device cuda: no CUDA GPU is available here ({_why()})")
        return torch.device("cuda", 0)
    if work is not None and work >= AUTO_THRESHOLD and torch.cuda.is_available():
        return torch.device("cuda", 0)
    return CPU


def check_device(name: str) -> str | None:
    """Why `--device name` cannot run here, in one line, or None when it can: what the
    command line prints (exit status 2) before it reads or compiles anything. `auto`
    always can (it falls back to the CPU)."""
    try:
        resolve_device(name)
    except (DeviceUnavailable, ValueError) as e:
        return str(e)
    return None


def _why() -> str:
    """Why torch has no CUDA GPU: a build without CUDA, or no device it can use."""
    version = torch.__version__
    if torch.version.cuda is None and torch.version.hip is None:
        return f"torch {version} is built without CUDA"
    toolkit = f"CUDA {torch.version.cuda}" if torch.version.cuda else f"ROCm {torch.version.hip}"
    return f"torch {version} ({toolkit}) finds no usable device"


def work_of(need: Estimate) -> int:
    """About how many elements a run touches per step, from its memory estimate: its
    activations (a step's forward and backward pass, or a model's log joint and its
    graph, at the estimate's own element size) and its parameters (or latent values).
    What the run only keeps (draws, optimiser state) is not worked on each step. An
    order of magnitude is all `AUTO_THRESHOLD` needs."""
    element = 8 if need.kind == "model" else 4
    return need.activation_bytes // element + need.parameters


def device_memory(device: torch.device) -> int | None:
    """The bytes free on `device` now (a CUDA GPU's, `torch.cuda.mem_get_info`), or None
    for the CPU, whose budget is the machine's memory (`resources.default_budget`)."""
    if device.type != "cuda":
        return None
    free, _total = torch.cuda.mem_get_info(device)
    return int(free)


@contextmanager
def computing_on(device: torch.device) -> Iterator[None]:
    """Within the block, tensors torch creates without an explicit device (the runtime's
    constants, a sampler's state, `torch.zeros(n)`) land on `device`.

    torch's default device for the block (`torch.device` as a context, the mode
    `torch.set_default_device` sets): the default before is restored on leaving,
    also on an error, and blocks nest. For the CPU it does nothing, so a CPU run does
    not pay the mode's cost on every torch call.
    """
    if device.type == "cpu":
        yield
        return
    with device:
        yield


def to_device(value: Any, device: torch.device) -> Any:
    """`value` with its tensors on `device` (`tensor_tree.map_tensors`: batches and
    containers rebuilt around moved tensors); an `nn.Module` moved in place (`.to`) and
    returned. A tensor already there is returned itself."""
    if isinstance(value, nn.Module):
        return value.to(device)
    return map_tensors(value, lambda t: t.to(device))
