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
    is a latent whose support another latent moves (`moving_support`)."""
    why = moving_support(model, name)
    if why is not None:
        raise InferenceError(why)
    return constraint_transform(name, model.site_constraint(name))


def moving_support(model: ProgramLike, name: str) -> str | None:
    """Why NUTS and SVI cannot move site `name`, or None: a bound of its support reads
    another latent (`BoundedFlat(0.0, beta_max)` or `Uniform(0.0, beta_max)` with `let
    beta_max = 1.0 - alpha1`). The map onto a site's support is made once, from the run
    before the fit, so such a site would stay within the bounds of that run's draw
    whatever the latent did after: a wrong posterior, not an error, if it ran. (Stan and
    NumPyro map each evaluation onto the bounds of that evaluation; the exports run it.)
    A bound a template reads from the caller's latents through its parameters is not
    seen here."""
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
            n = site.name
            improper = FAMILIES[site.family].improper
            flat = ", and `score` log(high - low), its Jacobian" if improper else ""
            return (
                f"site '{name}' (line {site.line}): the {bound} of its {site.family} reads "
                f"the latent '{moving[0]}', so its support moves with it; NUTS and SVI map "
                "a latent onto its support once, when the run starts, and would keep "
                f"'{name}' within the bounds of that start. Draw it on fixed bounds and map "
                f"it in a let (`sample {n}_unit <- Uniform(0.0, 1.0)`, `let {n} = low + "
                f"(high - low) * {n}_unit`{flat}), or export the program to Stan or NumPyro, "
                "which move it within each evaluation's bounds"
            )
    return None


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

    def constrain(self, u: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Value on the support and the total log |det J| of the map at `u`."""
        if self.transform is None:
            return u, u.new_zeros(())
        z = self.transform(u)
        return z, self.transform.log_abs_det_jacobian(u, z).sum()

    def unconstrain(self, z: torch.Tensor) -> torch.Tensor:
        return z if self.transform is None else self.transform.inv(z)


def make_sites(
    model: ProgramLike, values: Mapping[str, torch.Tensor], names: Iterable[str]
) -> list[LatentSite]:
    """LatentSite records for `names`, shapes taken from example `values`."""
    sites = []
    for name in names:
        transform = site_transform(model, name)
        if name not in values:
            raise InferenceError(f"the program produced no value for site '{name}'")
        sites.append(LatentSite(name, tuple(values[name].shape), transform))
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
            z, ld = site.constrain(u)
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
            parts.append(site.unconstrain(v.detach()).reshape(-1))
        if not parts:
            return torch.zeros(0)
        return torch.cat(parts)
