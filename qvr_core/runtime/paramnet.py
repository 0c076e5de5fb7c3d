"""Parameter networks: what maps a kernel's input to its family's parameters.

`mlp` (the default) is one tanh hidden layer of `hidden_dim` units; `linear`
is affine, optionally low rank (W = L R, as in the Mogrifier's factorised
Q and R matrices) so wide inputs cost `rank * (in + out)` weights;
`layer_norm` is a LayerNorm with a learned gain and bias per entry.

Weights are stored at unit scale and multiplied by `gain` = 1/sqrt(fan-in)
in the forward pass (the "NTK" parameterisation). A layer's output then has
the same scale whatever its width, when users overwrite every parameter with
`randn * c` (as the gallery's "Try it" does) and under a lifted weight's
Normal(0, 1) prior. A fresh layer starts as `nn.Linear` does: the effective
weight `gain * W` and the bias are U(-1/sqrt(in), 1/sqrt(in)).

The same scaling shrinks an optimiser's step: Adam moves a stored weight by
about `lr`, so the layer's effective weight moves by `lr * gain`, sqrt(in)
times less than an `nn.Linear` trained with the same `lr` (the BERT page,
d2l's BERT ported, learned several times slower than d2l's for it).
`param_groups` gives each weight the learning rate `lr / gain` that undoes
this, so the compiled model takes the steps its PyTorch twin takes.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import torch
from torch import nn

from qvr_core.builtins import LAYER_NORM


class Affine(nn.Module):
    """`x W^T / sqrt(in) + b`: parameters `weight` (out, in) and `bias` (out,).

    `weight` ~ U(-1, 1) and `bias` ~ U(-1/sqrt(in), 1/sqrt(in)): the layer starts as
    `nn.Linear(in, out)` (kaiming-uniform with a = sqrt(5)) does. With `weight` ~
    N(0, 1) the effective weights were sqrt(3) times wider than PyTorch's, which
    sharpens attention at the start and slowed BERT's masked-token learning.
    """

    def __init__(self, in_features: int, out_features: int) -> None:
        super().__init__()
        self.gain = 1.0 / math.sqrt(in_features)
        self.weight = nn.Parameter(torch.empty(out_features, in_features).uniform_(-1.0, 1.0))
        self.bias = nn.Parameter(torch.empty(out_features).uniform_(-self.gain, self.gain))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return nn.functional.linear(x * self.gain, self.weight, self.bias)

    def step_scales(self) -> dict[str, float]:
        """Learning-rate factors that make Adam step `gain * weight` as `nn.Linear`'s."""
        return {"weight": 1.0 / self.gain}

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
    dense layer (each entry of L R is a sum of `rank` products), the variance
    1/in of the Mogrifier seed's factorised initialiser.
    """

    def __init__(self, in_features: int, out_features: int, rank: int) -> None:
        super().__init__()
        self.left = nn.Parameter(torch.randn(out_features, rank))
        self.right = nn.Parameter(torch.randn(rank, in_features))
        self.bias = nn.Parameter(torch.zeros(out_features))
        self.gain = 1.0 / math.sqrt(in_features * rank)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ((x * self.gain) @ self.right.T) @ self.left.T + self.bias

    def step_scales(self) -> dict[str, float]:
        """The gain split evenly between the factors (as the seed's factors carry it)."""
        scale = 1.0 / math.sqrt(self.gain)
        return {"left": scale, "right": scale}

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


def param_groups(
    modules: Iterable[nn.Module], lr: float, eps: float = 1e-8
) -> list[dict[str, Any]]:
    """`torch.optim` parameter groups for every parameter of `modules` (once each): a
    fan-in scaled weight gets `lr` times its layer's step scale, every other parameter
    `lr`, so that Adam(param_groups(...)) trains the model as Adam(lr, eps=eps) trains
    the same network written with `nn.Linear`.

    The weight's gradient is the scale times smaller than `nn.Linear`'s, so Adam's `eps`,
    added to the root of its second moment, is divided by the scale too: with `eps`
    itself the step would be `nn.Linear`'s under an `eps` the scale times larger (11x at
    a fan-in of 128), where with it the two steps agree to rounding. An optimiser that
    has no `eps` ignores the key.

        optim = torch.optim.Adam(param_groups([model, guide], lr=1e-3))
    """
    scales: dict[int, float] = {}
    params: list[nn.Parameter] = []
    for module in modules:
        for sub in module.modules():
            if isinstance(sub, Affine | LowRankAffine):
                for name, scale in sub.step_scales().items():
                    scales.setdefault(id(getattr(sub, name)), scale)
        params.extend(module.parameters())
    by_scale: dict[float, list[nn.Parameter]] = {}
    seen: set[int] = set()
    for p in params:
        if id(p) not in seen:
            seen.add(id(p))
            by_scale.setdefault(scales.get(id(p), 1.0), []).append(p)
    return [{"params": ps, "lr": lr * scale, "eps": eps / scale} for scale, ps in by_scale.items()]
