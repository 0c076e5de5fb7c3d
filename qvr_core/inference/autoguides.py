"""The guides SVI users reach for after the mean-field Normal: a point (MAP) and full or
low-rank multivariate Normals, as Pyro's AutoDelta, AutoMultivariateNormal and
AutoLowRankMultivariateNormal.

Like `AutoNormalGuide` they are global (non-amortised): every latent site's
unconstrained value is one block of a vector `u` in R^D, D the sum of the
sites' event sizes, and each example of the batch draws its own `u` from the
same distribution. Constrained supports are reached through `biject_to` and
`log_prob` subtracts the log-det Jacobian, so `log q` is a density on the
support. The guide's parameters exist as soon as every site's event shape is
known (else on the first call, which `SVI.step` handles, as for AutoNormal).

- `AutoDeltaGuide`: u = loc for every example, log q = 0: SVI then maximises
  log p(x, z), a MAP estimate of the latents.
- `AutoMultivariateNormalGuide`: u ~ N(loc, L L^T), L lower triangular with a
  positive diagonal (D^2/2 parameters: correlations between all sites).
- `AutoLowRankMultivariateNormalGuide`: u ~ N(loc, W W^T + diag(d^2)) with W
  of rank `rank` (default ceil(sqrt(D)), as Pyro's).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

import torch
from torch import distributions as D
from torch import nn
from torch.distributions.transforms import Transform

from qvr_core.inference.errors import InferenceError
from qvr_core.inference.guide import AutoNormalGuide, Guide
from qvr_core.inference.sites import (
    LatentSite,
    ProgramLike,
    batch_shape,
    latent_names,
    reduce_to_batch,
    site_transform,
)
from qvr_core.runtime.share import current_share, pick


class _JointGuide(Guide):
    """Every latent site as one block of a vector; subclasses give its distribution."""

    def __init__(
        self, model: ProgramLike, observed_names: Iterable[str] = (), init_scale: float = 0.1
    ) -> None:
        super().__init__(model, observed_names, init_scale)
        self._transforms: dict[str, Transform | None] = {}
        self._sites: list[LatentSite] = []
        shapes: dict[str, tuple[int, ...]] = {}
        for name in latent_names(model, self.observed_names):
            self._transforms[name] = site_transform(model, name)  # discrete ones fail here
            shape = model.site_event_shape(name)
            if shape is not None:
                shapes[name] = tuple(shape)
        self.size = 0
        if len(shapes) == len(self._transforms):
            self._build(shapes)

    @property
    def latent_names(self) -> tuple[str, ...]:
        return tuple(self._transforms)

    @property
    def built(self) -> bool:
        return len(self._sites) == len(self._transforms)

    def _build(self, shapes: Mapping[str, tuple[int, ...]]) -> None:
        for name, transform in self._transforms.items():
            self._sites.append(LatentSite(name, shapes[name], transform))
        self.size = sum(s.numel for s in self._sites)
        self.loc = nn.Parameter(torch.zeros(self.size, dtype=self._dtype, device=self._device))
        self._create(self.size)

    def _create(self, size: int) -> None:
        """The parameters of the distribution besides `loc`."""

    def _materialise(self, x: Any) -> None:
        if self.built:
            return
        with torch.no_grad():
            values = self.model.run(x).values
        nbatch = len(batch_shape(self.model, x))
        self._build({n: tuple(values[n].shape[nbatch:]) for n in self._transforms})

    def distribution(self) -> D.Distribution:
        raise NotImplementedError

    def _split(
        self, u: torch.Tensor, nbatch: int, log_q: torch.Tensor
    ) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
        """The sites' values from `u` and log q minus every site's log-det Jacobian."""
        values, offset = {}, 0
        bshape = tuple(u.shape[:nbatch])
        for site in self._sites:
            part = u[..., offset : offset + site.numel].reshape(bshape + site.unconstrained_shape)
            offset += site.numel
            z = part
            if site.transform is not None:
                z = site.transform(part)
                log_det = site.transform.log_abs_det_jacobian(part, z)
                log_q = log_q - reduce_to_batch(log_det, nbatch)
            values[site.name] = z
        return values, log_q

    def sample_with_log_prob(self, x: Any) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
        self._materialise(x)
        bshape = tuple(batch_shape(self.model, x))
        if not self._sites:
            return {}, torch.zeros(bshape or (1,), dtype=self._dtype, device=self._device)
        share = current_share()
        if share is not None and share.plate is not None:
            local = sorted(s.name for s in self._sites if s.name in share.local)
            if local:
                raise InferenceError(
                    f"the {type(self).__name__} couples every latent, so it cannot draw "
                    f"the rows of {share.plate} a step scores for {', '.join(local)}: "
                    "subsample with --guide normal"
                )
        if share is not None and share.plate is None and bshape:  # a share of the batch
            u, log_q = self._draw((share.drawn, *bshape[1:]))
            u, log_q = pick(u, 0, share.mine), pick(log_q, 0, share.mine)
        else:
            u, log_q = self._draw(bshape)
        values, log_q = self._split(u, len(bshape), log_q)
        if share is not None and share.plate is not None and share.global_scale != 1.0:
            log_q = log_q * share.global_scale
        return values, log_q if bshape else log_q.reshape(1)

    def _draw(self, bshape: tuple[int, ...]) -> tuple[torch.Tensor, torch.Tensor]:
        q = self.distribution()
        u = q.rsample(bshape)
        return u, q.log_prob(u)

    def _sample(self, bshape: tuple[int, ...]) -> torch.Tensor:
        """A draw of `u` without its density (which can cost far more than the draw)."""
        return self.distribution().rsample(bshape)

    def rsample(self, x: Any) -> dict[str, torch.Tensor]:
        self._materialise(x)
        bshape = tuple(batch_shape(self.model, x))
        if not self._sites:
            return {}
        u = self._sample(bshape)
        return self._split(u, len(bshape), torch.zeros(bshape, dtype=u.dtype, device=u.device))[0]

    def log_prob(self, x: Any, values: Mapping[str, torch.Tensor]) -> torch.Tensor:
        self._materialise(x)
        bshape = tuple(batch_shape(self.model, x))
        if not self._sites:
            return torch.zeros(bshape or (1,), dtype=self._dtype, device=self._device)
        parts: list[torch.Tensor] = []
        log_det: torch.Tensor | float = 0.0
        for site in self._sites:
            if site.name not in values:
                raise InferenceError(f"guide.log_prob: no value for latent site '{site.name}'")
            z = values[site.name]
            u = site.unconstrain(z)
            if site.transform is not None:
                log_det = log_det + reduce_to_batch(
                    site.transform.log_abs_det_jacobian(u, z), len(bshape)
                )
            parts.append(u.reshape(*bshape, -1))
        log_q = self._log_density(torch.cat(parts, dim=-1)) - log_det
        return log_q if bshape else log_q.reshape(1)

    def _log_density(self, u: torch.Tensor) -> torch.Tensor:
        return self.distribution().log_prob(u)

    def median(self) -> dict[str, torch.Tensor]:
        """Every site at the guide's centre (`loc` mapped onto the support)."""
        values, _ = self._split(self.loc.detach(), 0, torch.zeros(()))
        return values

    def forward(self, x: Any) -> dict[str, torch.Tensor]:
        return self.rsample(x)


