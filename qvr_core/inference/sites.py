"""Latent sites as inference sees them: shape, support and the map from R^n.

The guide, NUTS and the lifted program all work in *unconstrained* space: a
site with support `positive`, `unit` or `simplex` is reached through
`torch.distributions.biject_to`, and the log-det Jacobian of that map is part
of every density computed there. This module is the one place that knows it.

Shapes: a site's value is `batch_shape + event_shape`. For a compiled program
the batch shape is `(B,)`, B the first axis of the input; a program-like object
may override it with a `batch_shape(x)` method (the lifted program of
`bayesian_lift_parameters` has no batch: its latents are single tensors).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import torch
from torch.distributions import constraints
from torch.distributions.transforms import Transform

from qvr_core.builtins import FAMILIES
from qvr_core.inference.errors import InferenceError
from qvr_core.plan.runnable import bound_reads
from qvr_core.runtime.distributions import bijection
from qvr_core.runtime.model import ModelProgram
from qvr_core.runtime.model.enumerate import SummedModel
from qvr_core.runtime.padding import unpad
from qvr_core.runtime.tensors import unconstrained_shape


class ProgramLike(Protocol):
    """What inference needs from a model (see docs/architecture.md, "Runtime protocol"):
    a compiled seed program (`runtime.program.ProgramModule`), a model program
    (`runtime.model.ModelProgram`) or a lifted one (`lift.LiftedProgram`); its
    `parameters()` (an `nn.Module`'s) are what SVI fits besides the guide."""

    @property
    def site_names(self) -> tuple[str, ...]: ...

    def parameters(self, recurse: bool = True) -> Iterator[torch.nn.Parameter]: ...
    def site_kind(self, name: str) -> str: ...
    def site_support(self, name: str) -> str: ...
    def site_constraint(self, name: str) -> constraints.Constraint: ...
    def site_event_shape(self, name: str) -> tuple[int, ...] | None: ...
    def run(self, x: Any, observations: Any = None, values: Any = None) -> Any: ...
    def log_joint(self, x: Any, values: Mapping[str, Any]) -> torch.Tensor: ...


def site_transform(model: ProgramLike, name: str) -> Transform | None:
    """The bijection R^n -> the site's support, the constraint object the model reports
    (`site_constraint`); discrete latents are refused (`constraint_transform`), and so
    is a latent whose support another latent moves (`moving_support`): a guide's map is
    fixed. NUTS moves such a site within each evaluation's bounds (`make_sites`)."""
    why = moving_support(model, name)
    if why is not None:
        raise InferenceError(why)
    return constraint_transform(name, model.site_constraint(name))


def moving_bounds(model: ProgramLike, name: str) -> tuple[ModelProgram, str, list[str]] | None:
    """The program, the bound and the latents it reads when a bound of site `name`'s
    support reads another latent (`BoundedFlat(0.0, beta_max)` or `Uniform(0.0,
    beta_max)` with `let beta_max = 1.0 - alpha1`); None when its support is fixed."""
    program = model.program if isinstance(model, SummedModel) else model
    if not isinstance(program, ModelProgram):
        return None
    site = program.site(name)
    prefix = name[: len(name) - len(site.name)]  # a template's sites are `v$z`
    owner = next(
        (
            t.model
            for t in (program.top, *program.templates.values())
            if any(s is site for s in t.model.sites)
        ),
        None,
    )
    if owner is None or site.family is None:
        return None
    latents = {n for n in model.site_names if n != name and model.site_kind(n) == "sample"}
    for bound, reads in bound_reads(owner, site).items():
        moving = sorted(prefix + n for n in reads if prefix + n in latents)
        if moving:
            return program, bound, moving
    return None


def moving_support(model: ProgramLike, name: str) -> str | None:
    """Why a guide (SVI) cannot move site `name`, or None: a bound of its support reads
    another latent, and a guide maps a latent onto its support once, when the run starts,
    so the site would stay within the bounds of that start whatever the latent did after:
    a wrong posterior, not an error, if it ran. NUTS maps it within each evaluation's
    bounds (`MovingInterval`). A bound a template reads from the caller's latents through
    its parameters is not seen here."""
    found = moving_bounds(model, name)
    if found is None:
        return None
    program, bound, moving = found
    site = program.site(name)
    n = site.name
    improper = site.family is not None and FAMILIES[site.family].improper
    flat = ", and `score` log(high - low), its Jacobian" if improper else ""
    return (
        f"site '{name}' (line {site.line}): the {bound} of its {site.family} reads the latent "
        f"'{moving[0]}', so its support moves with it; SVI's guides map a latent onto its "
        f"support once, when the run starts, and would keep '{name}' within the bounds of "
        f"that start. Fit it with NUTS (--method nuts), which maps it within each "
        f"evaluation's bounds, or draw it on fixed bounds and map it in a let (`sample "
        f"{n}_unit <- Uniform(0.0, 1.0)`, `let {n} = low + (high - low) * {n}_unit`{flat})"
    )


def _moves_here(found: tuple[ModelProgram, str, list[str]], name: str, earlier: set[str]) -> bool:
    """Whether NUTS maps site `name` within each evaluation's bounds: a site of the
    program itself (not of a template it calls), one number, its bounds reading latents
    that come before it."""
    program, _, moving = found
    site = program.site(name)
    own = any(s is site for s in program.model.sites)
    return own and not site.plates and set(moving) <= earlier


@dataclass(frozen=True)
class MovingInterval:
    """The map R -> (low, high) of a latent whose bounds other latents move: low + (high
    - low) * sigmoid(u), the bounds evaluated at each point from the latents before it
    (`ModelProgram.site_bounds`), as Stan maps a parameter declared `<lower=a, upper=b>`
    with a and b earlier parameters. Its log |det J| is log(high - low) + log
    sigmoid'(u); the bounds' own dependence on the other latents adds nothing, as the
    map of one coordinate given the ones before it is triangular."""

    program: ModelProgram
    name: str
    x: Any

    def bounds(self, values: Mapping[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        return self.program.site_bounds(self.name, self.x, values)

    def constrain(
        self, u: torch.Tensor, values: Mapping[str, torch.Tensor]
    ) -> tuple[torch.Tensor, torch.Tensor]:
        low, high = self.bounds(values)
        width = high - low
        z = low + width * torch.sigmoid(u)
        log_det = torch.log(width) + torch.nn.functional.logsigmoid(u)
        log_det = log_det + torch.nn.functional.logsigmoid(-u)
        return z, log_det.sum()

    def unconstrain(self, z: torch.Tensor, values: Mapping[str, torch.Tensor]) -> torch.Tensor:
        low, high = self.bounds(values)
        return torch.logit((z - low) / (high - low))


def constraint_transform(site: str, c: constraints.Constraint) -> Transform | None:
    """The bijection R^n -> `c` (None where `c` is all of R^n). A discrete site without
    data is an error: gradient-based inference cannot move it."""
    if c.is_discrete:
        raise InferenceError(
            f"site '{site}' is discrete (a FinSet value) and has no data: gradient-based "
            f"inference cannot treat it as a latent. Observe it (pass '{site}' in the "
            "observations / observed_names) or sum it out: a model program's discrete "
            "sites with finitely many values are (`inference.discrete.summed_out`)"
        )
    base = c.base_constraint if isinstance(c, constraints.independent) else c
    if isinstance(base, constraints._Real):
        return None
    return bijection(site, c)


def batch_shape(model: Any, x: Any) -> tuple[int, ...]:
    """The leading axes every site value carries for input `x`."""
    custom = getattr(model, "batch_shape", None)
    if callable(custom):
        return tuple(custom(x))
    x = unpad(x)[0]  # a padded batch: its values carry the batch
    if isinstance(x, torch.Tensor) and x.dim() >= 1:
        return (int(x.shape[0]),)
    return ()


def is_deterministic(model: Any, name: str) -> bool:
    """True for a site whose morphism is a Dirac kernel (an embedding, `Deterministic`):
    its value follows from the others, so it is computed, never inferred."""
    steps = getattr(model, "steps", None)
    if steps is None:
        return False
    try:
        module = steps[name]
    except (KeyError, TypeError, IndexError):
        return False
    return getattr(module, "stochastic", True) is False


def latent_names(model: ProgramLike, observed: Iterable[str]) -> list[str]:
    """Stochastic sites without data, in step order."""
    observed = set(observed)
    return [
        name
        for name in model.site_names
        if name not in observed and not is_deterministic(model, name)
    ]


def check_site_names(model: ProgramLike, names: Iterable[str], what: str) -> None:
    """Refuse names that are not sites of `model`, listing the ones that are."""
    unknown = sorted(set(names) - set(model.site_names))
    if unknown:
        raise InferenceError(
            f"{what} {', '.join(repr(n) for n in unknown)} "
            f"{'is not a site' if len(unknown) == 1 else 'are not sites'} of the program; "
            f"its sites are {', '.join(model.site_names) or '(none)'}"
        )


def reduce_to_batch(t: torch.Tensor, batch_ndim: int) -> torch.Tensor:
    """Sum every axis after the first `batch_ndim`; a scalar result becomes `(1,)`."""
    if batch_ndim == 0:
        return t.sum().reshape(1)
    return t.reshape(*t.shape[:batch_ndim], -1).sum(-1)


@dataclass(frozen=True)
class LatentSite:
    """One latent site with its full value shape and its bijection from R^n."""

    name: str
    shape: tuple[int, ...]
    transform: Transform | None
    moving: MovingInterval | None = None  # bounds read from the latents before it

    @property
    def unconstrained_shape(self) -> tuple[int, ...]:
        if self.transform is None:
            return self.shape
        return unconstrained_shape(self.transform, self.shape)

    @property
    def numel(self) -> int:
        n = 1
        for d in self.unconstrained_shape:
            n *= d
        return n

    def constrain(
        self, u: torch.Tensor, before: Mapping[str, torch.Tensor] | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Value on the support and the total log |det J| of the map at `u` (`before`: the
        values of the latents before it, which a moving site's bounds read)."""
        if self.moving is not None:
            return self.moving.constrain(u, before or {})
        if self.transform is None:
            return u, u.new_zeros(())
        z = self.transform(u)
        return z, self.transform.log_abs_det_jacobian(u, z).sum()

    def unconstrain(
        self, z: torch.Tensor, values: Mapping[str, torch.Tensor] | None = None
    ) -> torch.Tensor:
        if self.moving is not None:
            return self.moving.unconstrain(z, values or {})
        return z if self.transform is None else self.transform.inv(z)


def make_sites(
    model: ProgramLike,
    values: Mapping[str, torch.Tensor],
    names: Iterable[str],
    x: Any = None,
) -> list[LatentSite]:
    """LatentSite records for `names`, shapes taken from example `values`. A site whose
    bounds read latents before it among `names` moves within each evaluation's bounds,
    read from the data `x` and those latents (NUTS's flat layout); any other moving site
    is refused (`site_transform`)."""
    sites: list[LatentSite] = []
    for name in names:
        if name not in values:
            raise InferenceError(f"the program produced no value for site '{name}'")
        found = moving_bounds(model, name)
        earlier = {s.name for s in sites}
        if found is not None and _moves_here(found, name, earlier):
            moving = MovingInterval(found[0], name, x)
            sites.append(LatentSite(name, tuple(values[name].shape), None, moving))
            continue
        sites.append(LatentSite(name, tuple(values[name].shape), site_transform(model, name)))
    return sites


class FlatLayout:
    """Packs the unconstrained values of several sites into one flat vector (for NUTS)."""

    def __init__(self, sites: list[LatentSite]) -> None:
        self.sites = sites
        self.offsets: list[tuple[int, int]] = []
        start = 0
        for site in sites:
            self.offsets.append((start, start + site.numel))
            start += site.numel
        self.size = start

    def split(self, u: torch.Tensor) -> list[torch.Tensor]:
        """Views of the flat `u`, one per site in its unconstrained shape."""
        return [
            u[a:b].view(site.unconstrained_shape)
            for site, (a, b) in zip(self.sites, self.offsets, strict=True)
        ]

    def constrain(self, parts: list[torch.Tensor]) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
        """Constrained values per site and the summed log |det J| of the maps."""
        values: dict[str, torch.Tensor] = {}
        log_det: torch.Tensor | None = None
        for site, u in zip(self.sites, parts, strict=True):
            z, ld = site.constrain(u, values)
            values[site.name] = z
            log_det = ld if log_det is None else log_det + ld
        return values, log_det if log_det is not None else torch.zeros(())

    def unpack(self, u: torch.Tensor) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
        """Constrained values per site and the summed log |det J| at the flat `u`."""
        return self.constrain(self.split(u))

    def unpack_many(self, us: torch.Tensor) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
        """`unpack` of each row of `us` (draws x D): values with a leading draw axis and each
        row's log |det J|. One torch call per site for all rows instead of one per row (a
        run's 4,000 draws took half a second one by one); a site whose map does not keep a
        leading axis is caught by comparing the first and last rows with `unpack`'s, and
        then every row is unpacked alone."""
        n = int(us.shape[0])
        if n == 0:
            return {s.name: torch.zeros(0, *s.shape) for s in self.sites}, torch.zeros(0)
        try:
            values, log_det = self._constrain_rows(us)
            for row in {0, n - 1}:
                one, one_det = self.unpack(us[row])
                same = all(
                    values[name][row].shape == v.shape
                    and torch.allclose(values[name][row], v, rtol=1e-12, atol=0.0, equal_nan=True)
                    for name, v in one.items()
                )
                if not same or not torch.isclose(log_det[row], one_det.to(log_det.dtype)):
                    raise ValueError(f"row {row} differs")
            return values, log_det
        except (RuntimeError, ValueError, IndexError, NotImplementedError):
            rows = [self.unpack(u) for u in us]
            stacked = {s.name: torch.stack([r[0][s.name] for r in rows]) for s in self.sites}
            return stacked, torch.stack([r[1].reshape(()) for r in rows])

    def _constrain_rows(self, us: torch.Tensor) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
        n = int(us.shape[0])
        values: dict[str, torch.Tensor] = {}
        log_det = us.new_zeros(n)
        for site, (a, b) in zip(self.sites, self.offsets, strict=True):
            u = us[:, a:b].reshape(n, *site.unconstrained_shape)
            if site.moving is not None:  # bounds per row: `unpack_many` goes row by row
                raise ValueError(f"site '{site.name}' moves with the rows' own bounds")
            if site.transform is None:
                values[site.name] = u
                continue
            z = site.transform(u)
            values[site.name] = z
            log_det = log_det + site.transform.log_abs_det_jacobian(u, z).reshape(n, -1).sum(1)
        return values, log_det

    def pack(self, values: Mapping[str, torch.Tensor]) -> torch.Tensor:
        parts = []
        for site in self.sites:
            v = values[site.name]
            if tuple(v.shape) != site.shape:
                raise InferenceError(
                    f"site '{site.name}': expected a value of shape {site.shape}, "
                    f"got {tuple(v.shape)}"
                )
            parts.append(site.unconstrain(v.detach(), values).reshape(-1))
        if not parts:
            return torch.zeros(0)
        return torch.cat(parts)
