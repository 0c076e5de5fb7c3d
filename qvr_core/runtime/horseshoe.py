"""The horseshoe prior as one number family: the local scale integrated out.

Carvalho, Polson and Scott's horseshoe draws beta = tau * lambda * z with lambda a
HalfCauchy(1) and z a standard Normal. Its marginal density, the Normal(0, tau lambda)
density averaged over lambda, has no closed form. quivers scores it with a 16-point
Gauss-Legendre rule after lambda = tan(pi t / 2) maps the half-line onto t in (0, 1);
under that map the HalfCauchy(1) density times dlambda/dt is exactly 1, so the
integral is the mean over t of Normal(beta; 0, tau tan(pi t / 2)). This module scores
with the same rule (`builtins/quadrature.py`, which the exports read too), so a
program's log density is quivers'.

The rule makes the density a mixture of 16 Normals, node i's with weight w_i / 2 and
scale tau lambda_i, and that mixture is what is drawn from: a node, then tau lambda_i z,
which keeps a gradient in tau (`rsample`). quivers draws lambda from the HalfCauchy
itself, whose law puts more mass near 0 (a logarithmic pole no finite rule reaches);
drawing from the density that is scored keeps prior draws, simulation-based checks
and the posterior predictive consistent with the log density NUTS samples.
"""

from __future__ import annotations

import math
from typing import ClassVar

import torch
from torch import distributions as D
from torch.distributions import constraints as C

from qvr_core.builtins.quadrature import HORSESHOE_SCALES, HORSESHOE_WEIGHTS
from qvr_core.runtime.rebuilt import Rebuilt

#: The log of the rule's weights (`builtins/quadrature.py`).
_LOG_WEIGHTS = tuple(math.log(w) for w in HORSESHOE_WEIGHTS)
_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


class Horseshoe(Rebuilt, D.Distribution):
    """The horseshoe's marginal over its local scale, at global scale `scale`."""

    PARAMS = ("scale",)

    arg_constraints: ClassVar[dict[str, C.Constraint]] = {"scale": C.positive}
    support = C.real
    has_rsample = True

    def __init__(self, scale: torch.Tensor, validate_args: bool | None = None):
        self.scale = scale
        super().__init__(scale.shape, validate_args=validate_args)

    def log_prob(self, value: torch.Tensor) -> torch.Tensor:
        dtype = value.dtype if value.is_floating_point() else self.scale.dtype
        lam = torch.as_tensor(HORSESHOE_SCALES, dtype=dtype)
        log_w = torch.as_tensor(_LOG_WEIGHTS, dtype=dtype)
        sigma = self.scale.unsqueeze(-1) * lam  # (..., 16)
        z = value.unsqueeze(-1) / sigma
        normal = -0.5 * z * z - torch.log(sigma) - _HALF_LOG_2PI
        return torch.logsumexp(normal + log_w, dim=-1)

    def rsample(self, sample_shape: torch.Size | list[int] | tuple[int, ...] = ()) -> torch.Tensor:
        shape = self._extended_shape(torch.Size(sample_shape))
        dtype = self.scale.dtype
        node = D.Categorical(logits=torch.as_tensor(_LOG_WEIGHTS, dtype=dtype)).sample(shape)
        local = torch.as_tensor(HORSESHOE_SCALES, dtype=dtype)[node]
        return self.scale.expand(shape) * local * torch.randn(shape, dtype=dtype)
