"""The torch distribution of a step of quivers' measure algebra (`check.model.Measure`).

Each node of the checked measure is a `_Node` holding its arguments as tensors of the
site's whole batch shape: a number family (`_Leaf`, the registry's torch factory), or an
operator. A node gives its log density as a measure (`density`), its log mass on an
interval (`mass`: a `Restrict` inside a `Mixture` keeps less than 1) and draws of the
normalised measure (`draw`). `MeasureDistribution` is what the step draws from: the
measure normalised at the step's boundary, as quivers' program elaboration wraps a
measure-valued step in `Normalize`, so `Restrict(Normal(0.0, 1.0), 0.0)` there is the
half-Normal.

A restriction's mass is the base's CDF at the two ends (torch's `cdf`; the Normal's by
its tails, `log_ndtr`, so a cut far out keeps its digits); a count family's mass is its
probabilities added over the whole numbers below the interval, or over the interval
when it is bounded above. A family torch has no CDF for (the Student-t, the Beta) is
refused when it is restricted, naming the step, but where one end only is cut at the
centre of a family symmetric about it: half its mass, as quivers folds it (the
half-Student-t). Draws of a continuous restriction come
from the inverse CDF where torch has one, else by drawing again until inside.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

import torch
from torch import distributions as D
from torch.distributions import transforms as T

from qvr_core.builtins import FAMILIES
from qvr_core.check.model import Measure, Site
from qvr_core.runtime.distributions import (
    _inside_point,
    completed,
    make_distribution,
    supported_log_prob,
    torch_constraint,
)
from qvr_core.runtime.errors import QvrRuntimeError, first_line
from qvr_core.runtime.tensors import broadcast_shape

#: How many whole numbers a count family's restriction adds up at most.
_MOST_COUNTS = 100_000
#: How many rounds a restriction without an inverse CDF draws again for.
_ROUNDS = 1_000
_BIJECTIONS: dict[str, T.Transform] = {
    "Identity": T.identity_transform,
    "Exp": T.ExpTransform(),
    "Log": T.ExpTransform().inv,
    "Sigmoid": T.SigmoidTransform(),
    "Logit": T.SigmoidTransform().inv,
    "Softplus": T.SoftplusTransform(),
}


class _Node:
    """One measure: its log density, its log mass on [low, high], normalised draws."""

    where: str

    def density(self, x: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def mass(
        self, low: torch.Tensor | None = None, high: torch.Tensor | None = None
    ) -> torch.Tensor:
        raise NotImplementedError

    def draw(self, shape: torch.Size) -> torch.Tensor:
        raise NotImplementedError


class _Leaf(_Node):
    def __init__(
        self,
        name: str,
        dist: D.Distribution,
        dtype: torch.dtype,
        where: str,
        centre: torch.Tensor | None = None,
    ) -> None:
        """`centre`: the argument the family's density is symmetric about
        (`Family.symmetric_about`), where it has one."""
        self.name, self.dist, self.dtype, self.where = name, dist, dtype, where
        self.discrete = FAMILIES[name].discrete
        self.centre = centre

    def density(self, x: torch.Tensor) -> torch.Tensor:
        return supported_log_prob(self.dist, x)

    def mass(
        self, low: torch.Tensor | None = None, high: torch.Tensor | None = None
    ) -> torch.Tensor:
        zero = torch.zeros(self.dist.batch_shape, dtype=self.dtype)
        if low is None and high is None:
            return zero
        if self.discrete:
            return self._counted(low, high)
        if isinstance(self.dist, D.Normal):
            return _normal_mass(self.dist, low, high)
        try:
            upper = support_cdf(self.dist, high) if high is not None else 1.0 + zero
            lower = support_cdf(self.dist, low) if low is not None else zero
        except NotImplementedError:
            half = self._half(low, high)
            if half is not None:
                return half
            about = FAMILIES[self.name].symmetric_about
            fold = f", or one end only, at its {about}, where it keeps half" if about else ""
            raise QvrRuntimeError(
                f"{self.where}: Restrict of {self.name} needs its CDF, which torch does not "
                f"give for {self.name}{fold}; restrict a family that has one (Normal, "
                "Gamma, LogNormal, Exponential, Cauchy, ...)"
            ) from None
        return torch.log(torch.clamp(upper - lower, min=0.0))

    def _half(self, low: torch.Tensor | None, high: torch.Tensor | None) -> torch.Tensor | None:
        """log 1/2 for a cut of one end only at the centre of a symmetric family, which
        needs no CDF (quivers' fold: `Restrict(StudentT(3.0, 0.0, s), 0.0)` is the
        half-Student-t); None otherwise. The cut is compared with the centre as quivers
        compares them (within 1e-6 relative, 1e-7 absolute), a value read once per
        evaluation: a potential that reads it is run eagerly rather than recorded."""
        end = low if high is None else high if low is None else None
        if self.centre is None or end is None:
            return None
        cut = end.to(self.centre.dtype)
        if not bool(torch.isclose(cut, self.centre, rtol=1e-6, atol=1e-7).all()):
            return None
        return torch.full(self.dist.batch_shape, -math.log(2.0), dtype=self.dtype)

    def _counted(self, low: torch.Tensor | None, high: torch.Tensor | None) -> torch.Tensor:
        """A count family's log mass on [low, high]: its probabilities added over the
        interval when it is bounded above, else 1 less those below it."""
        start = torch.zeros((), dtype=self.dtype) if low is None else torch.ceil(low).clamp(min=0.0)
        if high is None:
            stop = int(start.max()) if start.numel() else 0
            if stop > _MOST_COUNTS:
                raise QvrRuntimeError(f"{self.where}: Restrict starts past {_MOST_COUNTS}")
            below = self._added(torch.zeros_like(start), start - 1, stop)
            return torch.log1p(-torch.clamp(below, max=1.0))
        end = torch.floor(high)
        span = int((end - start).max()) + 1 if end.numel() else 0
        if span > _MOST_COUNTS:
            raise QvrRuntimeError(f"{self.where}: Restrict spans over {_MOST_COUNTS} counts")
        return torch.log(self._added(start, end, max(span, 0)))

    def _added(self, start: torch.Tensor, end: torch.Tensor, n: int) -> torch.Tensor:
        """The probabilities of start, start + 1, ..., end (none where end < start)."""
        if n <= 0:
            return torch.zeros(self.dist.batch_shape, dtype=self.dtype)
        k = torch.arange(n, dtype=self.dtype)
        shape = broadcast_shape(tuple(self.dist.batch_shape), tuple(start.shape))
        counts = start.expand(shape).unsqueeze(0) + k.reshape(-1, *([1] * len(shape)))
        p = torch.exp(self.density(counts))
        return torch.where(counts <= end, p, 0.0).sum(0)

    def draw(self, shape: torch.Size) -> torch.Tensor:
        return self.dist.sample(shape)


def support_cdf(d: D.Distribution, end: torch.Tensor) -> torch.Tensor:
    """F(end): 0 at or below the family's support and 1 at or above it, where torch's `cdf`
    refuses to be asked (`Truncated(HalfNormal(1.0), m, 2.0)` with m below 0 keeps the
    mass of [0, 2]); torch's own CDF inside."""
    lo = getattr(d.support, "lower_bound", None)
    hi = getattr(d.support, "upper_bound", None)
    if lo is None and hi is None:
        return d.cdf(end)
    # no branch on the values: a recorded potential (`inference.record`) keeps this path
    below = end <= lo if lo is not None else torch.zeros_like(end, dtype=torch.bool)
    above = end >= hi if hi is not None else torch.zeros_like(end, dtype=torch.bool)
    if lo is not None and hi is not None:
        inside = (torch.as_tensor(lo) + torch.as_tensor(hi)) / 2
    elif lo is not None:
        inside = torch.as_tensor(lo) + 1.0
    else:
        inside = torch.as_tensor(hi) - 1.0
    f = d.cdf(torch.where(below | above, inside.to(end.dtype), end))
    return torch.where(below, 0.0, torch.where(above, 1.0, f)).to(f.dtype)


