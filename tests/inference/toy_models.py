"""Small hand-written models that implement the runtime's program protocol.

They let the inference tests pin behaviour (closed-form posteriors, supports,
shapes) independently of the compiler; the tests on `.qvr` sources exercise
the real runtime.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import torch
from torch import distributions as D
from torch import nn
from torch.distributions import constraints as C

# Argument validation costs more than the toy models themselves.
_V = {"validate_args": False}
#: where a toy site of each support lives
_CONSTRAINTS = {
    "real": C.real,
    "positive": C.positive,
    "unit": C.unit_interval,
    "simplex": C.simplex,
    "finset": C.nonnegative_integer,
}


@dataclass
class RunResult:
    values: dict[str, torch.Tensor]
    log_probs: dict[str, torch.Tensor]
    output: Any


@dataclass(frozen=True)
class Site:
    name: str
    kind: str
    support: str
    event_shape: tuple[int, ...] | None
    event_dims: int  # how many trailing axes the distribution's log_prob leaves to sum


class ToyProgram(nn.Module):
    """Runs `self.sites` in order; `dist(name, x, values)` gives each site's distribution."""

    sites: tuple[Site, ...] = ()
    returns: str = ""

    @property
    def site_names(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.sites)

    def _site(self, name: str) -> Site:
        return next(s for s in self.sites if s.name == name)

    def site_kind(self, name: str) -> str:
        return self._site(name).kind

    def site_support(self, name: str) -> str:
        return self._site(name).support

    def site_constraint(self, name: str) -> C.Constraint:
        return _CONSTRAINTS[self._site(name).support]

    def site_event_shape(self, name: str) -> tuple[int, ...] | None:
        return self._site(name).event_shape

    def dist(
        self, name: str, x: torch.Tensor, values: Mapping[str, torch.Tensor]
    ) -> D.Distribution:
        raise NotImplementedError

    def run(self, x, observations=None, values=None) -> RunResult:
        given = {**(observations or {}), **(values or {})}
        vals: dict[str, torch.Tensor] = {}
        lps: dict[str, torch.Tensor] = {}
        for site in self.sites:
            d = self.dist(site.name, x, vals)
            if site.name in given:
                v = given[site.name]
            else:
                v = d.rsample() if d.has_rsample else d.sample()
            lp = d.log_prob(v)
            for _ in range(site.event_dims):
                lp = lp.sum(-1)
            vals[site.name], lps[site.name] = v, lp
        return RunResult(vals, lps, vals[self.returns])

    def log_joint(self, x, values) -> torch.Tensor:
        missing = set(self.site_names) - set(values)
        assert not missing, missing
        lps = self.run(x, values=values).log_probs
        return sum(lps.values())

    def rsample(self, x, observations=None):
        return self.run(x, observations).output


