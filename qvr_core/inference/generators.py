"""The random generators a recorded step draws from, saved, restored and forked together.

A recorded SVI step (`inference.recorded_step`) is checked by running the eager step
and its replay from the same random state, and `inference.simplify` runs a recording
once to learn its shapes without moving anyone's stream. On the CPU that state is
torch's one CPU generator. A step on a GPU draws its noise from that device's own
generator, which `torch.random.get_rng_state` does not hold, so each of these saves
and restores the CPU's generator and the generator of every accelerator device the
step touches.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import torch


def accelerators(devices: Iterable[torch.device]) -> tuple[torch.device, ...]:
    """The devices among `devices` that are not the CPU, each once, in a fixed order."""
    found = {_indexed(d) for d in devices if d.type not in ("cpu", "meta")}
    return tuple(sorted(found, key=str))


def devices_of(tensors: Iterable[object]) -> tuple[torch.device, ...]:
    """The accelerator devices `tensors` live on, and the default device if it is one
    (a draw without a device argument lands there)."""
    found = [t.device for t in tensors if isinstance(t, torch.Tensor)]
    return accelerators([*found, torch.get_default_device()])


@dataclass(frozen=True)
class States:
    """The CPU generator's state and each accelerator device's, at one moment."""

    cpu: torch.Tensor
    devices: tuple[tuple[torch.device, torch.Tensor], ...]


def save(devices: tuple[torch.device, ...]) -> States:
    """The states of the CPU generator and of `devices`' generators now."""
    return States(
        torch.random.get_rng_state(),
        tuple((d, torch.get_device_module(d.type).get_rng_state(d)) for d in devices),
    )


def restore(states: States) -> None:
    """Put every generator `states` holds back as it was."""
    torch.random.set_rng_state(states.cpu)
    for device, state in states.devices:
        torch.get_device_module(device.type).set_rng_state(state, device)


@contextlib.contextmanager
def forked(devices: tuple[torch.device, ...]) -> Iterator[None]:
    """Draws inside leave the CPU generator and `devices`' generators as they were."""
    before = save(devices)
    try:
        yield
    finally:
        restore(before)


def _indexed(device: torch.device) -> torch.device:
    """`cuda` as the device it means now (`cuda:0`), so one device is named one way."""
    if device.index is not None:
        return device
    module = torch.get_device_module(device.type)
    return torch.device(device.type, module.current_device())
