"""Where a latent morphism's free parameter starts: 0, Normal(0, scale), or its rule's own.

qvr starts a latent's parameter at 0 (a uniform row, entries 1/2 under a declared rule),
so a run's start does not depend on the seed's first draws. quivers draws it Normal(0,
0.5) instead; a file that says `[role=latent, scale=s]` gets quivers' draw with spread s,
and `init=auto` gets quivers' algebra-guided start (`builtins.algebras.auto_start`),
which wins over `scale` as in quivers' compiler. Both draw from torch's generator, which
a run seeds before it compiles the program, so a `--seed` run starts the same way.
"""

from __future__ import annotations

import math

import torch

from qvr_core.builtins.algebras import Start, auto_start


def initial(
    shape: tuple[int, ...], rule: str, size: int, scale: float | None, init: str | None
) -> torch.Tensor:
    """The starting raw parameter of a latent of tensor shape `shape` under `rule` (a
    registry name; `markov` for qvr's row-stochastic latents), from its options; `size`:
    the values of its larger side, the cells one composition joins over (quivers'
    `intermediate_size` for `init=auto`)."""
    if init == "auto":
        return _drawn(shape, auto_start(rule, size))
    if scale is not None:
        return torch.randn(shape) * scale
    return torch.zeros(shape)


def _drawn(shape: tuple[int, ...], start: Start) -> torch.Tensor:
    def raw(p: float) -> float:  # a value in (0, 1) as its logit, kept off 0 and 1
        if not start.through_sigmoid:
            return p
        p = min(max(p, 1e-6), 1.0 - 1e-6)
        return math.log(p / (1.0 - p))

    if start.distribution == "constant":
        return torch.full(shape, raw(start.mean))
    if start.distribution == "uniform":
        return torch.empty(shape).uniform_(raw(start.low), raw(start.high))
    return torch.empty(shape).normal_(raw(start.mean), max(start.std, 1e-6))
