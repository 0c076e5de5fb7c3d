"""torch's Wishart distribution, built and scored without reading a value into Python.

NUTS evaluates its chains' potentials together under `vmap` and records that call
(`inference.many`); both refuse a tensor's value read into Python. torch's Wishart
reads three: its constructor asks whether any degrees of freedom are at most K - 1,
whatever the validation setting; its density's `torch.mvlgamma` checks that its
argument is above (K - 1) / 2; and the check of its support
(`constraints.positive_definite`) asks whether any matrix is not symmetric before it
tries their Cholesky factors. So a model with a Wishart or inverse Wishart step ran
every leapfrog step eagerly. `RecordableWishart` keeps torch's distribution (its draws, mean and
variance) but checks the degrees of freedom only where torch validates arguments (its
`arg_constraints`, eagerly: a run's data and the start of its chains), writes the
multivariate log-gamma out as its sum of log-gammas, and checks its support matrix by
matrix (`POSITIVE_DEFINITE`), none of which reads a value.
"""

from __future__ import annotations

import math

import torch
from torch import distributions as D
from torch.distributions import constraints as C


class PositiveDefinite(C._PositiveDefinite):
    """Symmetric positive-definite matrices, as torch's `constraints.positive_definite`
    (symmetric to 1e-6, with a Cholesky factor), each matrix judged on its own."""

    def check(self, value: torch.Tensor) -> torch.Tensor:
        # torch.isclose(value, value.mT, atol=1e-6), which vmap runs matrix by matrix
        close = (value - value.mT).abs() <= 1e-6 + 1e-5 * value.mT.abs()
        symmetric = close.all(-2).all(-1)
        factored: torch.Tensor = torch.linalg.cholesky_ex(value).info.eq(0)
        return symmetric & factored


#: The positive-definite matrices: a Wishart's support, an inverse Wishart's.
POSITIVE_DEFINITE = PositiveDefinite()


def multivariate_lgamma(x: torch.Tensor, p: int) -> torch.Tensor:
    """log Γ_p(x) = p (p - 1) / 4 log π + Σ_{j < p} log Γ(x - j / 2), elementwise: torch's
    `mvlgamma` without its check of the domain (x > (p - 1) / 2), which reads `x`."""
    halves = torch.arange(p, dtype=x.dtype, device=x.device) / 2
    return p * (p - 1) / 4 * math.log(math.pi) + torch.lgamma(x[..., None] - halves).sum(-1)


class RecordableWishart(D.Wishart):
    """A Wishart of `df` degrees of freedom and scale L Lᵀ (`scale_tril` L), as torch's;
    see the module's docstring for what differs."""

    support = POSITIVE_DEFINITE

    def __init__(
        self, df: torch.Tensor, scale_tril: torch.Tensor, validate_args: bool | None = None
    ) -> None:
        batch = torch.broadcast_shapes(scale_tril.shape[:-2], df.shape)
        size = scale_tril.shape[-1]
        self.df = df.expand(batch)
        self.scale_tril = scale_tril.expand((*batch, -1, -1))
        # validated, torch checks df > K - 1 here (`arg_constraints`)
        D.Distribution.__init__(self, batch, scale_tril.shape[-2:], validate_args=validate_args)
        self._batch_dims = [-(i + 1) for i in range(len(batch))]
        self._unbroadcasted_scale_tril = scale_tril
        # torch draws by the Bartlett decomposition, from these chi-squares
        below = torch.arange(size, dtype=scale_tril.dtype, device=scale_tril.device)
        self._dist_chi2 = D.Chi2(self.df.unsqueeze(-1) - below.expand((*batch, -1)))

    def expand(
        self, batch_shape: torch.Size | list[int] | tuple[int, ...], _instance: object = None
    ) -> RecordableWishart:
        """The same distribution over a larger batch (checked when this one was built)."""
        batch = torch.Size(batch_shape)
        new = RecordableWishart(
            self.df.expand(batch), self._unbroadcasted_scale_tril, validate_args=False
        )
        new._validate_args = self._validate_args
        return new

    def log_prob(self, value: torch.Tensor) -> torch.Tensor:
        if self._validate_args:
            self._validate_sample(value)
        df, size = self.df, self._event_shape[-1]
        log_det_scale = 2 * self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        trace = torch.cholesky_solve(value, self._unbroadcasted_scale_tril)
        return (
            -df / 2 * (size * math.log(2) + log_det_scale)
            - multivariate_lgamma(df / 2, size)
            + (df - size - 1) / 2 * torch.linalg.slogdet(value).logabsdet
            - trace.diagonal(dim1=-2, dim2=-1).sum(-1) / 2
        )


__all__ = ["POSITIVE_DEFINITE", "PositiveDefinite", "RecordableWishart", "multivariate_lgamma"]
