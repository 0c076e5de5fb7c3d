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

A process joins only when torchrun started it (`TORCHELASTIC_RUN_ID`) or
`QVR_DISTRIBUTED=1` asks it to (`run_arguments.asked_to_join`): `RANK`, `WORLD_SIZE`
and `MASTER_*` left over in a shell make a run wait for nobody. The processes meet
first (`runs.rendezvous`: bounded, and a signal stops the wait), check that they all run
the same program on the same data with the same options (`runs.agreement`), and then
make the process group over the store they met at, with a bounded timeout for each
collective. A rank that fails tells the others, which stop with one line naming it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

from qvr_core.inference.chains import ChainShare
from qvr_core.inference.errors import InferenceError
from qvr_core.plan.run_arguments import asked_to_join
from qvr_core.runs.rendezvous import COLLECTIVE_TIMEOUT_VARIABLE, Group, Interrupted


@dataclass(frozen=True)
class World:
    """This process's place among the run's processes."""

    rank: int
    size: int
    #: the others, met over their store (None in a group made by the caller's own code)
    group: Group | None = field(default=None, compare=False, repr=False)

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
    """True in a process that is one of a run's many: torchrun started it, or
    `QVR_DISTRIBUTED=1` asks it to join the group its `RANK`, `WORLD_SIZE`,
    `MASTER_ADDR` and `MASTER_PORT` name (`run_arguments.asked_to_join`)."""
    return asked_to_join(os.environ)


def reporting() -> bool:
    """Whether this process prints and writes: any process torchrun did not start, and
    rank 0 of those it did (read from the environment, before the group is joined)."""
    return not launched() or os.environ.get("RANK", "0").strip() == "0"


def local_rank() -> int:
    """This process's index on its node (the GPU it takes)."""
    try:
        return int(os.environ.get("LOCAL_RANK", "0"))
    except ValueError:
        return 0


@contextmanager
def meeting(should_stop: Callable[[], bool] | None = None) -> Iterator[Group | None]:
    """The run's other processes, met (`runs.rendezvous`), for the block; None when this
    process runs alone, or in a process group the caller's own code made. An error in the
    block is told to the others (they stop with a line naming this rank)."""
    if not launched() or (dist.is_available() and dist.is_initialized()):
        yield None
        return
    if not dist.is_available():
        raise InferenceError("this torch was built without torch.distributed")
    group = Group.meet(os.environ, should_stop or (lambda: False))
    linger = True  # the rank serving the store keeps it until the others read why
    try:
        yield group
    except (KeyboardInterrupt, Interrupted) as e:  # a signal: end at once
        linger = False
        group.fail(_one_line(e) if isinstance(e, Interrupted) else "aborted")
        raise
    except BaseException as e:
        group.fail(_one_line(e))
        raise
    finally:
        group.close(linger)


def _one_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return text[0] if text else type(e).__name__


@contextmanager
def joined(group: Group | None, device: torch.device) -> Iterator[World | None]:
    """This process in the run's process group for the block (None when it runs alone):
    gloo on a CPU, nccl on a GPU, made over the store `group` met at, each collective
    bounded by the collective timeout; left again after the block. A collective that
    fails because another process stopped is one line naming it."""
    if group is None:
        if launched() and dist.is_available() and dist.is_initialized():  # the caller's own
            yield World(dist.get_rank(), dist.get_world_size())
        else:
            yield None
        return
    from torch._C._distributed_c10d import PrefixStore

    backend = "nccl" if device.type == "cuda" else "gloo"
    if device.type == "cuda":
        torch.cuda.set_device(local_rank())
    dist.init_process_group(
        backend,
        store=PrefixStore("pg", group.store),
        rank=group.rank,
        world_size=group.size,
        timeout=group.collective_timeout(),
    )
    try:
        yield World(dist.get_rank(), dist.get_world_size(), group)
    except Exception as e:
        lost = _lost(e, group)
        if lost is None:
            raise
        raise InferenceError(lost) from e
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()


def _lost(e: BaseException, group: Group) -> str | None:
    """The line for a collective that failed because another process stopped or hung
    (what `e`, or an error it was raised from, says); None for any other error."""
    cause: BaseException | None = e
    while cause is not None and not _collective_error(cause):
        cause = cause.__cause__
    if cause is None:
        return None
    try:
        failed = group.failure()
        if failed is not None:
            return f"rank {failed[0]} of the run stopped: {failed[1]}"
        left = group.left_early()
        if left:
            return f"rank {left[0]} of the run ended before the others (it was stopped)"
    except Exception:  # the store went with rank 0: say what gloo said
        pass
    line = _one_line(cause)
    if line.startswith("[") and "] " in line:  # gloo's source location
        line = line.split("] ", 1)[1]
    line = line.split(". ", 1)[0]  # not gloo's advice to read the remote worker's logs
    if "timed out" in line.lower():
        seconds = group.collective_timeout().total_seconds()
        return (
            f"another process of the run did not answer for {seconds:g} s "
            f"({COLLECTIVE_TIMEOUT_VARIABLE} sets the seconds): {line}"
        )
    return f"the run lost another of its processes: {line}"


def _collective_error(e: BaseException) -> bool:
    if isinstance(e, InferenceError):
        return False
    text = str(e)
    return isinstance(e, dist.DistError) or (
        isinstance(e, RuntimeError) and ("gloo" in text or "NCCL" in text)
    )


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
    """Every rank's `value`, in rank order, on every rank (pickled through the group).
    The ranks first wait for each other over their store (a rank's chains may take much
    longer than another's), so the collective does not."""
    if world.group is not None:
        world.group.wait_for_others()
    out: list[Any] = [None] * world.size
    dist.all_gather_object(out, value)
    return out


def chain_share(world: World, chains: int) -> ChainShare:
    """This rank's NUTS chains, and every rank's records gathered on each."""
    return ChainShare(world.chains(chains), lambda mine: gather(mine, world))
