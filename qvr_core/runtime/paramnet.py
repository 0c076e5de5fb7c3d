"""Parameter networks: what maps a kernel's input to its family's parameters.

`mlp` (the default) is one tanh hidden layer of `hidden_dim` units; `linear`
is affine, optionally low rank (W = L R, as in the Mogrifier's factorised
Q and R matrices) so wide inputs cost `rank * (in + out)` weights.
"""

from __future__ import annotations

import math

import torch
from torch import nn


class MLP(nn.Module):
    """`out(tanh(hidden(x)))`: parameters `hidden.{weight,bias}` and `out.{weight,bias}`."""

    def __init__(self, in_features: int, out_features: int, hidden_dim: int) -> None:
        super().__init__()
        self.hidden = nn.Linear(in_features, hidden_dim)
        self.out = nn.Linear(hidden_dim, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(torch.tanh(self.hidden(x)))


class Affine(nn.Module):
    """`x W^T + b`: parameters `weight` (out, in) and `bias` (out,), like nn.Linear."""

    def __init__(self, in_features: int, out_features: int) -> None:
        super().__init__()
        layer = nn.Linear(in_features, out_features)
        self.weight = layer.weight
        self.bias = layer.bias

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return nn.functional.linear(x, self.weight, self.bias)

    def extra_repr(self) -> str:
        return f"in_features={self.weight.shape[1]}, out_features={self.weight.shape[0]}"


class LowRankAffine(nn.Module):
    """`x (L R)^T + b` with `left` (out, rank), `right` (rank, in) and `bias` (out,).

    Initialised so that L R has the variance of a default dense layer
    (each entry is a sum of `rank` products).
    """

    def __init__(self, in_features: int, out_features: int, rank: int) -> None:
        super().__init__()
        std = math.sqrt(math.sqrt(1.0 / (in_features * rank)))
        self.left = nn.Parameter(torch.randn(out_features, rank) * std)
        self.right = nn.Parameter(torch.randn(rank, in_features) * std)
        self.bias = nn.Parameter(torch.zeros(out_features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x @ self.right.T) @ self.left.T + self.bias

    def extra_repr(self) -> str:
        out, rank = self.left.shape
        return f"in_features={self.right.shape[1]}, out_features={out}, rank={rank}"


def make_paramnet(
    in_features: int,
    out_features: int,
    source: str = "mlp",
    hidden_dim: int = 64,
    rank: int | None = None,
) -> nn.Module:
    """The network a `[param_source=..., hidden_dim=..., rank=...]` option block asks for."""
    if source == "linear":
        if rank:
            return LowRankAffine(in_features, out_features, rank)
        return Affine(in_features, out_features)
    return MLP(in_features, out_features, hidden_dim)
