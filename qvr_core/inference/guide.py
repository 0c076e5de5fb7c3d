"""AutoNormalGuide: a mean-field Normal variational family over a program's latent sites.

Each unobserved site gets a `loc` and a `log_scale` of the site's event shape in
unconstrained space; draws are independent across the batch but share those
parameters (a global, non-amortised guide, like Pyro's `AutoNormal`). Sites with
a constrained support are pushed through `biject_to`, and `log_prob` includes the
log-det Jacobian, so `log q` is a density on the support itself.

Parameters exist as soon as the guide is built, so an optimiser can be made from
`guide.parameters()` straight away. The exception is a site whose event shape the
program cannot know before it sees an input (it depends on the sequence length):
its parameters are created on the first call. `SVI.step` hands such late
parameters to its optimiser automatically; with a hand-written training loop,
call `guide.rsample(x)` once before building the optimiser.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

import torch
from torch import nn
from torch.distributions.transforms import Transform

from qvr_core.inference.errors import InferenceError
from qvr_core.inference.sites import (
    LatentSite,
    ProgramLike,
    batch_shape,
    check_site_names,
    latent_names,
    reduce_to_batch,
    site_transform,
)
from qvr_core.runtime.share import Share, current_share, pick

_LOG_2PI = math.log(2 * math.pi)


def _key(name: str) -> str:
    # nn.ParameterDict keys may not contain dots (lifted parameter names do).
    return name.replace(".", "__")


def _model_dtype(model: Any) -> tuple[torch.dtype, torch.device]:
    params = list(model.parameters()) if isinstance(model, nn.Module) else []
    floats = [p for p in params if p.is_floating_point()]
    if floats:
        return floats[0].dtype, floats[0].device
    return torch.get_default_dtype(), torch.get_default_device()  # `runs.device.computing_on`


class Guide(nn.Module):
    """What every automatic guide keeps: its model (not a submodule: guide.parameters()
    must not repeat the model's), the observed names, the initial scale, the dtype."""

    def __init__(
        self, model: ProgramLike, observed_names: Iterable[str] = (), init_scale: float = 0.1
    ) -> None:
        super().__init__()
        if not init_scale > 0:
            raise InferenceError(f"init_scale must be positive, got {init_scale}")
        self._model = (model,)
        self.observed_names = frozenset(observed_names)
        check_site_names(model, self.observed_names, "observed name")
        self.init_scale = float(init_scale)
        self._dtype, self._device = _model_dtype(model)

    @property
    def model(self) -> ProgramLike:
        return self._model[0]


class AutoNormalGuide(Guide):
    """Mean-field Normal guide: `rsample(x)` -> {site: value}, `log_prob(x, values)` -> (B,)."""

    def __init__(
        self, model: ProgramLike, observed_names: Iterable[str] = (), init_scale: float = 0.1
    ) -> None:
        super().__init__(model, observed_names, init_scale)
        self.locs = nn.ParameterDict()
        self.log_scales = nn.ParameterDict()
        self._transforms: dict[str, Transform | None] = {}
        self._sites: dict[str, LatentSite] = {}  # sites whose parameters exist
        for name in latent_names(model, self.observed_names):
            self._transforms[name] = site_transform(model, name)  # discrete ones fail here
            shape = model.site_event_shape(name)
            if shape is not None:
                self._create(name, tuple(shape))
        if len({_key(n) for n in self._transforms}) != len(self._transforms):
            raise InferenceError("two latent sites map to the same guide parameter name")

    @property
    def latent_names(self) -> tuple[str, ...]:
        return tuple(self._transforms)

    def _site(self, name: str) -> LatentSite:
        return self._sites[name]

    def _create(self, name: str, event_shape: tuple[int, ...]) -> None:
        site = LatentSite(name, event_shape, self._transforms[name])
        self._sites[name] = site
        ushape = site.unconstrained_shape
        self.locs[_key(name)] = nn.Parameter(
            torch.zeros(ushape, dtype=self._dtype, device=self._device)
        )
        self.log_scales[_key(name)] = nn.Parameter(
            torch.full(ushape, math.log(self.init_scale), dtype=self._dtype, device=self._device)
        )

    def _materialise(self, x: Any) -> None:
        """Create the parameters of sites whose event shape needed an input to be known."""
        pending = [n for n in self._transforms if n not in self._sites]
        if not pending:
            return
        with torch.no_grad():
            values = self.model.run(x).values
        nbatch = len(batch_shape(self.model, x))
        for name in pending:
            self._create(name, tuple(values[name].shape[nbatch:]))

    def loc_scale(self, name: str) -> tuple[torch.Tensor, torch.Tensor]:
        """The unconstrained location and scale of site `name`."""
        if name not in self._transforms:
            raise InferenceError(f"the guide has no latent site '{name}'")
        key = _key(name)
        if key not in self.locs:
            raise InferenceError(f"site '{name}' has no parameters yet: call the guide once first")
        return self.locs[key], self.log_scales[key].exp()

    def median(self) -> dict[str, torch.Tensor]:
        """The guide's median of every site (the loc mapped onto the support)."""
        out = {}
        for name in self._sites:
            loc, _ = self.loc_scale(name)
            out[name] = self._site(name).constrain(loc.detach())[0]
        return out

    def sample_with_log_prob(self, x: Any) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
        """A reparameterised draw and its log-density, without a round trip through inv()."""
        self._materialise(x)
        bshape = batch_shape(self.model, x)
        values: dict[str, torch.Tensor] = {}
        log_q: torch.Tensor | None = None
        share = current_share()
        for name in self._transforms:
            loc, log_scale = self.locs[_key(name)], self.log_scales[_key(name)]
            site = self._site(name)
            factor, axis = 1.0, None
            if share is not None and share.plate is not None:  # a subsampled plate
                axis = share.local.get(name)
                factor = share.global_scale if axis is None else share.scale
            if axis is None:
                eps = _noise(bshape, loc, share)
            else:  # the rows drawn this step: noise for all, the parameters of mine
                assert share is not None and share.rows is not None
                drawn = list(loc.shape)
                drawn[axis] = share.drawn
                eps = torch.randn(drawn, dtype=loc.dtype, device=loc.device)
                eps = pick(eps, axis, share.mine)
                loc = pick(loc, axis, share.my_rows)
                log_scale = pick(log_scale, axis, share.my_rows)
            u = loc + log_scale.exp() * eps
            lq = -0.5 * eps.square() - log_scale - 0.5 * _LOG_2PI
            z = u
            if site.transform is not None:
                z = site.transform(u)
                lq = _subtract_log_det(lq, site, u, z, len(bshape))
            values[name] = z
            term = reduce_to_batch(lq, len(bshape))
            if factor != 1.0:
                term = term * factor
            log_q = term if log_q is None else log_q + term
        if log_q is None:
            log_q = torch.zeros(bshape or (1,), dtype=self._dtype, device=self._device)
        return values, log_q

    def rsample(self, x: Any) -> dict[str, torch.Tensor]:
        """One reparameterised draw of every latent site, shape `batch + event`."""
        return self.sample_with_log_prob(x)[0]

    def log_prob(self, x: Any, values: Mapping[str, torch.Tensor]) -> torch.Tensor:
        """log q(values), summed over sites and event axes: shape `(B,)`."""
        self._materialise(x)
        bshape = batch_shape(self.model, x)
        total: torch.Tensor | None = None
        for name in self._transforms:
            if name not in values:
                raise InferenceError(f"guide.log_prob: no value for latent site '{name}'")
            loc, scale = self.loc_scale(name)
            site = self._site(name)
            z = values[name]
            u = site.unconstrain(z)
            lq = torch.distributions.Normal(loc, scale).log_prob(u)
            if site.transform is not None:
                lq = _subtract_log_det(lq, site, u, z, len(bshape))
            term = reduce_to_batch(lq, len(bshape))
            total = term if total is None else total + term
        if total is None:
            total = torch.zeros(bshape or (1,), dtype=self._dtype, device=self._device)
        return total

    def forward(self, x: Any) -> dict[str, torch.Tensor]:
        return self.rsample(x)


def _noise(bshape: tuple[int, ...], like: torch.Tensor, share: Share | None) -> torch.Tensor:
    """Standard normal noise of shape `bshape + like.shape`; for a seed program's share of
    the batch, drawn for the whole batch and cut to this process's examples, so a run
    split over processes draws the numbers one process draws."""
    if share is None or share.plate is not None or not bshape:
        return torch.randn(bshape + tuple(like.shape), dtype=like.dtype, device=like.device)
    whole = (share.drawn, *bshape[1:], *like.shape)
    return pick(torch.randn(whole, dtype=like.dtype, device=like.device), 0, share.mine)


def _subtract_log_det(
    lq: torch.Tensor, site: LatentSite, u: torch.Tensor, z: torch.Tensor, nbatch: int
) -> torch.Tensor:
    """log q(z) = log N(u) - log |det dz/du|, aligned on the batch axes."""
    assert site.transform is not None
    ld = site.transform.log_abs_det_jacobian(u, z)
    return reduce_to_batch(lq, nbatch) - reduce_to_batch(ld, nbatch)
