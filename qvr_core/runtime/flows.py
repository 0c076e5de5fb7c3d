"""`~ Flow`: quivers' conditional normalizing flow (`ConditionalFlow`), a kernel whose
density is exact without a closed form.

A draw is a standard Normal vector z pushed through `n_layers` affine coupling layers
(RealNVP): layer i keeps half of the coordinates (the even ones when i is even, else the
odd ones) and moves the other half to z_b * exp(s) + t, where the shift t and log-scale s
(clamped to [-5, 5]) come from a small network reading the input and the kept half. The
Jacobian is triangular, so log p(y | x) is the base Normal's log-density at the inverse
image of y plus the sum of the inverse layers' log-scales. As in quivers, each layer's
network is Linear -> tanh -> Linear -> tanh -> Linear with `hidden_dim` units, and a
finite input enters through a learned embedding of `hidden_dim` numbers (a space's
numbers enter as they are; an input with both, which quivers reads as one space, as
qvr's parameter networks read it: finite factors one-hot). The mean is the image of the
base's mean, z = 0: a flow has no closed-form mean, and that point is where its draws
concentrate.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from qvr_core.check.types import Arrow
from qvr_core.runtime.morphisms import Leaf, flat_index, value_count
from qvr_core.runtime.tensors import feature_width, features

#: quivers clamps each layer's log-scale to this range, for stability.
LOG_SCALE_LIMIT = 5.0


class _Coupling(nn.Module):
    """One affine coupling layer: `kept` coordinates condition the `moved` ones."""

    kept: torch.Tensor
    moved: torch.Tensor

    def __init__(self, width: int, condition: int, even: bool, hidden: int, rows: int) -> None:
        super().__init__()
        # a finite input (`rows` values) enters through this layer's own embedding, as in
        # quivers, where each layer's network embeds it
        self.embed = nn.Embedding(rows, hidden) if rows else None
        condition = hidden if rows else condition
        first = 0 if even else 1
        kept = torch.arange(first, width, 2)
        moved = torch.arange(1 - first, width, 2)
        self.register_buffer("kept", kept)
        self.register_buffer("moved", moved)
        self.net = nn.Sequential(
            nn.Linear(condition + len(kept), hidden),
            nn.Tanh(),
            nn.Linear(hidden, hidden),
            nn.Tanh(),
            nn.Linear(hidden, 2 * len(moved)),
        )

    def _shift_log_scale(
        self, condition: torch.Tensor, z: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        if self.embed is not None:
            condition = self.embed(condition)
        out = self.net(torch.cat([condition, z[..., self.kept]], dim=-1))
        shift, log_scale = out.chunk(2, dim=-1)
        return shift, log_scale.clamp(-LOG_SCALE_LIMIT, LOG_SCALE_LIMIT)

    def forward(self, condition: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        """Base side to draw side."""
        shift, log_scale = self._shift_log_scale(condition, z)
        out = z.clone()
        out[..., self.moved] = z[..., self.moved] * log_scale.exp() + shift
        return out

    def inverse(
        self, condition: torch.Tensor, y: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Draw side to base side, with the log-determinant of that map."""
        shift, log_scale = self._shift_log_scale(condition, y)
        out = y.clone()
        out[..., self.moved] = (y[..., self.moved] - shift) * (-log_scale).exp()
        return out, -log_scale.sum(-1)


class Flow(Leaf):
    """`[n_layers=L, hidden_dim=H] ~ Flow` into one Real object of at least 2 numbers."""

    def __init__(self, key: str, arrow: Arrow, n_layers: int, hidden_dim: int) -> None:
        super().__init__(key, arrow)
        self.width = self.cod_p.width
        self.finite = self.dom_p.discrete
        rows = value_count(self.dom_p) if self.finite else 0
        self.layers = nn.ModuleList(
            _Coupling(self.width, feature_width(self.dom_p), i % 2 == 0, hidden_dim, rows)
            for i in range(n_layers)
        )

    @property
    def stochastic(self) -> bool:
        return True

    def _condition(self, x: torch.Tensor) -> torch.Tensor:
        """The input as the layers read it: a finite value's row, a space's numbers."""
        return flat_index(x, self.dom_p) if self.finite else features(x, self.dom_p)

    def _push(self, x: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        condition = self._condition(x)
        for layer in self.layers:
            z = layer(condition, z)
        return z

    def _base(self, x: torch.Tensor) -> tuple[int, ...]:
        batch = x.shape if self.finite else x.shape[:-1]
        return (*batch, self.width)

    def _rsample(self, x: torch.Tensor) -> torch.Tensor:
        z = torch.randn(self._base(x), dtype=torch.get_default_dtype(), device=x.device)
        return self._push(x, z)

    def _mean(self, x: torch.Tensor) -> torch.Tensor:
        z = torch.zeros(self._base(x), dtype=torch.get_default_dtype(), device=x.device)
        return self._push(x, z)

    def _log_prob(self, x: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
        condition = self._condition(x)
        z, total = value, value.new_zeros(value.shape[:-1])
        for layer in reversed(self.layers):
            assert isinstance(layer, _Coupling)
            z, log_det = layer.inverse(condition, z)
            total = total + log_det
        base = -0.5 * z.pow(2).sum(-1) - 0.5 * self.width * math.log(2 * math.pi)
        return base + total
