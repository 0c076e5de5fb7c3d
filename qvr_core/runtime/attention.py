"""`multihead(q, k, v)` and its causal and cross forms: scaled dot-product attention.

Head i maps every position with its query, key and value morphisms, weighs the
values of all positions by softmax(q_i . k_i / sqrt(d_k)) and the heads' results
are put side by side (the product convention), so `multihead(wq, wk, wv) >> wo` is a
Transformer's multi-head attention. `causal_multihead` lets position t see
positions 0..t only (a decoder); `cross_multihead` reads a value of `[Q * M]`,
queries from Q and keys and values from the memory M (an encoder's states).
Positions past a sequence's length get no weight (`qvr_core.runtime.padding`).
Causal attention needs no key mask: padding follows every real position, so
the causal mask already hides it from each real query.

Attention is a deterministic function of its parts, so it scores as a `let`
does: 0. The weights of the last forward pass are kept (`last_weights`,
`(batch, heads, L, L)`) for the run view.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import cast

import torch
from torch import nn

from qvr_core.check.types import Arrow
from qvr_core.runtime.morphisms import Morphism
from qvr_core.runtime.padding import Padded, key_mask
from qvr_core.runtime.tensors import elem, event_shape, split


class Attention(Morphism):
    """`multihead(q, k, v)` over `[A]`: h heads, `[A] -> [V * ... * V]`; `kind` "causal"
    masks the future, "cross" reads `[Q * M]` (queries from Q, keys and values from M)."""

    def __init__(
        self,
        arrow: Arrow,
        label: str,
        queries: Sequence[Morphism],
        keys: Sequence[Morphism],
        values: Sequence[Morphism],
        kind: str = "self",
    ) -> None:
        super().__init__(arrow, label)
        self.kind = kind
        self._reads = [queries[0].dom, keys[0].dom]  # cross-attention: x's two factors
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

    def _inputs(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """What the queries read and what keys and values read: x itself, or for
        cross-attention its two factors."""
        if self.kind != "cross":
            return x, x
        queries, memory = split(x, self._reads, self.dom)
        return queries, memory

    def _mask(self, x: torch.Tensor) -> torch.Tensor | None:
        """`(..., L or 1, L)` True where a query may look at a key, None for everywhere."""
        axis = x.ndim - 1 - len(event_shape(elem(self.dom)))
        size = x.shape[axis]
        if self.kind == "causal":
            return torch.ones(size, size, dtype=torch.bool, device=x.device).tril()
        keys = key_mask(tuple(x.shape[:axis]), size, x.device)
        return None if keys is None else keys[..., None, :]

    def _attend(self, x: torch.Tensor, draw: bool) -> torch.Tensor:
        mask = self._mask(x)
        seen, memory = self._inputs(x)
        outs, weights = [], []
        heads = cast(
            "Iterator[tuple[Morphism, Morphism, Morphism]]",
            zip(self.queries, self.keys, self.values, strict=True),
        )
        for q_map, k_map, v_map in heads:
            query, key, value = (
                m._rsample(y) if draw else m._mean(y)
                for m, y in ((q_map, seen), (k_map, memory), (v_map, memory))
            )
            scores = query @ key.transpose(-1, -2) / math.sqrt(key.shape[-1])
            if mask is not None:  # hidden keys: exp(min - max) is exactly 0
                scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
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


__all__ = ["Attention", "Padded"]  # Padded: where the pages and benches import it from
