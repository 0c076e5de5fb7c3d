"""A torch distribution for every family of the registry, keyed by the registry's names.

`Factories.<Family>(args, space)` builds the distribution from its argument
tensors by parameter name (`space` is the size of the object a draw lands in,
for the families whose draw size is the object's, like `LKJCholesky`); code
reaches it by the registry entry's name, `factory(family.name)`, so no table
here repeats the registry's names.
Where torch has the family, it is used as is; where it does not, the family
is a small composition of torch distributions and transforms. Four score with
their closed form: the Beta-Binomial (which torch lacks in any form), and the
Logistic, the Kumaraswamy and the Weibull, whose compositions score -inf where the
density is not 0; the horseshoe scores by quivers' quadrature (`horseshoe.py`). The
Poisson draws a rate past 2^52 by its normal approximation (torch's sampler
overflows). `torch_constraint` maps the registry's torch-free constraints to torch's.

Numbers at the edge of a float32: `make_distribution` takes an argument that
rounded onto the edge of what it may take (a scale that underflowed to 0, a
probability that rounded to 1) as the nearest float inside, `into_support` does
the same for a draw, and `within_floats` counts a draw that overflowed to inf as
outside its support.

Adding a family: one entry in `qvr_core.builtins.families` and its factory
here, a method of `Factories` named after it; `tests/builtins/test_agreement.py`
checks that the two agree.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, ClassVar

import torch
from torch import distributions as D
from torch.distributions import constraints as C
from torch.distributions import transforms as T

from qvr_core.builtins import FAMILIES, Family
from qvr_core.builtins.constraints import Constraint
from qvr_core.runtime.errors import QvrRuntimeError
from qvr_core.runtime.horseshoe import Horseshoe
from qvr_core.runtime.markov import MarkovChain
from qvr_core.runtime.numbers import number
from qvr_core.runtime.ordered import ordered_vector, positive_ordered_vector
from qvr_core.runtime.rebuilt import Rebuilt
from qvr_core.runtime.tensors import broadcast_shape, cholesky_or_nan
from qvr_core.runtime.wishart import POSITIVE_DEFINITE, RecordableWishart

Args = Mapping[str, torch.Tensor]
Factory = Callable[[Args, "int | None"], D.Distribution]


# ---------------------------------------------------------------- compositions


class HalfStudentT(Rebuilt, D.TransformedDistribution):
    """|x| for x ~ StudentT(df, 0, scale), as torch builds HalfCauchy from Cauchy."""

    PARAMS = ("df", "scale")

    support = C.nonnegative
    has_rsample = True

    def __init__(self, df: torch.Tensor, scale: torch.Tensor, validate_args: bool | None = None):
        df, scale = torch.broadcast_tensors(df, scale)
        self.df, self.scale = df, scale
        base = D.StudentT(df, torch.zeros_like(scale), scale, validate_args=False)
        super().__init__(base, T.AbsTransform(), validate_args=validate_args)

    def log_prob(self, value: torch.Tensor) -> torch.Tensor:
        lp = self.base_dist.log_prob(value) + math.log(2)
        return torch.where(value >= 0, lp, -math.inf)

    @property
    def mode(self) -> torch.Tensor:
        return torch.zeros_like(self.scale)


class Logistic(Rebuilt, D.TransformedDistribution):
    """loc + scale * logit(u) for u ~ Uniform(0, 1)."""

    PARAMS = ("loc", "scale")

    support = C.real
    has_rsample = True

    def __init__(self, loc: torch.Tensor, scale: torch.Tensor, validate_args: bool | None = None):
        loc, scale = torch.broadcast_tensors(loc, scale)
        self.loc, self.scale = loc, scale
        finfo = torch.finfo(loc.dtype)
        base = D.Uniform(
            torch.full_like(loc, finfo.tiny),
            torch.full_like(loc, 1 - finfo.eps),
            validate_args=False,
        )
        transforms = [T.SigmoidTransform().inv, T.AffineTransform(loc, scale)]
        super().__init__(base, transforms, validate_args=validate_args)

    def log_prob(self, value: torch.Tensor) -> torch.Tensor:
        """The closed form -z - 2 softplus(-z) - log scale, z = (value - loc) / scale: the
        composition's score is -inf past about 17 scales out in float32 (the sigmoid rounds
        to 1, outside the base Uniform), where the density is small but not 0."""
        if self._validate_args:
            self._validate_sample(value)
        z = (value - self.loc) / self.scale
        return -z - 2 * torch.nn.functional.softplus(-z) - torch.log(self.scale)

    @property
    def mean(self) -> torch.Tensor:
        return self.loc

    @property
    def mode(self) -> torch.Tensor:
        return self.loc


class Weibull(D.Weibull):
    """torch's, scored in closed form, log k - log s + (k - 1) log(x / s) - (x / s)^k with
    (x / s)^k as exp(k log(x / s)): torch's composition raises x / s to the power k and
    takes the log of that, which underflows to 0 (a score of -inf, a gradient of NaN) for
    a small x under a large k, as a survival model's synthetic times were."""

    def log_prob(self, value: torch.Tensor) -> torch.Tensor:
        if self._validate_args:
            self._validate_sample(value)
        k = self.concentration
        log_z = torch.log(value) - torch.log(self.scale)
        return torch.log(k) - torch.log(self.scale) + (k - 1) * log_z - torch.exp(k * log_z)


class Poisson(D.Poisson):
    """torch's, drawing a rate past `LARGE_RATE` as round(rate + sqrt(rate) * N(0, 1))
    (its error is of order rate^-1/2, below float64's resolution there): torch's sampler
    returns -2^63 for a rate of 2^63 or more, which a prior with `exp` of a wide linear
    predictor reaches. A rate of 0 (the point mass at 0: a zero-inflated rate `z * rate`
    at z = 0) is scored with a finite gradient: torch's `xlogy` gives NaN there."""

    LARGE_RATE = 2.0**52

    def log_prob(self, value: torch.Tensor) -> torch.Tensor:
        if self._validate_args:
            self._validate_sample(value)
        rate, value = torch.broadcast_tensors(self.rate, value)
        positive = rate > 0
        safe = torch.where(positive, rate, torch.ones_like(rate))
        at_zero = torch.where(value == 0, 0.0, -math.inf).to(rate.dtype)
        mass = torch.where(positive, value * torch.log(safe), at_zero)
        return mass - rate - torch.lgamma(value + 1)

    def sample(self, sample_shape: torch.Size | list[int] | tuple[int, ...] = ()) -> torch.Tensor:
        shape = self._extended_shape(torch.Size(sample_shape))
        with torch.no_grad():
            rate = self.rate.expand(shape)
            large = rate > self.LARGE_RATE
            if not bool(large.any()):
                return torch.poisson(rate)
            near = rate + rate.sqrt() * torch.randn_like(rate)
            return torch.where(large, near.round(), torch.poisson(rate.clamp(max=self.LARGE_RATE)))