class NormalNormal(ToyProgram):
    """mu ~ Normal(prior_loc, prior_sd) per example; y_i ~ Normal(mu, sigma), i < n."""

    def __init__(self, n: int, sigma: float, prior_loc: float = 0.0, prior_sd: float = 1.0):
        super().__init__()
        self.n, self.sigma, self.prior_loc, self.prior_sd = n, sigma, prior_loc, prior_sd
        self.sites = (
            Site("mu", "sample", "real", (1,), 1),
            Site("y", "observe", "real", (n,), 1),
        )
        self.returns = "y"

    def dist(self, name, x, values):
        batch = x.shape[0]
        if name == "mu":
            return D.Normal(torch.full((batch, 1), self.prior_loc), self.prior_sd, **_V)
        return D.Normal(values["mu"].expand(batch, self.n), self.sigma, **_V)

    def posterior(self, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Closed-form posterior mean and variance of mu for each row of y."""
        precision = 1 / self.prior_sd**2 + self.n / self.sigma**2
        mean = (self.prior_loc / self.prior_sd**2 + y.sum(-1) / self.sigma**2) / precision
        return mean, torch.full_like(mean, 1 / precision)


class Constrained(ToyProgram):
    """Latents on every constrained support; with no data NUTS must recover the priors."""

    def __init__(self):
        super().__init__()
        self.sites = (
            Site("rate", "sample", "positive", (3,), 1),
            Site("p", "sample", "unit", (2,), 1),
            Site("w", "sample", "simplex", (4,), 0),
            Site("y", "observe", "real", (1,), 1),
        )
        self.returns = "y"

    def dist(self, name, x, values):
        b = x.shape[0]
        if name == "rate":
            return D.LogNormal(torch.zeros(b, 3), 0.5, **_V)
        if name == "p":
            return D.Beta(torch.full((b, 2), 2.0), torch.full((b, 2), 3.0), **_V)
        if name == "w":
            return D.Dirichlet(torch.tensor([1.0, 2.0, 3.0, 4.0]).expand(b, 4), **_V)
        loc = values["rate"].sum(-1, keepdim=True) + values["p"].sum(-1, keepdim=True)
        return D.Normal(loc + values["w"][:, :1], 1.0, **_V)


class DiscreteLatent(ToyProgram):
    def __init__(self):
        super().__init__()
        self.sites = (Site("k", "sample", "finset", (), 0), Site("y", "observe", "real", (1,), 1))
        self.returns = "y"

    def dist(self, name, x, values):
        if name == "k":
            return D.Categorical(logits=torch.zeros(x.shape[0], 3), **_V)
        return D.Normal(values["k"].float().unsqueeze(-1), 1.0, **_V)


class SequenceLatent(ToyProgram):
    """z has one 2-vector per position: its event shape depends on the input's length."""

    def __init__(self):
        super().__init__()
        self.sites = (Site("z", "sample", "real", None, 2), Site("y", "observe", "real", (1,), 1))
        self.returns = "y"

    def dist(self, name, x, values):
        if name == "z":
            return D.Normal(torch.zeros(x.shape[0], x.shape[1], 2), 1.0, **_V)
        return D.Normal(values["z"].sum((-1, -2)).unsqueeze(-1), 1.0, **_V)


class Regression(ToyProgram):
    """A two-layer model with learnable weights: z ~ N(A x, 1), y ~ N(B z + c, noise)."""

    def __init__(self, d_in: int = 3, d_z: int = 2, noise: float = 0.5):
        super().__init__()
        self.enc = nn.Linear(d_in, d_z)
        self.dec = nn.Linear(d_z, 1)
        self.noise = noise
        self.sites = (Site("z", "sample", "real", (d_z,), 1), Site("y", "observe", "real", (1,), 1))
        self.returns = "y"

    def dist(self, name, x, values):
        if name == "z":
            return D.Normal(self.enc(x), 1.0, **_V)
        return D.Normal(self.dec(values["z"]), self.noise, **_V)


class ScaledNormal(ToyProgram):
    """z ~ Normal(0, diag(scales)) with no data: a target whose scales differ wildly."""

    def __init__(self, scales: list[float]):
        super().__init__()
        self.scales = torch.tensor(scales)
        self.sites = (Site("z", "sample", "real", (len(scales),), 1),)
        self.returns = "z"

    def dist(self, name, x, values):
        return D.Normal(torch.zeros(x.shape[0], len(self.scales)), self.scales, **_V)


class LinearObservation(ToyProgram):
    """No latents: y ~ N(W x + b, noise), to check that SVI recovers W and b."""

    def __init__(self, d_in: int = 3, noise: float = 0.1):
        super().__init__()
        self.lin = nn.Linear(d_in, 1)
        self.noise = noise
        self.sites = (Site("y", "observe", "real", (1,), 1),)
        self.returns = "y"

    def dist(self, name, x, values):
        return D.Normal(self.lin(x), self.noise, **_V)


def finite_difference_grad(
    f: Callable[[torch.Tensor], torch.Tensor], z: torch.Tensor, eps: float = 1e-4
):
    """Central differences in float64, for checking autograd through a model."""
    z = z.detach().to(torch.float64)
    g = torch.zeros_like(z)
    for i in range(z.numel()):
        e = torch.zeros_like(z)
        e[i] = eps
        g[i] = (f(z + e) - f(z - e)) / (2 * eps)
    return g