class AutoDeltaGuide(_JointGuide):
    """A point at `loc`: SVI with it is MAP estimation of the latent sites."""

    def _draw(self, bshape: tuple[int, ...]) -> tuple[torch.Tensor, torch.Tensor]:
        u = self._sample(bshape)
        return u, torch.zeros(bshape, dtype=self.loc.dtype, device=self.loc.device)

    def _sample(self, bshape: tuple[int, ...]) -> torch.Tensor:
        return self.loc.expand(*bshape, self.size)

    def _log_density(self, u: torch.Tensor) -> torch.Tensor:
        return torch.zeros(u.shape[:-1], dtype=u.dtype, device=u.device)


class AutoMultivariateNormalGuide(_JointGuide):
    """N(loc, L L^T) over every latent site together."""

    def _create(self, size: int) -> None:
        self.tril = nn.Parameter(torch.zeros(size, size, dtype=self._dtype, device=self._device))
        self.log_diag = nn.Parameter(
            torch.full((size,), math.log(self.init_scale), dtype=self._dtype, device=self._device)
        )

    def scale_tril(self) -> torch.Tensor:
        return torch.tril(self.tril, -1) + torch.diag(self.log_diag.exp())

    def distribution(self) -> D.Distribution:
        return D.MultivariateNormal(self.loc, scale_tril=self.scale_tril(), validate_args=False)


class AutoLowRankMultivariateNormalGuide(_JointGuide):
    """N(loc, W W^T + diag(d^2)) with W of rank `rank`."""

    def __init__(
        self,
        model: ProgramLike,
        observed_names: Iterable[str] = (),
        init_scale: float = 0.1,
        rank: int | None = None,
    ) -> None:
        if rank is not None and int(rank) < 1:
            raise InferenceError(f"rank must be at least 1, got {rank}")
        self.rank = rank
        super().__init__(model, observed_names, init_scale)

    def _create(self, size: int) -> None:
        rank = self.rank or max(1, math.ceil(math.sqrt(size)))
        self.rank = rank
        factor = torch.randn(size, rank, dtype=self._dtype, device=self._device)
        self.cov_factor = nn.Parameter(factor * (0.5 * self.init_scale / math.sqrt(rank)))
        self.log_diag = nn.Parameter(
            torch.full((size,), math.log(self.init_scale), dtype=self._dtype, device=self._device)
        )

    def distribution(self) -> D.Distribution:
        return D.LowRankMultivariateNormal(
            self.loc, self.cov_factor, (2 * self.log_diag).exp(), validate_args=False
        )

    def _sample(self, bshape: tuple[int, ...]) -> torch.Tensor:
        """loc + W e + d f, e and f standard normal, as torch draws it, without building the
        distribution: its constructor factors the capacitance matrix (D * rank^2 work),
        which a draw does not need (200 summary draws of a 130k-site guide took minutes)."""
        dtype, device = self.loc.dtype, self.loc.device
        e = torch.randn((*bshape, self.cov_factor.shape[1]), dtype=dtype, device=device)
        f = torch.randn((*bshape, self.size), dtype=dtype, device=device)
        return self.loc + e @ self.cov_factor.T + self.log_diag.exp() * f


#: `--guide` names, as `qvr_core.plan.run_arguments.GUIDES` lists them
GUIDES: dict[str, type[nn.Module]] = {
    "normal": AutoNormalGuide,
    "delta": AutoDeltaGuide,
    "mvn": AutoMultivariateNormalGuide,
    "lowrank-mvn": AutoLowRankMultivariateNormalGuide,
}
