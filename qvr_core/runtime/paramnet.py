"""Parameter networks: what maps a kernel's input to its family's parameters.

`mlp` (the default) is one tanh hidden layer of `hidden_dim` units; `linear`
is affine, optionally low rank (W = L R, as in the Mogrifier's factorised
Q and R matrices) so wide inputs cost `rank * (in + out)` weights;
`layer_norm` is a LayerNorm with a learned gain and bias per entry.

Weights are stored at unit scale and divided by sqrt(fan-in) in the forward
pass (the "NTK" parameterisation). A layer's output then has the same scale
whatever its width, both when users overwrite every parameter with
`randn * c` (as the gallery's "Try it" does) and under an optimiser like
Adam, whose per-parameter steps would otherwise move a wide layer's output
by width x lr per step and make SVI diverge.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from qvr_core.builtins import LAYER_NORM


class Affine(nn.Module):
    """`x W^T / sqrt(in) + b`: parameters `weight` (out, in) ~ N(0, 1) and `bias` (out,) = 0."""

    def __init__(self, in_features: int, out_features: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(out_features, in_features))
        self.bias = nn.Parameter(torch.zeros(out_features))
        self.gain = 1.0 / math.sqrt(in_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return nn.functional.linear(x * self.gain, self.weight, self.bias)

    def extra_repr(self) -> str:
        return f"in_features={self.weight.shape[1]}, out_features={self.weight.shape[0]}"


class MLP(nn.Module):
    """`out(tanh(hidden(x)))`: parameters `hidden.{weight,bias}` and `out.{weight,bias}`."""

    def __init__(self, in_features: int, out_features: int, hidden_dim: int) -> None:
        super().__init__()
        self.hidden = Affine(in_features, hidden_dim)
        self.out = Affine(hidden_dim, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(torch.tanh(self.hidden(x)))


class LowRankAffine(nn.Module):
    """`x (L R)^T / sqrt(in * rank) + b` with `left` (out, rank), `right` (rank, in), `bias`.

    Both factors are N(0, 1); the gain keeps the product at the scale of a
    dense layer (each entry of L R is a sum of `rank` products).
    """

    def __init__(self, in_features: int, out_features: int, rank: int) -> None:
        super().__init__()
        self.left = nn.Parameter(torch.randn(out_features, rank))
        self.right = nn.Parameter(torch.randn(rank, in_features))
        self.bias = nn.Parameter(torch.zeros(out_features))
        self.gain = 1.0 / math.sqrt(in_features * rank)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ((x * self.gain) @ self.right.T) @ self.left.T + self.bias

    def extra_repr(self) -> str:
        out, rank = self.left.shape
        return f"in_features={self.right.shape[1]}, out_features={out}, rank={rank}"


class LayerNorm(nn.Module):
    """`(x - mean) / sqrt(var + 1e-5) * weight + bias` over the last axis, as
    `torch.nn.LayerNorm` computes it (weight 1 and bias 0 at first): the gain and
    bias a Transformer's residual blocks learn."""

    def __init__(self, features: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x)


def make_paramnet(
    in_features: int,
    out_features: int,
    source: str = "mlp",
    hidden_dim: int = 64,
    rank: int | None = None,
) -> nn.Module:
    """The network a `[param_source=..., hidden_dim=..., rank=...]` option block asks for."""
    if source == LAYER_NORM.name:
        assert in_features == out_features, "the checker refuses a layer_norm that resizes"
        return LayerNorm(in_features)
    if source == "linear":
        if rank:
            return LowRankAffine(in_features, out_features, rank)
        return Affine(in_features, out_features)
    return MLP(in_features, out_features, hidden_dim)
