"""Recorded operations TorchScript's tracer cannot take, written as ones it can.

`torch.jit.trace` hands a recorded graph (`inference.record`) to TorchScript, whose
tracer refuses an operation with a list of booleans among its arguments ("Found an
unsupported argument type in the JIT tracer"). Autograd's backward of a LayerNorm is
one (`native_layer_norm_backward` takes the mask of the gradients it is to compute),
so every Transformer's SVI step (the gallery's BERT) stayed eager. This pass writes
that backward as the plain operations of its formula, which the tracer records; the
caller compares the replay with the eager step before using it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch.fx import GraphModule

aten = torch.ops.aten


def traceable(module: GraphModule) -> GraphModule:
    """`module` with each operation the tracer refuses written in plain operations."""
    changed = False
    for node in module.graph.nodes:
        if node.op == "call_function" and node.target is aten.native_layer_norm_backward.default:
            node.target = layer_norm_backward
            changed = True
    if changed:
        module.recompile()
    return module


def layer_norm_backward(
    grad: torch.Tensor,
    x: torch.Tensor,
    normalized_shape: Sequence[int],
    mean: torch.Tensor,
    rstd: torch.Tensor,
    weight: torch.Tensor | None,
    bias: torch.Tensor | None,
    output_mask: Sequence[bool],
) -> tuple[torch.Tensor | None, torch.Tensor | None, torch.Tensor | None]:
    """The gradients of a LayerNorm over the last `len(normalized_shape)` axes, as
    `aten.native_layer_norm_backward` gives them (None where `output_mask` says so),
    from `mean` and `rstd` (one per normalised group, its axes kept)."""
    inner = tuple(range(x.dim() - len(normalized_shape), x.dim()))
    outer = tuple(range(x.dim() - len(normalized_shape)))
    n = math.prod(normalized_shape)
    normed = (x - mean) * rstd
    scaled = grad * weight if weight is not None else grad
    grad_x = None
    if output_mask[0]:
        total = scaled.sum(inner, keepdim=True)
        along = (scaled * normed).sum(inner, keepdim=True)
        grad_x = rstd * (scaled - total / n - normed * (along / n))
    grad_weight = _sum(grad * normed, outer) if output_mask[1] and weight is not None else None
    grad_bias = _sum(grad, outer) if output_mask[2] and bias is not None else None
    return grad_x, grad_weight, grad_bias


def _sum(t: torch.Tensor, axes: tuple[int, ...]) -> torch.Tensor:
    """`t` summed over `axes` (none: `t` itself; torch reads an empty list as all)."""
    return t.sum(axes) if axes else t
