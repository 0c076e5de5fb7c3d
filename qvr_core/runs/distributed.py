"""Runs over many processes and machines with `torch.distributed`, launched by `torchrun`.

    torchrun --nproc-per-node 2 -m qvr_cli run model.qvr --data rows.npz

`torchrun` starts one process per rank and tells each, in its environment, its
rank, the world's size and where to meet (`MASTER_ADDR`/`MASTER_PORT`, or a
rendezvous endpoint); `join` reads that and joins the process group, gloo on
CPUs and nccl on GPUs. qvr uses torch's own engine rather than processes and
sockets of its own: it is what a cluster of torch users already runs.

- SVI is data-parallel: each step's rows (a plate's rows of a model program, the
  examples of a seed program's batch) are split into one contiguous chunk per
  rank; each rank scores its chunk, and `AllReduce` adds the ranks' losses and
  gradients, so every rank takes the same optimiser step. With the same seed a
  run on one process and on several compute the same sums in another order: the
  same loss trajectory within floating-point rounding.
- NUTS spreads its chains over the ranks (chain c on rank c mod world), each
  chain seeded by its index as in one process, and gathers them (`gather`) so
  every rank holds the whole run; rank 0 prints and writes.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

from qvr_core.inference.chains import ChainShare
from qvr_core.inference.errors import InferenceError

#: The environment `torchrun` gives each process it starts.
LAUNCH_VARIABLES = ("RANK", "WORLD_SIZE", "LOCAL_RANK")


@dataclass(frozen=True)
class World:
    """This process's place among the run's processes."""

    rank: int
    size: int

    @property
    def first(self) -> bool:
        """Rank 0 prints the summary and writes the output."""
        return self.rank == 0

    def chunk(self, n: int) -> tuple[int, int]:
        """This rank's contiguous part `[start, stop)` of `n` rows: the first `n % size`
        ranks take one row more."""
        base, extra = divmod(n, self.size)
        start = self.rank * base + min(self.rank, extra)
        return start, start + base + (1 if self.rank < extra else 0)

    def chains(self, chains: int) -> list[int]:
        """The chains this rank runs: every `size`-th from its rank."""
        return list(range(self.rank, chains, self.size))


def launched() -> bool:
    """True in a process `torchrun` started (its environment names a rank)."""
    return all(v in os.environ for v in LAUNCH_VARIABLES) and int(os.environ["WORLD_SIZE"]) > 1


def reporting() -> bool:
    """Whether this process prints and writes: any process torchrun did not start, and
    rank 0 of those it did (read from the environment, before the group is joined)."""
    return not launched() or os.environ["RANK"] == "0"


def local_rank() -> int:
    """This process's index on its node (the GPU it takes)."""
    return int(os.environ.get("LOCAL_RANK", "0"))


@contextmanager
def joined(device: torch.device) -> Iterator[World | None]:
    """This process in the run's process group for the block (None when `torchrun` did
    not start it): gloo on a CPU, nccl on a GPU; left again after the block."""
    if not launched():
        yield None
        return
    backend = "nccl" if device.type == "cuda" else "gloo"
    if not dist.is_available():
        raise InferenceError("this torch was built without torch.distributed")
    own = not dist.is_initialized()
    if own:
        if device.type == "cuda":
            torch.cuda.set_device(local_rank())
        dist.init_process_group(backend)
    try:
        yield World(dist.get_rank(), dist.get_world_size())
    finally:
        if own and dist.is_initialized():
            dist.destroy_process_group()


class AllReduce:
    """`inference.svi.Reducer` over the process group: losses and gradients summed."""

    def __init__(self, device: torch.device) -> None:
        self.device = device

    def total(self, value: float) -> float:
        t = torch.tensor([value], dtype=torch.float64, device=self.device)
        dist.all_reduce(t)
        return float(t[0])

    def gradients(self, params: list[nn.Parameter]) -> None:
        """One all-reduce of every gradient flattened together, and of which parameters
        have one anywhere: a parameter no rank's loss reached keeps no gradient, as in
        one process (an optimiser skips it rather than stepping on zeros)."""
        if not params:
            return
        with torch.no_grad():
            has = torch.tensor(
                [p.grad is not None for p in params], dtype=torch.float64, device=self.device
            )
            flat = torch.cat(
                [
                    (p.grad if p.grad is not None else torch.zeros_like(p)).reshape(-1)
                    for p in params
                ]
            ).to(torch.float64)
            dist.all_reduce(has)
            dist.all_reduce(flat)
            offset = 0
            for p, anywhere in zip(params, has.tolist(), strict=True):
                n = p.numel()
                if anywhere:
                    p.grad = flat[offset : offset + n].reshape(p.shape).to(p.dtype)
                offset += n


def gather(value: Any, world: World) -> list[Any]:
    """Every rank's `value`, in rank order, on every rank (pickled through the group)."""
    out: list[Any] = [None] * world.size
    dist.all_gather_object(out, value)
    return out


def chain_share(world: World, chains: int) -> ChainShare:
    """This rank's NUTS chains, and every rank's records gathered on each."""
    return ChainShare(world.chains(chains), lambda mine: gather(mine, world))
