"""Batches of sequences of different lengths: `Padded(x, lengths)`.

A run on `Padded(x, lengths)` sets the lengths for everything it reaches that
reads positions (a context variable, as `torch.autocast` does for dtypes, so
the morphism protocol keeps one tensor argument): attention gives padded keys
no weight, a scan stops at each example's last real position and, read
right to left, starts there, and per-position observations are scored at the
real positions only.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from functools import partial

import torch

from qvr_core.runtime.errors import QvrRuntimeError
from qvr_core.runtime.value_checks import check_within

#: the lengths of the padded input being run, and its padded length
_LENGTHS: ContextVar[tuple[torch.Tensor, int] | None] = ContextVar(
    "qvr_sequence_lengths", default=None
)


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
    """Within the block, what reads the positions of sequences of `x`'s length knows
    which of them are padding."""
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
    check_within(lengths, 1, size, partial(_bad_length, size))
    token = _LENGTHS.set((lengths.to(x.device), size))
    try:
        yield
    finally:
        _LENGTHS.reset(token)


def _bad_length(size: int, bad: int) -> QvrRuntimeError:
    return QvrRuntimeError(
        f"lengths must be between 1 and the padded length {size}, got {bad}", site="lengths"
    )


def lengths_for(batch: tuple[int, ...], size: int) -> torch.Tensor | None:
    """The lengths in effect for sequences of the padded input's length with these batch
    axes (broadcast over extra leading axes, e.g. particles); None when nothing is padded
    or the sequence is another one (a gather of a few positions)."""
    padded = _LENGTHS.get()
    if padded is None:
        return None
    lengths, padded_size = padded
    if size != padded_size or tuple(lengths.shape) != batch[len(batch) - lengths.dim() :]:
        return None
    return lengths


def key_mask(batch: tuple[int, ...], size: int, device: torch.device) -> torch.Tensor | None:
    """`(..., L)`: which keys are real positions, under the lengths in effect."""
    lengths = lengths_for(batch, size)
    if lengths is None:
        return None
    return torch.arange(size, device=device) < lengths[..., None]


def real_positions(scores: torch.Tensor) -> torch.Tensor:
    """Per-position scores `(..., L)` with the padded positions' set to 0 (unchanged when
    nothing is padded or the sequence is another one): padding is not data."""
    mask = key_mask(tuple(scores.shape[:-1]), scores.shape[-1], scores.device)
    return scores if mask is None else scores.masked_fill(~mask, 0.0)
