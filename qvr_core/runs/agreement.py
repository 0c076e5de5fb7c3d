"""What the processes of one run must share, checked before the run starts.

Every process of a run over many (`runs.distributed`) checks its own copy of the source,
reads its own copy of the data and parses its own options; each then scores its part
of the rows and the parts are added up. A process that read another file, an older
copy of the data or another `--steps` would either hang the others (it calls the
collectives a different number of times or with other shapes) or, worse, silently mix
its rows into theirs. So before the run each rank posts its `terms` (a digest of the
program's source and name, of the data's shapes and of their values, and the options
that change what is computed), and `differences` names the first rank that differs from
rank 0, and in what, for every rank to stop with.

The data are hashed in full (BLAKE2b, about a second a gigabyte): the shapes alone do not
tell an old copy from a new one.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from typing import Any

import torch

from qvr_core.plan.run_arguments import RunArguments
from qvr_core.runs.prepare import PreparedRun
from qvr_core.runs.tensor_tree import map_tensors

#: The arguments that do not change what a run computes, or differ by right between the
#: machines of a run: the data file's path (its contents are compared), the memory
#: budget (each machine's own), and the program's name (compared as it was resolved).
_OWN = frozenset({"data", "memory_budget", "program", "device"})


def terms(
    source: str, prepared: PreparedRun, arguments: RunArguments, device: str
) -> dict[str, Any]:
    """This process's terms, JSON: digests of the program, of the data's shapes and of
    their values, and the options."""
    tensors: list[torch.Tensor] = []

    def keep(t: torch.Tensor) -> torch.Tensor:
        tensors.append(t)
        return t

    map_tensors((prepared.x, prepared.observations), keep)
    structure = json.dumps(
        [
            _keys(prepared.x),
            _keys(prepared.observations),
            [(str(t.dtype), list(t.shape)) for t in tensors],
        ]
    )
    values = hashlib.blake2b(digest_size=16)
    for t in tensors:
        values.update(_bytes(t))
    options = {k: v for k, v in dataclasses.asdict(arguments).items() if k not in _OWN}
    options |= {"program": prepared.name, "device": device}
    return {
        "program": _digest(f"{prepared.name}\n{source}".encode()),
        "shapes": _digest(structure.encode()),
        "data": values.hexdigest(),
        "options": json.loads(json.dumps(options)),  # as every rank reads it back
    }


def differences(every: list[dict[str, Any]]) -> str | None:
    """How the first rank that differs from rank 0 differs (one line), or None when all
    run the same."""
    first = every[0]
    for rank, mine in enumerate(every[1:], start=1):
        if mine["program"] != first["program"]:
            return (
                f"rank {rank} runs another program than rank 0 (its source text or program "
                "name differs)"
            )
        for key, value in first["options"].items():
            theirs = mine["options"].get(key)
            if theirs != value:
                return f"rank {rank} runs with {key}={theirs!r}, rank 0 with {key}={value!r}"
        if mine["shapes"] != first["shapes"]:
            return f"rank {rank}'s data have other names or shapes than rank 0's"
        if mine["data"] != first["data"]:
            return (
                f"rank {rank}'s data differ from rank 0's (the same names and shapes, other values)"
            )
    return None


def _keys(value: Any) -> list[str]:
    return [str(k) for k in value] if isinstance(value, dict) else []


def _digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def _bytes(t: torch.Tensor) -> memoryview:
    """A tensor's values as bytes (on the CPU, in order)."""
    flat = t.detach().to("cpu").contiguous().reshape(-1)
    return flat.view(torch.uint8).numpy().data if flat.numel() else memoryview(b"")
