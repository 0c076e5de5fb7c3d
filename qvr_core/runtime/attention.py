"""`multihead(q, k, v)`: multi-head scaled dot-product self-attention, and padding.

Head i maps every position with its query, key and value morphisms, weighs the
values of all positions by softmax(q_i . k_i / sqrt(d_k)) and the heads' results
are put side by side (the product convention), so `multihead(wq, wk, wv) >> wo` is a
Transformer's multi-head attention. Positions past a sequence's length get no
weight: a run on `Padded(x, lengths)` sets the lengths for every attention it
reaches (a context variable, as `torch.autocast` does for dtypes, so the
morphism protocol keeps one tensor argument).

Attention is a deterministic function of its parts, so it scores as a `let`
does: 0. The weights of the last forward pass are kept (`last_weights`,
`(batch, heads, L, L)`) for the run view.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import cast

import torch
from torch import nn

from qvr_core.check.types import Arrow
from qvr_core.runtime.errors import QvrRuntimeError
from qvr_core.runtime.morphisms import Morphism
from qvr_core.runtime.tensors import elem, event_shape

_LENGTHS: ContextVar[torch.Tensor | None] = ContextVar("qvr_sequence_lengths", default=None)


@dataclass(frozen=True)
class Padded:
    """A batch of sequences of different lengths: `values` `(B, L, ...)` padded to one
    length L, `lengths` `(B,)` how many leading positions of each are real."""

    values: torch.Tensor
    lengths: torch.Tensor


def unpad(x: torch.Tensor | Padded) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The tensor of a program input and its lengths (None when not padded)."""
    if isinstance(x, Padded):
        return x.values, x.lengths
    return x, None


@contextmanager
def lengths_of(x: torch.Tensor, lengths: torch.Tensor | None, axis: int) -> Iterator[None]:
    """Within the block, attention over sequences of `x`'s length masks padded keys."""
    if lengths is None:
        yield
        return
    lengths = torch.as_tensor(lengths)
    batch = x.shape[:axis]
    size = x.shape[axis]
    if lengths.is_floating_point() or tuple(lengths.shape) != tuple(batch):
        raise QvrRuntimeError(
            f"lengths must be whole numbers of shape {tuple(batch)} (one per sequence), "
            f"got {lengths.dtype} of shape {tuple(lengths.shape)}",
            site="lengths",
        )
    if lengths.numel() and (int(lengths.min()) < 1 or int(lengths.max()) > size):
        raise QvrRuntimeError(
            f"lengths must be between 1 and the padded length {size}, got "
            f"{int(lengths.min())}..{int(lengths.max())}",
            site="lengths",
        )
    token = _LENGTHS.set(lengths.to(x.device))
    try:
        yield
    finally:
        _LENGTHS.reset(token)


def key_mask(batch: tuple[int, ...], size: int, device: torch.device) -> torch.Tensor | None:
    """`(..., L)`: which keys are real positions, under the lengths in effect."""
    lengths = _LENGTHS.get()
    if lengths is None or tuple(lengths.shape) != batch[-lengths.dim() :]:
        return None
    return torch.arange(size, device=device) < lengths[..., None]


class Attention(Morphism):
    """`multihead(q, k, v)` over `[A]`: h heads, `[A] -> [V * ... * V]`."""

    def __init__(
        self,
        arrow: Arrow,
        label: str,
        queries: Sequence[Morphism],
        keys: Sequence[Morphism],
        values: Sequence[Morphism],
    ) -> None:
        super().__init__(arrow, label)
        self.queries = nn.ModuleList(queries)
        self.keys = nn.ModuleList(keys)
        self.values = nn.ModuleList(values)
        self._weights: list[torch.Tensor] = []  # per head, of the last forward pass

    @property
    def last_weights(self) -> torch.Tensor | None:
        """`(batch, heads, L, L)` of the last forward pass, stacked when asked for (not
        on every training step)."""
        return torch.stack(self._weights, -3) if self._weights else None

    @property
    def heads(self) -> int:
        return len(self.queries)

    def _attend(self, x: torch.Tensor, draw: bool) -> torch.Tensor:
        axis = x.ndim - 1 - len(event_shape(elem(self.dom)))
        mask = key_mask(tuple(x.shape[:axis]), x.shape[axis], x.device)
        outs, weights = [], []
        heads = cast(
            "Iterator[tuple[Morphism, Morphism, Morphism]]",
            zip(self.queries, self.keys, self.values, strict=True),
        )
        for maps in heads:
            query, key, value = (m._rsample(x) if draw else m._mean(x) for m in maps)
            scores = query @ key.transpose(-1, -2) / math.sqrt(key.shape[-1])
            if mask is not None:  # padded keys: exp(min - max) is exactly 0
                scores = scores.masked_fill(~mask[..., None, :], torch.finfo(scores.dtype).min)
            w = torch.softmax(scores, -1)
            outs.append(w @ value)
            weights.append(w.detach())
        self._weights = weights
        return torch.cat(outs, -1)

    def _rsample(self, x: torch.Tensor) -> torch.Tensor:
        return self._attend(x, draw=True)

    def _mean(self, x: torch.Tensor) -> torch.Tensor:
        return self._attend(x, draw=False)

    def _log_prob(self, x: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
        return self._zeros(x)