def _normal_mass(d: D.Normal, low: torch.Tensor | None, high: torch.Tensor | None) -> torch.Tensor:
    """log P(low <= X <= high) for a Normal, from the tail each end lies in, so a cut far
    from the mean keeps its digits (1 - Phi(9) is 0 in float64, log Phi(-9) is not)."""
    _, lo, hi = _reflected(d, low, high)
    log_hi, log_lo = torch.special.log_ndtr(hi), torch.special.log_ndtr(lo)
    return log_hi + torch.log1p(-torch.exp(torch.clamp(log_lo - log_hi, max=0.0)))


def _reflected(
    d: D.Normal, low: torch.Tensor | None, high: torch.Tensor | None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The ends in standard units, reflected where both lie above the mean (`upper`):
    [a, b] becomes [-b, -a], in the lower tail, where Phi keeps its digits."""
    a = (low - d.loc) / d.scale if low is not None else torch.full_like(d.loc, -math.inf)
    b = (high - d.loc) / d.scale if high is not None else torch.full_like(d.loc, math.inf)
    upper = a > 0
    return upper, torch.where(upper, -b, a), torch.where(upper, -a, b)


class _Point(_Node):
    def __init__(self, value: torch.Tensor, where: str) -> None:
        self.value, self.where = value, where

    def density(self, x: torch.Tensor) -> torch.Tensor:
        return torch.where(x == self.value, 0.0, -math.inf).to(self.value.dtype)

    def mass(
        self, low: torch.Tensor | None = None, high: torch.Tensor | None = None
    ) -> torch.Tensor:
        inside = torch.ones_like(self.value, dtype=torch.bool)
        if low is not None:
            inside = inside & (self.value >= low)
        if high is not None:
            inside = inside & (self.value <= high)
        return torch.where(inside, 0.0, -math.inf).to(self.value.dtype)

    def draw(self, shape: torch.Size) -> torch.Tensor:
        return self.value.expand(*shape, *self.value.shape).clone()


class _Restrict(_Node):
    def __init__(
        self, base: _Node, low: torch.Tensor | None, high: torch.Tensor | None, where: str
    ) -> None:
        self.base, self.low, self.high, self.where = base, low, high, where

    def _inside(self, x: torch.Tensor) -> torch.Tensor:
        inside = torch.ones_like(x, dtype=torch.bool)
        if self.low is not None:
            inside = inside & (x >= self.low)
        if self.high is not None:
            inside = inside & (x <= self.high)
        return inside

    def density(self, x: torch.Tensor) -> torch.Tensor:
        return torch.where(self._inside(x), self.base.density(x), -math.inf)

    def mass(
        self, low: torch.Tensor | None = None, high: torch.Tensor | None = None
    ) -> torch.Tensor:
        return self.base.mass(
            _tighter(low, self.low, torch.maximum), _tighter(high, self.high, torch.minimum)
        )

    def draw(self, shape: torch.Size) -> torch.Tensor:
        base = self.base
        if isinstance(base, _Leaf) and base.discrete:
            counted = self._counted(base, shape)
            if counted is not None:
                return counted
        if isinstance(base, _Leaf) and not base.discrete:
            x = self._inverted(base, shape)
            if x is not None and bool(torch.isfinite(x).all()) and bool(self._inside(x).all()):
                return x
        x = base.draw(shape)
        for _ in range(_ROUNDS):
            outside = ~self._inside(x)
            if not bool(outside.any()):
                return x
            x = torch.where(outside, base.draw(shape), x)
        raise QvrRuntimeError(
            f"{self.where}: no draw of the base landed inside Restrict's interval in "
            f"{_ROUNDS} rounds: its mass there is too small to draw by rejection"
        )

    def _counted(self, base: _Leaf, shape: torch.Size) -> torch.Tensor | None:
        """Draws of a count family restricted to [low, high] by its probabilities over the
        whole numbers there (a Poisson above 0 at a rate of 0.001 draws 1 at once, where
        drawing again until inside would take a thousand rounds); up to 20 standard
        deviations past its mean where no upper end is given. None where that is past
        `_MOST_COUNTS` numbers (drawn again until inside instead)."""
        d = base.dist
        start = torch.zeros((), dtype=base.dtype) if self.low is None else torch.ceil(self.low)
        start = start.clamp(min=0.0)
        try:
            far = d.mean + 20 * d.stddev + 20
        except NotImplementedError:
            return None
        end = torch.floor(self.high) if self.high is not None else far
        n = int((torch.minimum(end, far) - start).max()) + 1 if end.numel() else 1
        if not 0 < n <= _MOST_COUNTS:
            return None
        k = torch.arange(n, dtype=base.dtype).reshape(-1, *([1] * len(d.batch_shape)))
        counts = start + k  # (n, *batch)
        p = torch.where(counts <= end, torch.exp(base.density(counts)), 0.0)
        total = p.sum(0)
        if not bool((total > 0).all()):
            return None
        cumulative = torch.cumsum(p / total, 0)  # (n, *batch)
        u = torch.rand(shape + d.batch_shape, dtype=base.dtype)
        laid = cumulative.reshape(n, *([1] * len(shape)), *d.batch_shape)
        index = (laid < u.unsqueeze(0)).sum(0).clamp(max=n - 1)  # the first k with F(k) >= u
        return start + index.to(base.dtype)

    def _inverted(self, base: _Leaf, shape: torch.Size) -> torch.Tensor | None:
        """Draws by the inverse CDF at a uniform draw between the ends' CDFs; a Normal's
        from the lower tail, reflected where both ends lie above its mean, so a cut nine
        scales out (whose CDF rounds to 1) still draws. None without an inverse CDF."""
        u = torch.rand(shape + base.dist.batch_shape, dtype=base.dtype)
        d = base.dist
        if isinstance(d, D.Normal):
            upper, lo, hi = _reflected(d, self.low, self.high)
            # torch's ndtr is 0 below about -8.3; exp of log_ndtr keeps the tail
            p_lo, p_hi = (
                torch.exp(torch.special.log_ndtr(lo)),
                torch.exp(torch.special.log_ndtr(hi)),
            )
            z = torch.special.ndtri(p_lo + (p_hi - p_lo) * u)
            return d.loc + d.scale * torch.where(upper, -z, z)
        try:
            lower = support_cdf(d, self.low) if self.low is not None else torch.zeros_like(u)
            upper_p = support_cdf(d, self.high) if self.high is not None else torch.ones_like(u)
            return d.icdf(lower + (upper_p - lower) * u)
        except NotImplementedError:
            return None


def _tighter(
    a: torch.Tensor | None,
    b: torch.Tensor | None,
    pick: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
) -> torch.Tensor | None:
    """The tighter of two ends, either of which may be missing (`pick`: torch.maximum for
    lower ends, torch.minimum for upper ones)."""
    if a is None:
        return b
    if b is None:
        return a
    return pick(a, b)


class _Normalize(_Node):
    def __init__(self, base: _Node, where: str) -> None:
        self.base, self.where = base, where

    def density(self, x: torch.Tensor) -> torch.Tensor:
        mass = self.base.mass()  # none (an interval outside the support): no density, not NaN
        return torch.where(torch.isneginf(mass), -math.inf, self.base.density(x) - mass)

    def mass(
        self, low: torch.Tensor | None = None, high: torch.Tensor | None = None
    ) -> torch.Tensor:
        total = self.base.mass()
        return torch.where(torch.isneginf(total), -math.inf, self.base.mass(low, high) - total)

    def draw(self, shape: torch.Size) -> torch.Tensor:
        return self.base.draw(shape)


class _Pushforward(_Node):
    def __init__(self, base: _Node, bijection: T.Transform, where: str) -> None:
        self.base, self.f, self.where = base, bijection, where

    def density(self, x: torch.Tensor) -> torch.Tensor:
        inside = self.f.codomain.check(x)
        safe = torch.where(inside, x, _inside_point(self.f.codomain, x))
        y = self.f.inv(safe)
        out = self.base.density(y) - self.f.log_abs_det_jacobian(y, safe)
        return torch.where(inside, out, -math.inf)

    def mass(
        self, low: torch.Tensor | None = None, high: torch.Tensor | None = None
    ) -> torch.Tensor:
        # every bijection here increases, so [low, high] comes from [f^-1(low), f^-1(high)]
        return self.base.mass(
            self.f.inv(low) if low is not None else None,
            self.f.inv(high) if high is not None else None,
        )

    def draw(self, shape: torch.Size) -> torch.Tensor:
        return self.f(self.base.draw(shape))


class _Mixture(_Node):
    def __init__(self, weights: torch.Tensor, parts: list[_Node], where: str) -> None:
        self.log_w = torch.log(weights)  # the last axis: one weight per component
        self.parts, self.where = parts, where

    def _weighed(self, each: list[torch.Tensor]) -> torch.Tensor:
        stacked = torch.stack(torch.broadcast_tensors(*each), dim=-1)
        return torch.logsumexp(self.log_w + stacked, dim=-1)

    def density(self, x: torch.Tensor) -> torch.Tensor:
        return self._weighed([p.density(x) for p in self.parts])

    def mass(
        self, low: torch.Tensor | None = None, high: torch.Tensor | None = None
    ) -> torch.Tensor:
        return self._weighed([p.mass(low, high) for p in self.parts])

    def draw(self, shape: torch.Size) -> torch.Tensor:
        masses = torch.stack(torch.broadcast_tensors(*(p.mass() for p in self.parts)), dim=-1)
        pick = D.Categorical(logits=self.log_w + masses).sample(shape)
        draws = torch.stack(torch.broadcast_tensors(*(p.draw(shape) for p in self.parts)), dim=-1)
        chosen = pick.unsqueeze(-1).expand(*draws.shape[:-1], 1)
        return draws.gather(-1, chosen).squeeze(-1)


class MeasureDistribution(D.Distribution):
    """The measure of a step, normalised at its boundary: log density less log mass."""

    arg_constraints: dict[str, D.constraints.Constraint] = {}  # noqa: RUF012  # torch's API
    has_rsample = False

    def __init__(self, node: _Node, batch: torch.Size, support: D.constraints.Constraint) -> None:
        self.node, self._support = node, support
        super().__init__(batch, validate_args=False)

    @property
    def support(self) -> D.constraints.Constraint:
        return self._support

    def log_prob(self, value: torch.Tensor) -> torch.Tensor:
        mass = self.node.mass()  # none (an interval outside the support): no density, not NaN
        return torch.where(torch.isneginf(mass), -math.inf, self.node.density(value) - mass)

    def sample(self, sample_shape: torch.Size | list[int] | tuple[int, ...] = ()) -> torch.Tensor:
        with torch.no_grad():
            return self.node.draw(torch.Size(sample_shape))

    def expand(
        self, batch_shape: torch.Size | list[int] | tuple[int, ...], _instance: object = None
    ) -> MeasureDistribution:
        if torch.Size(batch_shape) != self.batch_shape:
            raise NotImplementedError("a measure is built at its site's batch shape")
        return self


def measure_distribution(
    site: Site,
    measure: Measure,
    value: Mapping[int, torch.Tensor],
    batch: tuple[int, ...],
    where: str,
) -> D.Distribution:
    """The distribution of `site`, whose measure is `measure`; `value` holds every
    argument's tensor by `id(argument)`, `batch` the site's plates' axes. An
    `Independent` is the base's, its innermost `joined` axes one event (torch's
    `Independent`), so its log density has one term per whole vector."""
    full = batch
    for name, a in measure.arguments():  # each argument's batch axes (a vector's own last)
        param = FAMILIES[name].param(a.param)
        t = value[id(a)]
        full = broadcast_shape(full, tuple(t.shape[: t.dim() - (param.rank if param else 0)]))
    node = _node(measure, value, full, where)
    args = {a.param: value[id(a)] for a in measure.args}
    support = site.support
    assert support is not None
    try:
        constraint = torch_constraint(support, args)
    except KeyError:  # a kind no torch constraint names (none a measure gives)
        constraint = D.constraints.real
    drawn = MeasureDistribution(node, torch.Size(full), constraint)
    if not measure.joined:
        return drawn
    if measure.joined > len(full):
        raise QvrRuntimeError(
            f"{where}: Independent joins {measure.joined} plates but the step has {len(full)} axes"
        )
    return D.Independent(drawn, measure.joined)


def _node(
    m: Measure, value: Mapping[int, torch.Tensor], batch: tuple[int, ...], where: str
) -> _Node:
    family = FAMILIES[m.family]

    def arg(name: str) -> torch.Tensor | None:
        a = next((a for a in m.args if a.param == name), None)
        if a is None:
            return None
        param = family.param(name)
        t = value[id(a)]
        rank = param.rank if param is not None else 0
        event = tuple(t.shape[t.dim() - rank :]) if rank else ()
        return t.expand(torch.Size((*batch, *event)))

    parts = [_node(p, value, batch, where) for p in m.parts]
    match family.measure:
        case None:
            args = {a.param: arg(a.param) for a in m.args}
            full = completed(family, {k: v for k, v in args.items() if v is not None}, None)
            wide = {
                k: v if v.dim() >= len(batch) else v.expand(torch.Size(batch))
                for k, v in full.items()
            }
            dtype = next((v.dtype for v in wide.values() if v.is_floating_point()), torch.float64)
            try:
                centre = wide.get(family.symmetric_about) if family.symmetric_about else None
                dist = make_distribution(family.name, wide)
                return _Leaf(family.name, dist, dtype, where, centre)
            except ValueError as e:  # torch refused an argument's value (a rate below 0)
                raise QvrRuntimeError(
                    f"{where}: an argument of {family.name} is outside what it allows "
                    f"({first_line(e)})"
                ) from None
        case "point":
            point = arg("value")
            assert point is not None
            return _Point(point, where)
        case "restrict":
            return _Restrict(parts[0], arg("low"), arg("high"), where)
        case "truncated":
            return _Normalize(_Restrict(parts[0], arg("low"), arg("high"), where), where)
        case "rescaled":
            return _Normalize(parts[0], where)
        case "pushforward":
            return _Pushforward(parts[0], _BIJECTIONS[m.bijector or "Identity"], where)
        case "mixture":
            weights = arg("weights")
            assert weights is not None
            return _Mixture(weights, parts, where)
        case "independent":  # the step's whole measure: `measure_distribution` joins axes
            return parts[0]