class Kumaraswamy(D.Kumaraswamy):
    """torch's, scored in closed form, log a + log b + (a - 1) log x + (b - 1) log(1 - x^a)
    with 1 - x^a as -expm1(a log x): torch's composition rounds x^a to 0 or 1 near the
    ends of (0, 1) in float32 and scores -inf there, so a fit to data near 0 or 1 started
    with no finite log density."""

    def log_prob(self, value: torch.Tensor) -> torch.Tensor:
        if self._validate_args:
            self._validate_sample(value)
        a, b = self.concentration1, self.concentration0
        log_x = torch.log(value)
        return (
            torch.log(a)
            + torch.log(b)
            + (a - 1) * log_x
            + (b - 1) * torch.log(-torch.expm1(a * log_x))
        )


class _StandardNormalQuantile(T.Transform):
    """u in (0, 1) -> the standard Normal's quantile; torch's own cdf, icdf and density."""

    domain = C.unit_interval
    codomain = C.real
    bijective = True
    sign = 1
    _std = D.Normal(0.0, 1.0, validate_args=False)

    def _call(self, u: torch.Tensor) -> torch.Tensor:
        return self._std.icdf(u)

    def _inverse(self, z: torch.Tensor) -> torch.Tensor:
        return self._std.cdf(z)

    def log_abs_det_jacobian(self, u: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        return -self._std.log_prob(z)


class TruncatedNormal(Rebuilt, D.TransformedDistribution):
    """Normal(mu, sigma) restricted to [low, high]: a uniform draw between the bounds'
    Normal CDF values pushed through the Normal quantile (inverse-CDF sampling)."""

    PARAMS = ("mu", "sigma", "low", "high")

    has_rsample = True

    def __init__(
        self,
        mu: torch.Tensor,
        sigma: torch.Tensor,
        low: torch.Tensor,
        high: torch.Tensor,
        validate_args: bool | None = None,
    ):
        mu, sigma, low, high = torch.broadcast_tensors(mu, sigma, low, high)
        self.mu, self.sigma, self.low, self.high = mu, sigma, low, high
        std = D.Normal(torch.zeros_like(mu), torch.ones_like(mu), validate_args=False)
        a, b = std.cdf((low - mu) / sigma), std.cdf((high - mu) / sigma)
        base = D.Uniform(a, b, validate_args=False)
        transforms = [_StandardNormalQuantile(), T.AffineTransform(mu, sigma)]
        super().__init__(base, transforms, validate_args=validate_args)

    @C.dependent_property(is_discrete=False, event_dim=0)
    def support(self) -> C.Constraint:
        return C.interval(self.low, self.high)


class BetaBinomial(Rebuilt, D.Distribution):
    """Binomial(total_count, p) with p ~ Beta(concentration1, concentration0), p summed out.

    torch has no Beta-Binomial (nor a Dirichlet-multinomial), so this scores with its
    closed form, log C(n, k) + log B(k + a, n - k + b) - log B(a, b), and samples the
    two stages with torch's Beta and Binomial."""

    PARAMS = ("total_count", "concentration1", "concentration0")

    arg_constraints: ClassVar[dict[str, C.Constraint]] = {
        "total_count": C.nonnegative_integer,
        "concentration1": C.positive,
        "concentration0": C.positive,
    }
    has_rsample = False

    def __init__(
        self,
        total_count: torch.Tensor,
        concentration1: torch.Tensor,
        concentration0: torch.Tensor,
        validate_args: bool | None = None,
    ):
        n, a, b = torch.broadcast_tensors(total_count, concentration1, concentration0)
        self.total_count, self.concentration1, self.concentration0 = n, a, b
        super().__init__(n.shape, validate_args=validate_args)

    @C.dependent_property(is_discrete=True, event_dim=0)
    def support(self) -> C.Constraint:
        return C.integer_interval(0, self.total_count)

    @property
    def mean(self) -> torch.Tensor:
        a, b = self.concentration1, self.concentration0
        return self.total_count * a / (a + b)

    def sample(self, sample_shape: torch.Size | list[int] | tuple[int, ...] = ()) -> torch.Tensor:
        with torch.no_grad():
            p = D.Beta(self.concentration1, self.concentration0).sample(sample_shape)
            return D.Binomial(self.total_count.expand_as(p), probs=p).sample()

    def log_prob(self, value: torch.Tensor) -> torch.Tensor:
        n, a, b = self.total_count, self.concentration1, self.concentration0

        def lbeta(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            return torch.lgamma(x) + torch.lgamma(y) - torch.lgamma(x + y)

        choose = torch.lgamma(n + 1) - torch.lgamma(value + 1) - torch.lgamma(n - value + 1)
        lp = choose + lbeta(value + a, n - value + b) - lbeta(a, b)
        inside = (value >= 0) & (value <= n) & (value == value.floor())
        return torch.where(inside, lp, -math.inf)


class _ClosedUnit(C.Constraint):
    """[0, 1] with its ends as values a draw may take (atoms, not roundings): not one of
    torch's intervals, so `into_support` keeps a draw of exactly 0 or 1 as it is."""

    def check(self, value: torch.Tensor) -> torch.Tensor:
        return (value >= 0) & (value <= 1)


class ZeroOneInflatedBeta(Rebuilt, D.Distribution):
    """A proportion with atoms at 0 and 1 (brms' zero-one-inflated beta): mass zoi (1 - coi)
    at 0, zoi coi at 1, and (1 - zoi) Beta(mu phi, (1 - mu) phi) between, as quivers'
    reference family writes it. Its log density at 0 and 1 is of those masses, between
    them of the Beta part's density, and -inf outside [0, 1]."""

    PARAMS = ("mu", "phi", "zoi", "coi")

    arg_constraints: ClassVar[dict[str, C.Constraint]] = {
        "mu": C.unit_interval,
        "phi": C.positive,
        "zoi": C.unit_interval,
        "coi": C.unit_interval,
    }
    support = _ClosedUnit()
    has_rsample = False

    def __init__(
        self,
        mu: torch.Tensor,
        phi: torch.Tensor,
        zoi: torch.Tensor,
        coi: torch.Tensor,
        validate_args: bool | None = None,
    ):
        self.mu, self.phi, self.zoi, self.coi = torch.broadcast_tensors(mu, phi, zoi, coi)
        super().__init__(self.mu.shape, validate_args=validate_args)

    def _beta(self) -> D.Beta:
        return D.Beta(self.mu * self.phi, (1 - self.mu) * self.phi, validate_args=False)

    def log_prob(self, value: torch.Tensor) -> torch.Tensor:
        inside = (value > 0) & (value < 1)
        middle = torch.log1p(-self.zoi) + self._beta().log_prob(
            torch.where(inside, value, torch.full_like(value, 0.5))
        )
        zero = torch.log(self.zoi) + torch.log1p(-self.coi)
        one = torch.log(self.zoi) + torch.log(self.coi)
        lp = torch.where(value == 0, zero, torch.where(value == 1, one, middle))
        return torch.where(inside | (value == 0) | (value == 1), lp, -math.inf)

    def sample(self, sample_shape: torch.Size | list[int] | tuple[int, ...] = ()) -> torch.Tensor:
        shape = self._extended_shape(torch.Size(sample_shape))
        with torch.no_grad():
            middle = self._beta().sample(torch.Size(sample_shape))
            ends = torch.rand(shape, dtype=middle.dtype) < self.zoi.expand(shape)
            one = torch.rand(shape, dtype=middle.dtype) < self.coi.expand(shape)
            return torch.where(ends, one.to(middle.dtype), middle)


class HurdlePoisson(Rebuilt, D.Distribution):
    """0 with probability `zero_prob`, else a zero-truncated Poisson(rate).

    torch has no truncation for discrete families: the density is torch's Poisson
    log-density renormalised over k >= 1, and draws of the positive part are torch
    Poisson draws redrawn while 0 (few, unless the rate is tiny)."""

    PARAMS = ("zero_prob", "rate")

    arg_constraints: ClassVar[dict[str, C.Constraint]] = {
        "zero_prob": C.unit_interval,
        "rate": C.positive,
    }
    support = C.nonnegative_integer
    has_rsample = False

    def __init__(
        self, zero_prob: torch.Tensor, rate: torch.Tensor, validate_args: bool | None = None
    ):
        self.zero_prob, self.rate = torch.broadcast_tensors(zero_prob, rate)
        super().__init__(self.rate.shape, validate_args=validate_args)

    def log_prob(self, value: torch.Tensor) -> torch.Tensor:
        poisson = D.Poisson(self.rate, validate_args=False)
        positive = (
            torch.log1p(-self.zero_prob)
            + poisson.log_prob(value.clamp(min=1))
            - torch.log(-torch.expm1(-self.rate))
        )
        zero = torch.log(self.zero_prob).expand_as(positive)
        lp = torch.where(value == 0, zero, positive)
        return torch.where((value >= 0) & (value == value.floor()), lp, -math.inf)

    def sample(self, sample_shape: torch.Size | list[int] | tuple[int, ...] = ()) -> torch.Tensor:
        shape = self._extended_shape(torch.Size(sample_shape))
        with torch.no_grad():
            rate = self.rate.expand(shape)
            draw = torch.poisson(rate)
            for _ in range(1000):
                redo = draw == 0
                if not bool(redo.any()):
                    break
                draw = torch.where(redo, torch.poisson(rate), draw)
            draw = draw.clamp(min=1)  # a rate so small that 0 kept coming: its mode above 0
            zero = torch.rand(shape) < self.zero_prob.expand(shape)
            return torch.where(zero, torch.zeros_like(draw), draw)


class VonMises(D.VonMises):
    """torch's von Mises, whose rejection sampler never accepts once the concentration is
    so large that its proposal degenerates in floating point (it loops forever at 1e20).
    Past `NORMAL_PAST` a draw is the normal approximation N(loc, 1/concentration) wrapped
    to [-pi, pi): its error is of order 1/concentration, below float32's resolution.
    It never accepts either once the concentration is so small that 1/concentration
    overflows (a float64 subnormal): below `UNIFORM_BELOW` a draw is uniform on the
    circle, whose density differs from the von Mises' by a factor within 1 +- 2e-9."""

    NORMAL_PAST = 1e6
    UNIFORM_BELOW = 1e-9

    @torch.no_grad()
    def sample(self, sample_shape: torch.Size | list[int] | tuple[int, ...] = ()) -> torch.Tensor:
        large = self.concentration > self.NORMAL_PAST
        small = self.concentration < self.UNIFORM_BELOW
        if not bool(large.any() or small.any()):
            return super().sample(torch.Size(sample_shape))
        shape = self._extended_shape(torch.Size(sample_shape))
        odd = large | small
        bounded = torch.where(odd, torch.ones_like(self.concentration), self.concentration)
        exact = D.VonMises(self.loc, bounded, validate_args=False).sample(torch.Size(sample_shape))
        noise = torch.randn(shape, dtype=self.loc.dtype, device=self.loc.device)
        normal = self.loc + noise * self.concentration.clamp(min=1.0).rsqrt()
        wrapped = torch.remainder(normal + math.pi, 2 * math.pi) - math.pi
        uniform = (
            torch.rand(shape, dtype=self.loc.dtype, device=self.loc.device) * 2 - 1
        ) * math.pi
        return torch.where(
            large.expand(shape), wrapped, torch.where(small.expand(shape), uniform, exact)
        )


class _ImproperFlat(Rebuilt, D.Distribution):
    """An improper flat density on `support`: log density 0 there (-inf off it), a Stan
    parameter with no prior statement. NUTS and SVI move it through `biject_to(support)`
    with the map's log-det Jacobian, as Stan does (a positive one in log space).

    It has no draws. `sample` gives Stan's starting point instead, uniform on (-2, 2)
    in unconstrained space mapped onto the support, so that what needs one value of the
    site (a chain's start, a guide's shapes, a run's shape checks) has one; what would
    read it as a draw of the prior (the prior predictive, synthetic data) is refused
    before it runs (`qvr_core.plan.runnable.improper_refusal`). `zero` is a tensor of zeros
    of the batch shape, which carries the dtype and device."""

    PARAMS: ClassVar[tuple[str, ...]] = ("zero",)
    arg_constraints: ClassVar[dict[str, C.Constraint]] = {}
    has_rsample = False
    support: C.Constraint = C.real

    def __init__(self, zero: torch.Tensor, validate_args: bool | None = None) -> None:
        self.zero = zero
        super().__init__(zero.shape, torch.Size(), validate_args=validate_args)

    @torch.no_grad()
    def sample(self, sample_shape: torch.Size | list[int] | tuple[int, ...] = ()) -> torch.Tensor:
        return stan_start(self._extended_shape(torch.Size(sample_shape)), self.support, self.zero)

    def log_prob(self, value: torch.Tensor) -> torch.Tensor:
        """0 on the support, -inf off it; `value * 0` keeps the value in the graph, so a
        gradient through this term alone is 0, never missing. Both supports' checks are
        comparisons, which NaN fails (`x == x` for the real line), so NaN is off it too
        without a test of its own (three operations fewer in every NUTS gradient)."""
        inside = self.support.check(value)
        zero = torch.where(inside, value * 0, -math.inf)
        return zero + self.zero


class ImproperFlat(_ImproperFlat):
    """`Flat`: flat on the real line."""


class ImproperHalfFlat(_ImproperFlat):
    """`HalfFlat`: flat on (0, inf)."""

    support = C.positive


class ImproperBoundedFlat(_ImproperFlat):
    """`BoundedFlat(low, high)`: flat between its arguments, Stan's bounded parameter with
    no prior statement. The support is the interval of this call's bounds, as a
    `Uniform`'s is, so the runtime reports it as the site's support (`site_constraint`)
    and NUTS and SVI move the value through that interval's map, with its Jacobian (on
    bounds that read no other latent: `inference.sites.moving_support`). The density is
    0 inside, not -log(high - low): a Uniform's normaliser would read the bounds and
    change the posterior of whatever they read."""

    PARAMS = ("low", "high")

    def __init__(
        self, low: torch.Tensor, high: torch.Tensor, validate_args: bool | None = None
    ) -> None:
        self.low, self.high = torch.broadcast_tensors(low, high)
        self.support = C.interval(self.low, self.high)
        super().__init__(torch.zeros_like(self.low), validate_args=validate_args)


def stan_start(shape: torch.Size, support: C.Constraint, like: torch.Tensor) -> torch.Tensor:
    """Stan's starting point of a latent on `support`: uniform on (-2, 2) in unconstrained
    space, mapped onto the support (`biject_to`); of `shape`, in `like`'s dtype and device.
    What a family that has no draws gives where one value of the site is needed."""
    u = torch.rand(shape, dtype=like.dtype, device=like.device) * 4 - 2
    return D.biject_to(support)(u)


class Ordered(D.Independent[D.Distribution]):
    """A number family's draws along the last axis held to an ordered set (`support`:
    `ordered_vector` or `positive_ordered_vector`), a step's `[constraint=ordered]`: the
    last axis of `base`'s batch is one vector's. Its log density is the family's summed
    over the vector, as Stan scores `ordered[K] mu; mu ~ normal(0, 2);`, not renormalised
    over the set.

    A draw would be one from the family truncated to the set, which qvr does not make:
    `sample` gives Stan's starting point, as an improper family's does (`_ImproperFlat`),
    and what would read it as a draw of the prior is refused before it runs
    (`qvr_core.plan.runnable.improper_refusal`)."""

    has_rsample = False

    def __init__(self, base: D.Distribution, support: C.Constraint) -> None:
        super().__init__(base, 1, validate_args=False)
        self._ordered = support

    @property
    def support(self) -> C.Constraint:
        return self._ordered

    def expand(
        self, batch_shape: torch.Size | list[int] | tuple[int, ...], _instance: Any = None
    ) -> Ordered:
        shape = torch.Size((*batch_shape, *self.event_shape))
        return Ordered(self.base_dist.expand(shape), self._ordered)

    @torch.no_grad()
    def sample(self, sample_shape: torch.Size | list[int] | tuple[int, ...] = ()) -> torch.Tensor:
        shape = self._extended_shape(torch.Size(sample_shape))
        return stan_start(shape, self._ordered, _zeros())

    def rsample(self, sample_shape: torch.Size | list[int] | tuple[int, ...] = ()) -> torch.Tensor:
        raise NotImplementedError("a draw held to an ordered set is not reparameterised")


def _zeros() -> torch.Tensor:
    """The batch of an improper family without arguments: one number (the runtime expands
    it over the site's plates), in the dtype and on the device the run computes in."""
    return torch.zeros((), dtype=torch.get_default_dtype(), device=torch.get_default_device())


def _ordinal(
    cdf: Callable[[torch.Tensor], torch.Tensor], eta: torch.Tensor, cuts: torch.Tensor
) -> D.Categorical:
    """Categories 0 .. K between K cutpoints: P(y <= k) = cdf(cuts[k] - eta)."""
    below = cdf(cuts - eta.unsqueeze(-1))
    zero, one = torch.zeros_like(below[..., :1]), torch.ones_like(below[..., :1])
    probs = torch.cat([below, one], -1) - torch.cat([zero, below], -1)
    return D.Categorical(probs=probs.clamp(min=torch.finfo(probs.dtype).tiny))


def _zero_inflated_poisson(zero_prob: torch.Tensor, rate: torch.Tensor) -> D.Distribution:
    """A two-component mixture of a point mass at 0 (a Poisson of rate 0) and Poisson(rate)."""
    zero_prob, rate = torch.broadcast_tensors(zero_prob, rate)
    mix = D.Categorical(probs=torch.stack([zero_prob, 1 - zero_prob], -1))
    rates = torch.stack([torch.zeros_like(rate), rate], -1)
    return D.MixtureSameFamily(mix, D.Poisson(rates, validate_args=False))


class _SymmetricInverse(T.Transform):
    """X -> X^-1 on positive-definite matrices; |dY/dX| = |X|^-(d+1) on symmetric ones."""

    domain = POSITIVE_DEFINITE
    codomain = POSITIVE_DEFINITE
    bijective = True

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _SymmetricInverse)

    @staticmethod
    def _invert(x: torch.Tensor) -> torch.Tensor:
        # NaN for a matrix that is not positive definite: its density, not an error
        y = torch.cholesky_inverse(cholesky_or_nan(x))
        return 0.5 * (y + y.mT)

    def _call(self, x: torch.Tensor) -> torch.Tensor:
        return self._invert(x)

    def _inverse(self, y: torch.Tensor) -> torch.Tensor:
        return self._invert(y)

    def log_abs_det_jacobian(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        d = x.shape[-1]
        return -(d + 1) * torch.linalg.slogdet(x).logabsdet

    @property
    def event_dim(self) -> int:
        return 2


def _inverse_wishart(df: torch.Tensor, scale_tril: torch.Tensor) -> D.Distribution:
    """X^-1 for X ~ Wishart(df, Ψ^-1), where Ψ = scale_tril scale_trilᵀ."""
    inverse_psi_tril = cholesky_or_nan(torch.cholesky_inverse(scale_tril))
    return inverted(RecordableWishart(df, inverse_psi_tril, validate_args=False))


def inverted(wishart: D.Wishart) -> D.Distribution:
    """The inverse X^-1 of a Wishart draw X: an inverse Wishart with scale the inverse of
    the Wishart's (its log density log p_W(X^-1) - (d + 1) log |X^-1|, as quivers scores
    its conditional InverseWishart)."""
    return D.TransformedDistribution(wishart, _SymmetricInverse(), validate_args=False)


class FlatPositiveDefinite(C.Constraint):
    """Symmetric positive-definite `size` x `size` matrices held row by row in `size ** 2`
    numbers: the support of a Wishart kernel's draw, which fills a Real object."""

    event_dim = 1

    def __init__(self, size: int) -> None:
        self.size = size
        super().__init__()

    def check(self, value: torch.Tensor) -> torch.Tensor:
        matrix = value.unflatten(-1, (self.size, self.size))
        return POSITIVE_DEFINITE.check(matrix)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FlatPositiveDefinite) and other.size == self.size

    def __hash__(self) -> int:
        return hash((FlatPositiveDefinite, self.size))


class CholeskyFlatPositiveDefinite(T.Transform):
    """R^(k(k+1)/2) -> k x k positive-definite matrices held row by row: the entries fill a
    lower-triangular L, its diagonal through exp, and the value is L Lᵀ. One-to-one (the
    Cholesky factor with positive diagonal is unique), which torch's `transform_to` onto
    positive-definite matrices is not, so NUTS and SVI can move a latent Wishart draw.

    log |det J| = k log 2 + sum_i (k - i + 1) u_ii over the diagonal entries u_ii (i from 0):
    L -> L Lᵀ contributes 2^k prod_i L_ii^(k - i), the exp one more L_ii each."""

    domain = C.independent(C.real, 1)
    bijective = True

    def __init__(self, size: int, cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        self.size = size
        self.codomain = FlatPositiveDefinite(size)  # its size is this transform's
        rows, cols = torch.tril_indices(size, size)
        self._rows, self._cols = rows, cols
        on = rows == cols
        self._on, self._off = on.nonzero().squeeze(-1), (~on).nonzero().squeeze(-1)
        self._weights = (size - rows[self._on] + 1).to(torch.get_default_dtype())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CholeskyFlatPositiveDefinite) and other.size == self.size

    def _call(self, u: torch.Tensor) -> torch.Tensor:
        k, on, off = self.size, self._on, self._off
        tril = u.new_zeros(*u.shape[:-1], k, k)
        tril[..., self._rows[off], self._cols[off]] = u[..., off]
        tril[..., self._rows[on], self._cols[on]] = u[..., on].exp()
        return (tril @ tril.mT).flatten(-2)

    def _inverse(self, y: torch.Tensor) -> torch.Tensor:
        matrix = y.unflatten(-1, (self.size, self.size))
        tril = torch.linalg.cholesky(0.5 * (matrix + matrix.mT))
        u = tril[..., self._rows, self._cols].clone()
        u[..., self._on] = u[..., self._on].log()
        return u

    def log_abs_det_jacobian(self, u: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        weights = self._weights.to(u)
        return self.size * math.log(2.0) + (u[..., self._on] * weights).sum(-1)

    def forward_shape(self, shape: torch.Size | tuple[int, ...]) -> torch.Size:
        return torch.Size((*shape[:-1], self.size * self.size))

    def inverse_shape(self, shape: torch.Size | tuple[int, ...]) -> torch.Size:
        return torch.Size((*shape[:-1], self.size * (self.size + 1) // 2))


def _matrix_normal(
    loc: torch.Tensor, row_covariance: torch.Tensor, col_covariance: torch.Tensor
) -> D.Distribution:
    """X = M + A Z Bᵀ with A Aᵀ = U, B Bᵀ = V: row-major vec(X) ~ Normal(vec M, A ⊗ B (A ⊗ B)ᵀ)."""
    rows, cols = row_covariance.shape[-1], col_covariance.shape[-1]
    loc = loc.expand(*loc.shape[:-2], rows, cols) if loc.dim() >= 2 else loc.expand(rows, cols)
    a, b = cholesky_or_nan(row_covariance), cholesky_or_nan(col_covariance)
    # (A ⊗ B)[i c + j, k c + l] = A[i, k] B[j, l], batched; lower triangular like A and B
    tril = torch.einsum("...ik,...jl->...ijkl", a, b).reshape(
        *broadcast_shape(a.shape[:-2], b.shape[:-2]), rows * cols, rows * cols
    )
    flat = D.MultivariateNormal(loc.reshape(*loc.shape[:-2], rows * cols), scale_tril=tril)
    reshape = T.ReshapeTransform(torch.Size((rows * cols,)), torch.Size((rows, cols)))
    return D.TransformedDistribution(flat, reshape)


def _categorical(a: Args) -> D.Distribution:
    return D.Categorical(logits=a["logits"]) if "logits" in a else D.Categorical(probs=a["probs"])


def _lkj(a: Args, space: int | None) -> D.Distribution:
    if space is None:
        raise ValueError("LKJCholesky: the matrix size is the object's; none was given")
    return D.LKJCholesky(space, a["concentration"])


# ---------------------------------------------------------------- the factories


class Factories:
    """The torch factory of each family, named after it: `factory(name)` finds a family's
    by `getattr`, so the registry's names are written nowhere else.

    Each takes the argument tensors by parameter name and the size of the object a
    draw lands in (for `LKJCholesky`, whose size is the object's).
    """

    @staticmethod
    def Normal(a: Args, space: int | None) -> D.Distribution:
        return D.Normal(a["loc"], a["scale"])

    @staticmethod
    def Cauchy(a: Args, space: int | None) -> D.Distribution:
        return D.Cauchy(a["loc"], a["scale"])

    @staticmethod
    def StudentT(a: Args, space: int | None) -> D.Distribution:
        return D.StudentT(a["df"], a["loc"], a["scale"])

    @staticmethod
    def Laplace(a: Args, space: int | None) -> D.Distribution:
        return D.Laplace(a["loc"], a["scale"])

    @staticmethod
    def Logistic(a: Args, space: int | None) -> D.Distribution:
        return Logistic(a["loc"], a["scale"])

    @staticmethod
    def Gumbel(a: Args, space: int | None) -> D.Distribution:
        return D.Gumbel(a["loc"], a["scale"])

    @staticmethod
    def VonMises(a: Args, space: int | None) -> D.Distribution:
        return VonMises(a["loc"], a["concentration"])

    @staticmethod
    def MixtureNormal(a: Args, space: int | None) -> D.Distribution:
        return D.MixtureSameFamily(
            D.Categorical(probs=a["weights"]), D.Normal(a["loc"], a["scale"])
        )

    @staticmethod
    def Uniform(a: Args, space: int | None) -> D.Distribution:
        return D.Uniform(a["low"], a["high"])

    @staticmethod
    def TruncatedNormal(a: Args, space: int | None) -> D.Distribution:
        return TruncatedNormal(a["mu"], a["sigma"], a["low"], a["high"])

    @staticmethod
    def GeneralizedPareto(a: Args, space: int | None) -> D.Distribution:
        return D.GeneralizedPareto(a["loc"], a["scale"], a["concentration"])

    @staticmethod
    def Flat(a: Args, space: int | None) -> D.Distribution:
        return ImproperFlat(_zeros())

    @staticmethod
    def BoundedFlat(a: Args, space: int | None) -> D.Distribution:
        return ImproperBoundedFlat(a["low"], a["high"])

    @staticmethod
    def HalfNormal(a: Args, space: int | None) -> D.Distribution:
        return D.HalfNormal(a["scale"])

    @staticmethod
    def HalfCauchy(a: Args, space: int | None) -> D.Distribution:
        return D.HalfCauchy(a["scale"])

    @staticmethod
    def Horseshoe(a: Args, space: int | None) -> D.Distribution:
        return Horseshoe(a["scale"])

    @staticmethod
    def HalfStudentT(a: Args, space: int | None) -> D.Distribution:
        return HalfStudentT(a["df"], a["scale"])

    @staticmethod
    def LogNormal(a: Args, space: int | None) -> D.Distribution:
        return D.LogNormal(a["loc"], a["scale"])

    @staticmethod
    def Exponential(a: Args, space: int | None) -> D.Distribution:
        return D.Exponential(a["rate"])

    @staticmethod
    def Gamma(a: Args, space: int | None) -> D.Distribution:
        return D.Gamma(a["concentration"], a["rate"])

    @staticmethod
    def InverseGamma(a: Args, space: int | None) -> D.Distribution:
        return D.InverseGamma(a["concentration"], a["rate"])

    @staticmethod
    def Chi2(a: Args, space: int | None) -> D.Distribution:
        return D.Chi2(a["df"])

    @staticmethod
    def Weibull(a: Args, space: int | None) -> D.Distribution:
        return Weibull(a["scale"], a["concentration"])

    @staticmethod
    def Pareto(a: Args, space: int | None) -> D.Distribution:
        return D.Pareto(a["scale"], a["alpha"])

    @staticmethod
    def FisherSnedecor(a: Args, space: int | None) -> D.Distribution:
        return D.FisherSnedecor(a["df1"], a["df2"])

    @staticmethod
    def HalfFlat(a: Args, space: int | None) -> D.Distribution:
        return ImproperHalfFlat(_zeros())

    @staticmethod
    def Beta(a: Args, space: int | None) -> D.Distribution:
        return D.Beta(a["concentration1"], a["concentration0"])

    @staticmethod
    def Kumaraswamy(a: Args, space: int | None) -> D.Distribution:
        return Kumaraswamy(a["concentration1"], a["concentration0"])

    @staticmethod
    def LogitNormal(a: Args, space: int | None) -> D.Distribution:
        return D.TransformedDistribution(D.Normal(a["mu"], a["sigma"]), T.SigmoidTransform())

    @staticmethod
    def ContinuousBernoulli(a: Args, space: int | None) -> D.Distribution:
        return D.ContinuousBernoulli(probs=a["probs"])

    @staticmethod
    def RelaxedBernoulli(a: Args, space: int | None) -> D.Distribution:
        return D.RelaxedBernoulli(a["temperature"], probs=a["probs"])

    @staticmethod
    def Bernoulli(a: Args, space: int | None) -> D.Distribution:
        return D.Bernoulli(probs=a["probs"])

    @staticmethod
    def Categorical(a: Args, space: int | None) -> D.Distribution:
        return _categorical(a)

    @staticmethod
    def MarkovChain(a: Args, space: int | None) -> D.Distribution:
        return MarkovChain(a["transition"], a.get("initial"))

    @staticmethod
    def Poisson(a: Args, space: int | None) -> D.Distribution:
        return Poisson(a["rate"])

    @staticmethod
    def Binomial(a: Args, space: int | None) -> D.Distribution:
        return D.Binomial(a["total_count"], probs=a["probs"])

    @staticmethod
    def BetaBinomial(a: Args, space: int | None) -> D.Distribution:
        return BetaBinomial(a["total_count"], a["concentration1"], a["concentration0"])

    @staticmethod
    def NegativeBinomial(a: Args, space: int | None) -> D.Distribution:
        return D.NegativeBinomial(a["total_count"], probs=a["probs"])

    @staticmethod
    def Geometric(a: Args, space: int | None) -> D.Distribution:
        return D.Geometric(probs=a["probs"])

    @staticmethod
    def OrderedLogistic(a: Args, space: int | None) -> D.Distribution:
        return _ordinal(torch.sigmoid, a["predictor"], a["cutpoints"])

    @staticmethod
    def OrderedProbit(a: Args, space: int | None) -> D.Distribution:
        return _ordinal(D.Normal(0.0, 1.0).cdf, a["eta"], a["cutpoints"])

    @staticmethod
    def ZeroInflatedPoisson(a: Args, space: int | None) -> D.Distribution:
        return _zero_inflated_poisson(a["zero_prob"], a["rate"])

    @staticmethod
    def HurdlePoisson(a: Args, space: int | None) -> D.Distribution:
        return HurdlePoisson(a["zero_prob"], a["rate"])

    @staticmethod
    def ZeroOneInflatedBeta(a: Args, space: int | None) -> D.Distribution:
        return ZeroOneInflatedBeta(a["mu"], a["phi"], a["zoi"], a["coi"])

    @staticmethod
    def OneHotCategorical(a: Args, space: int | None) -> D.Distribution:
        return D.OneHotCategorical(probs=a["probs"])

    @staticmethod
    def Dirichlet(a: Args, space: int | None) -> D.Distribution:
        return D.Dirichlet(a["concentration"])

    @staticmethod
    def RelaxedOneHotCategorical(a: Args, space: int | None) -> D.Distribution:
        return D.RelaxedOneHotCategorical(a["temperature"], probs=a["probs"])

    @staticmethod
    def LogisticNormal(a: Args, space: int | None) -> D.Distribution:
        return D.LogisticNormal(a["loc"], a["scale"])

    @staticmethod
    def MultivariateNormal(a: Args, space: int | None) -> D.Distribution:
        return D.MultivariateNormal(a["loc"], scale_tril=a["scale_tril"])

    @staticmethod
    def LowRankMVN(a: Args, space: int | None) -> D.Distribution:
        return D.LowRankMultivariateNormal(a["loc"], a["cov_factor"], a["cov_diag"])

    @staticmethod
    def LKJCholesky(a: Args, space: int | None) -> D.Distribution:
        return _lkj(a, space)

    @staticmethod
    def Wishart(a: Args, space: int | None) -> D.Distribution:
        return RecordableWishart(a["df"], a["scale_tril"])

    @staticmethod
    def InverseWishart(a: Args, space: int | None) -> D.Distribution:
        return _inverse_wishart(a["df"], a["scale_tril"])

    @staticmethod
    def MatrixNormal(a: Args, space: int | None) -> D.Distribution:
        return _matrix_normal(a["loc"], a["row_covariance"], a["col_covariance"])


@contextmanager
def unvalidated() -> Iterator[None]:
    """torch's argument and value checks off for the block (then as they were).

    Each check reads a tensor back into Python (`bool(valid.all())`) every time a
    distribution is built: for a potential evaluated thousands of times that is time
    and a point at which it cannot be recorded. What they would refuse is checked
    once where it comes in: a run validates its data and the start of its chains."""
    previous = D.Distribution._validate_args
    D.Distribution.set_default_validate_args(False)
    try:
        yield
    finally:
        D.Distribution.set_default_validate_args(previous)


def factory(name: str) -> Factory | None:
    """The torch factory of the family named `name`; None for a Dirac family (it has no
    distribution) or a name that is no family."""
    if name.startswith("_") or name not in vars(Factories):
        return None
    found: Factory = getattr(Factories, name)
    return found


#: Every factory by its family's name (derived from `Factories`, never written out).
TORCH_FAMILIES: dict[str, Factory] = {
    name: found for name in vars(Factories) if (found := factory(name)) is not None
}


def make_distribution(name: str, args: Args, space: int | None = None) -> D.Distribution:
    """The torch distribution of family `name` with the given argument tensors.

    An argument that rounded onto the edge of what it may take stands for a number
    inside, which torch's check refuses: a positive scale that underflowed to 0
    (`exp(-90.0)` in float32) is taken as the smallest normal float, a probability that
    rounded to 1 (`d / (d + exp(-20.0))`) as the float below 1 (`off_the_edges`). Only
    a refusal pays for that look, since NUTS builds each site's distribution thousands
    of times."""
    build = TORCH_FAMILIES.get(name)  # a site's every evaluation: one dict look-up
    if build is None:
        raise KeyError(f"no torch factory for the family {name!r}")
    try:
        return build(args, space)
    except ValueError:
        lifted = off_the_edges(name, args)
        if lifted is None:
            raise
        return build(lifted, space)


def completed(
    family: Family, bound: dict[str, torch.Tensor], size: int | None
) -> dict[str, torch.Tensor]:
    """Defaults filled in; a number given for a vector parameter spread to the draw's size."""
    schema = next((s for s in family.schemas if set(bound) <= {p.name for p in s}), family.params)
    out = dict(bound)
    for p in schema:
        if p.name not in out and p.default is not None:
            out[p.name] = number(p.default)
    for p in schema:
        v = out.get(p.name)
        if v is not None and p.rank == 1 and v.dim() == 0 and size is not None:
            out[p.name] = v.expand(size)
    return out


def log_density(
    name: str, params: tuple[str, ...], value: torch.Tensor, *args: torch.Tensor
) -> torch.Tensor:
    """`log_prob(F(args), value)` of a computation (`terms.Density`): the log density of
    family `name`'s torch distribution, its arguments bound to `params` (defaults filled
    in), at `value`; -inf where the value lies outside the family's support, as a
    density that is zero there (torch's own log_prob gives any number, or NaN, outside)."""
    family = FAMILIES[name]
    dist = make_distribution(name, completed(family, dict(zip(params, args, strict=True)), None))
    if family.discrete and value.is_floating_point():  # a count read from Real data
        value = value.round()
    return supported_log_prob(dist, value)


def supported_log_prob(dist: D.Distribution, value: torch.Tensor) -> torch.Tensor:
    """`dist.log_prob(value)`, -inf where the value lies outside its support (or off the
    floats), as a density that is zero there: torch's own log_prob gives any number, or
    NaN, outside. A point inside is scored in its place, so no NaN reaches a gradient."""
    support = dist.support
    if support is None:  # torch declares none: its log_prob is the whole answer
        return dist.log_prob(value)
    inside = within_floats(value, support.check(value))
    scored = dist.log_prob(torch.where(inside, value, _inside_point(support, value)))
    return torch.where(inside, scored, torch.full_like(scored, -math.inf))


def _inside_point(support: C.Constraint, like: torch.Tensor) -> torch.Tensor:
    """A value inside `support`, put where the asked one is outside, so torch's log_prob
    there (discarded) stays finite and no NaN reaches a gradient: the image of 0 in the
    unconstrained space for a continuous support, the value itself (whose mass torch
    computes finitely) for a discrete one."""
    if support.is_discrete:
        return like
    return D.biject_to(support)(torch.zeros_like(like))


#: Registry constraint kinds whose values lie strictly inside what torch takes for some
#: family: above 0, and (a probability) between 0 and 1.
_EDGES = {"positive": C.positive, "positive_vector": C.positive, "unit_interval": C.unit_interval}


def off_the_edges(name: str, args: Args) -> dict[str, torch.Tensor] | None:
    """`args` with every number of a positive parameter of family `name` that is 0, and
    of a probability that is 0 or 1, moved just inside (`into_support`); None when there
    is none (nothing to change)."""
    family = FAMILIES.get(name)
    if family is None:
        return None
    out = dict(args)
    for key, value in args.items():
        param = family.param(key)
        edge = _EDGES.get(param.constraint.kind) if param is not None else None
        if edge is not None:
            out[key] = into_support(value, edge)
    return out if any(out[k] is not args[k] for k in out) else None


def into_support(value: torch.Tensor, support: C.Constraint | None) -> torch.Tensor:
    """A continuous draw that rounded onto a bound of its support moved to the nearest
    float inside: a Weibull or LogNormal draw that underflowed to 0 becomes the smallest
    normal float (torch's own Gamma clamps its draws so), a Beta or Kumaraswamy draw of
    exactly 1 the float below it. Such a value has probability 0, yet torch scores it
    -inf or NaN (a support check refuses 0 for a positive family), which would fail the
    run or synthesised data on a rounding. Any other value comes back as it is (and any
    value where there is no support to read)."""
    if support is None or not value.is_floating_point() or support.is_discrete:
        return value
    base = support.base_constraint if isinstance(support, C.independent) else support
    if isinstance(base, C._GreaterThan):
        return _above(value, base.lower_bound)
    if isinstance(base, C._Interval):
        return _below(_above(value, base.lower_bound), base.upper_bound)
    return value


def draw_within(d: D.Distribution, support: C.Constraint | None = None) -> torch.Tensor:
    """A draw of `d`, reparameterised where torch can, kept inside `support` (`into_support`)."""
    return into_support(d.rsample() if d.has_rsample else d.sample(), support)


def within_floats(value: torch.Tensor, inside: torch.Tensor) -> torch.Tensor:
    """`inside` (a support's check of `value`, one flag per draw) and each draw finite:
    torch's supports take inf for a positive or a real value, yet a draw of inf is one
    that overflowed, and scores -inf or NaN."""
    finite = torch.isfinite(value)
    if finite.dim() > inside.dim():  # a vector or matrix family: one flag per draw
        finite = finite.flatten(inside.dim()).all(-1)
    return inside & finite


def _above(value: torch.Tensor, low: float | torch.Tensor) -> torch.Tensor:
    """`value` with its entries from `low` up to the next normal float above it moved to
    that float: at 0 that takes in the denormals, which a run that flushes them (see
    `runs.run.flush_denormals`) reads as 0."""
    bound = torch.as_tensor(low, dtype=value.dtype)
    tiny = torch.finfo(value.dtype).tiny
    up = torch.where(bound == 0, tiny, torch.nextafter(bound, torch.full_like(bound, math.inf)))
    at = (value >= bound) & (value < up)
    if not bool(at.any()):
        return value
    return torch.where(at, up, value)


def _below(value: torch.Tensor, high: float | torch.Tensor) -> torch.Tensor:
    """`value` with its entries equal to `high` moved down to the float below it."""
    bound = torch.as_tensor(high, dtype=value.dtype)
    at = value == bound
    if not bool(at.any()):
        return value
    return torch.where(at, torch.nextafter(bound, torch.full_like(bound, -math.inf)), value)


def bijection(site: str, c: C.Constraint) -> T.Transform:
    """The one-to-one map from unconstrained space onto a latent site's support, which NUTS
    and SVI move in. torch has none for positive-definite matrices (its `transform_to` there
    is not one-to-one), so a latent Wishart step is refused naming the site; a Wishart
    kernel's draw, held row by row, moves through `CholeskyFlatPositiveDefinite`."""
    if isinstance(c, FlatPositiveDefinite):
        return CholeskyFlatPositiveDefinite(c.size)
    try:
        return D.biject_to(c)
    except NotImplementedError:
        raise QvrRuntimeError(
            f"site '{site}': NUTS and SVI move a latent through a one-to-one map onto its "
            f"support, and torch has none for {type(c).__name__.strip('_')}; observe '{site}' "
            "or run --method prior",
            site=site,
        ) from None


def torch_constraint(c: Constraint, args: Args | None = None) -> C.Constraint:
    """The torch constraint of the same meaning; bounds named by a parameter read `args`."""

    def bound(b: float | str | None) -> torch.Tensor | float:
        if isinstance(b, str):
            if args is None or b not in args:
                raise ValueError(f"the bound '{b}' needs that argument")
            return args[b]
        assert b is not None
        return b

    match c.kind:
        case "interval":
            return C.interval(bound(c.low), bound(c.high))
        case "greater_than":
            return C.greater_than(bound(c.low))
        case "greater_than_eq":
            return C.greater_than_eq(bound(c.low))
        case "less_than_eq":  # torch's is strict: the bound itself has probability 0
            return C.less_than(bound(c.high))
        case "integer_interval":
            return C.integer_interval(bound(c.low), bound(c.high))
        case "index" | "ordinal":
            vector = bound(c.high)
            assert isinstance(vector, torch.Tensor)
            return C.integer_interval(0, vector.shape[-1] - (c.kind == "index"))
        case _:
            return _FIXED[c.kind]


_FIXED: dict[str, C.Constraint] = {
    "real": C.real,
    "positive": C.positive,
    "nonnegative": C.nonnegative,
    "unit_interval": C.unit_interval,
    "simplex": C.simplex,
    "real_vector": C.real_vector,
    "positive_vector": C.independent(C.positive, 1),
    "ordered": ordered_vector,
    "positive_ordered": positive_ordered_vector,
    "real_matrix": C.independent(C.real, 2),
    "stochastic_matrix": C.independent(C.simplex, 1),
    "lower_cholesky": C.lower_cholesky,
    "corr_cholesky": C.corr_cholesky,
    "positive_definite": C.positive_definite,
    "nonnegative_integer": C.nonnegative_integer,
    "positive_integer": C.positive_integer,
    "boolean": C.boolean,
    "one_hot": C.one_hot,
}
