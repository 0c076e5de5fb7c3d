"""Distribution families of `role=kernel` morphisms (`~ Normal` and friends).

A family turns the parameter network's output (and, for the Normal-like
families, a standard deviation) into draws, a mean and log-densities over
the kernel's codomain. Families hold no parameters: the kernel owns them,
so parameter names stay short (`cell.raw_scale`, not `cell.family.raw_scale`).

`mean` is the deterministic stand-in used along the canonical path: the
distribution's mean where it has a closed form inside the codomain
(Normal, LogNormal, Dirichlet), the median `sigmoid(loc)` for LogitNormal,
and the most probable value for the discrete families, since a FinSet has
no average.

Distributions are built with `validate_args=False`: a NaN produced during
inference propagates to the loss, where inference reports it by step,
instead of surfacing as a torch constraint error deep inside a kernel.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from functools import cached_property
from typing import Any, ClassVar

import torch
import torch.nn.functional as F
from torch import distributions as D
from torch.distributions import constraints as C

from qvr_core.builtins.families import FAMILIES as REGISTRY
from qvr_core.builtins.families import Param, free_entries, triangular
from qvr_core.check.module import Given as GivenValue
from qvr_core.check.types import Product
from qvr_core.runtime.distributions import (
    FlatPositiveDefinite,
    draw_within,
    inverted,
    make_distribution,
    torch_constraint,
)
from qvr_core.runtime.horseshoe import Horseshoe as HorseshoePrior
from qvr_core.runtime.tensors import is_index, unconstrained_shape
from qvr_core.runtime.wishart import RecordableWishart


def constrain(raw: torch.Tensor, cod: Product) -> torch.Tensor:
    """Map unconstrained columns into each factor's space (softplus, sigmoid, softmax)."""
    out: list[torch.Tensor] = []
    start = 0
    for f in cod.factors:
        c = raw[..., start : start + f.width]
        if f.kind == "positive":
            c = F.softplus(c)
        elif f.kind == "unit":
            c = torch.sigmoid(c)
        elif f.kind == "simplex":
            c = torch.softmax(c, dim=-1)
        out.append(c)
        start += f.width
    return out[0] if len(out) == 1 else torch.cat(out, dim=-1)


class Family:
    """Base: a family over the codomain `cod`; `params` is the network output.

    What the network outputs and whether a standard deviation is read are the
    registry's facts (`qvr_core.builtins`, the family's kernel form). A subclass is
    named after its family, and that name is its registry key (`name`), so the
    registry's names are not written again here."""

    name: ClassVar[str] = ""
    #: whether `mean` reads the standard deviation (LogNormal's does): a recurrence
    #: applies its cell's mean at every step, and the scale's softplus costs a step one
    #: operation more when nothing reads it
    mean_reads_std: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        cls.name = cls.__name__

    def __init__(
        self,
        cod: Product,
        draw: Sequence[int] = (),
        options: Sequence[tuple[str, float | str]] = (),
    ) -> None:
        self.cod = cod
        self.spec = REGISTRY[self.name]
        assert self.spec.kernel is not None, f"{self.name} has no morphism form"
        self.form = self.spec.kernel
        self.draw = tuple(draw)  # a whole draw's shape (the checker's); () otherwise
        self.options = dict(options)

    @property
    def stochastic(self) -> bool:
        return self.spec.stochastic

    @property
    def uses_scale(self) -> bool:
        """Reads a standard deviation (fixed `scale` or learned)."""
        return self.form.learns_scale

    @property
    def held(self) -> tuple[Param, ...]:
        """The parameters the kernel holds for the family, learned, and hands it in place
        of a standard deviation (a GP's length scale and amplitude)."""
        return self.spec.params if self.form.outputs == "hyperparameters" else ()

    @property
    def reads_input(self) -> bool:
        """The family reads the input's features themselves, not a network's output (a
        GP's locations)."""
        return self.form.outputs == "hyperparameters" and self.form.reads_input

    @property
    def param_width(self) -> int:
        return self.spec.network_width(self.cod.factors, self.draw, self.options)

    def draw_constraint(self) -> C.Constraint | None:
        """The exact support of a draw where the codomain's kinds do not say it (a Wishart
        draw's, positive-definite matrices held row by row); None where they do."""
        return None

    def rsample(self, params: torch.Tensor, std: torch.Tensor | None) -> torch.Tensor:
        raise NotImplementedError

    def mean(self, params: torch.Tensor, std: torch.Tensor | None) -> torch.Tensor:
        raise NotImplementedError

    def log_prob(
        self, params: torch.Tensor, std: torch.Tensor | None, value: torch.Tensor
    ) -> torch.Tensor:
        raise NotImplementedError


class Normal(Family):
    def dist(self, params: torch.Tensor, std: torch.Tensor | None) -> D.Distribution:
        assert std is not None
        return D.Normal(params, std.expand_as(params), validate_args=False)

    def rsample(self, params: torch.Tensor, std: torch.Tensor | None) -> torch.Tensor:
        return self.dist(params, std).rsample()

    def mean(self, params: torch.Tensor, std: torch.Tensor | None) -> torch.Tensor:
        return params

    def log_prob(
        self, params: torch.Tensor, std: torch.Tensor | None, value: torch.Tensor
    ) -> torch.Tensor:
        return self.dist(params, std).log_prob(value).sum(-1)


class LogNormal(Normal):
    mean_reads_std = True

    def dist(self, params: torch.Tensor, std: torch.Tensor | None) -> D.Distribution:
        assert std is not None
        return D.LogNormal(params, std.expand_as(params), validate_args=False)

    def mean(self, params: torch.Tensor, std: torch.Tensor | None) -> torch.Tensor:
        assert std is not None
        return torch.exp(params + 0.5 * std**2)


class LogitNormal(Normal):
    def dist(self, params: torch.Tensor, std: torch.Tensor | None) -> D.Distribution:
        assert std is not None
        base = D.Normal(params, std.expand_as(params), validate_args=False)
        return D.TransformedDistribution(base, [D.SigmoidTransform()], validate_args=False)

    def mean(self, params: torch.Tensor, std: torch.Tensor | None) -> torch.Tensor:
        return torch.sigmoid(params)

    def log_prob(
        self, params: torch.Tensor, std: torch.Tensor | None, value: torch.Tensor
    ) -> torch.Tensor:
        return self.dist(params, std).log_prob(value).sum(-1)


class Dirichlet(Family):
    """One Dirichlet per Simplex factor; concentrations `softplus(params) + 1e-3`."""

    def _split(self, t: torch.Tensor) -> list[torch.Tensor]:
        return list(torch.split(t, [f.width for f in self.cod.factors], dim=-1))

    def _alphas(self, params: torch.Tensor) -> list[torch.Tensor]:
        return [F.softplus(p) + 1e-3 for p in self._split(params)]

    def rsample(self, params: torch.Tensor, std: torch.Tensor | None) -> torch.Tensor:
        return torch.cat(
            [D.Dirichlet(a, validate_args=False).rsample() for a in self._alphas(params)], dim=-1
        )

    def mean(self, params: torch.Tensor, std: torch.Tensor | None) -> torch.Tensor:
        return torch.cat([a / a.sum(-1, keepdim=True) for a in self._alphas(params)], dim=-1)

    def log_prob(
        self, params: torch.Tensor, std: torch.Tensor | None, value: torch.Tensor
    ) -> torch.Tensor:
        parts = zip(self._alphas(params), self._split(value), strict=True)
        return sum(D.Dirichlet(a, validate_args=False).log_prob(v) for a, v in parts)


class Categorical(Family):
    """Independent categoricals, one per FinSet factor, from one block of logits each."""

    def _logits(self, params: torch.Tensor) -> list[torch.Tensor]:
        return list(torch.split(params, [f.size for f in self.cod.factors], dim=-1))

    def _pack(self, cols: list[torch.Tensor]) -> torch.Tensor:
        return cols[0] if is_index(self.cod) else torch.stack(cols, dim=-1)

    def _unpack(self, value: torch.Tensor) -> list[torch.Tensor]:
        return [value] if is_index(self.cod) else list(value.unbind(-1))

    def rsample(self, params: torch.Tensor, std: torch.Tensor | None) -> torch.Tensor:
        return self._pack(
            [D.Categorical(logits=lg, validate_args=False).sample() for lg in self._logits(params)]
        )

    def mean(self, params: torch.Tensor, std: torch.Tensor | None) -> torch.Tensor:
        return self._pack([lg.argmax(-1) for lg in self._logits(params)])

    def log_prob(
        self, params: torch.Tensor, std: torch.Tensor | None, value: torch.Tensor
    ) -> torch.Tensor:
        parts = zip(self._logits(params), self._unpack(value), strict=True)
        return sum(
            D.Categorical(logits=lg, validate_args=False).log_prob(v.long()) for lg, v in parts
        )


class Bernoulli(Categorical):
    """One logit per `FinSet 2` factor; values are int64 0 or 1."""

    def _logits(self, params: torch.Tensor) -> list[torch.Tensor]:
        return list(params.unbind(-1))

    def rsample(self, params: torch.Tensor, std: torch.Tensor | None) -> torch.Tensor:
        return self._pack(
            [
                D.Bernoulli(logits=lg, validate_args=False).sample().long()
                for lg in self._logits(params)
            ]
        )

    def mean(self, params: torch.Tensor, std: torch.Tensor | None) -> torch.Tensor:
        return self._pack([(lg > 0).long() for lg in self._logits(params)])

    def log_prob(
        self, params: torch.Tensor, std: torch.Tensor | None, value: torch.Tensor
    ) -> torch.Tensor:
        parts = zip(self._logits(params), self._unpack(value), strict=True)
        return sum(
            D.Bernoulli(logits=lg, validate_args=False).log_prob(v.to(lg.dtype)) for lg, v in parts
        )


class Deterministic(Family):
    """A Dirac kernel at the network output, mapped into the codomain's space."""

    def rsample(self, params: torch.Tensor, std: torch.Tensor | None) -> torch.Tensor:
        return constrain(params, self.cod)

    def mean(self, params: torch.Tensor, std: torch.Tensor | None) -> torch.Tensor:
        return constrain(params, self.cod)

    def log_prob(
        self, params: torch.Tensor, std: torch.Tensor | None, value: torch.Tensor
    ) -> torch.Tensor:
        return params.new_zeros(params.shape[:-1])


class Parametric(Family):
    """A family whose parameters are all numbers (Gamma, Beta, StudentT, ...): the network
    gives every parameter for each codomain column, softplus'd into a positive one and
    sigmoid'ed into one in [0, 1]; the torch distribution is the registry's factory.

    Its deterministic stand-in on the canonical path is the distribution's mean, or its
    mode where the mean is not finite (a Cauchy's, a HalfCauchy's)."""

    def dist(self, params: torch.Tensor) -> D.Distribution:
        chunks = torch.split(params, self.cod.width, dim=-1)
        args = {p.name: _into(p, c) for p, c in zip(self.spec.params, chunks, strict=True)}
        return make_distribution(self.name, args)

    def rsample(self, params: torch.Tensor, std: torch.Tensor | None) -> torch.Tensor:
        return draw_within(self.dist(params))

    def mean(self, params: torch.Tensor, std: torch.Tensor | None) -> torch.Tensor:
        return stand_in(self.dist(params))

    def log_prob(
        self, params: torch.Tensor, std: torch.Tensor | None, value: torch.Tensor
    ) -> torch.Tensor:
        return self.dist(params).log_prob(value).sum(-1)


class Given(Family):
    """`~ F(args)` on a morphism: the parameters its declaration gives are fixed numbers
    (quivers' transpilers draw `F(args)` at every `sample x <- k`); the network gives
    the others, one output per codomain coordinate for each, mapped into its
    constraint, as `Parametric` does for them all. A number family draws every
    coordinate of the codomain independently; a vector family (a Dirichlet, a
    relaxed one-hot) draws one vector filling a codomain of one object.

    Values given per coordinate broadcast against the coordinates; a draw keeps to the
    support the given bounds fix (`into_support`), and a value outside it scores
    -inf (torch's own density is not 0 there, a Pareto's below its scale)."""

    def __init__(
        self,
        family: str,
        cod: Product,
        given: Sequence[tuple[str, GivenValue]],
        network: Sequence[str],
    ) -> None:
        self.cod = cod
        self.spec = REGISTRY[family]
        self.given = {k: torch.tensor(v, dtype=torch.get_default_dtype()) for k, v in given}
        self.network: tuple[Param, ...] = tuple(
            p for p in self.spec.params if p.name in set(network)
        )
        self.event = cod.width if self.spec.event_rank else None
        self.constraint = torch_constraint(self.spec.support, self.given)
        # a value inside the support, scored in place of one outside (then masked to -inf):
        # torch's checks refuse such a value instead of scoring it 0
        to = D.biject_to(self.constraint)
        self.inside = to(torch.zeros(unconstrained_shape(to, (cod.width,))))

    @property
    def uses_scale(self) -> bool:
        return False

    @property
    def held(self) -> tuple[Param, ...]:
        return ()

    @property
    def reads_input(self) -> bool:
        return False

    @property
    def param_width(self) -> int:
        return len(self.network) * self.cod.width

    def dist(self, params: torch.Tensor) -> D.Distribution:
        args = {k: v.to(params) for k, v in self.given.items()}
        if self.network:
            chunks = torch.split(params, self.cod.width, dim=-1)
            args.update({p.name: _into(p, c) for p, c in zip(self.network, chunks, strict=True)})
        for k, v in args.items():  # a number spread over a vector parameter's entries
            param = self.spec.param(k)
            if self.event is not None and param is not None and param.rank == 1 and not v.dim():
                args[k] = v.expand(self.event)
        batch = (
            params.shape[:-1] if self.event is not None else (*params.shape[:-1], self.cod.width)
        )
        return make_distribution(self.spec.name, args).expand(batch)

    def rsample(self, params: torch.Tensor, std: torch.Tensor | None) -> torch.Tensor:
        return draw_within(self.dist(params), self.constraint)

    def mean(self, params: torch.Tensor, std: torch.Tensor | None) -> torch.Tensor:
        return stand_in(self.dist(params))

    def log_prob(
        self, params: torch.Tensor, std: torch.Tensor | None, value: torch.Tensor
    ) -> torch.Tensor:
        d = self.dist(params)
        inside = self.constraint.check(value)
        where = inside if self.event is None else inside.unsqueeze(-1)
        lp = d.log_prob(torch.where(where, value, self.inside.to(value)))
        lp = torch.where(inside, lp, -math.inf)
        return lp if self.event is not None else lp.sum(-1)


def _into(param: Param, raw: torch.Tensor) -> torch.Tensor:
    """A network's output mapped into the parameter's constraint (a probability vector by
    softmax over the draw's entries)."""
    kind = param.constraint.kind
    if kind in ("positive", "positive_vector"):
        return F.softplus(raw) + param.network_floor
    if kind == "simplex":
        return torch.softmax(raw, dim=-1)
    return torch.sigmoid(raw) if kind == "unit_interval" else raw


#: torch's distributions whose mean is not finite at some valid parameters: a Cauchy's
#: is undefined, a Pareto's or an inverse gamma's infinite for a shape <= 1, a
#: Categorical's (of labels) NaN, a log-normal's past float range for a scale of 40 or
#: so (its mode, exp(loc - scale^2), is not); a Student-t's and an F distribution's are
#: below (`_WRITTEN_OUT`). Every other family's mean is finite wherever its parameters
#: are.
MEAN_MAY_NOT_BE_FINITE: tuple[type[D.Distribution], ...] = (
    D.LogNormal,
    D.Cauchy,
    D.HalfCauchy,
    D.Pareto,
    D.GeneralizedPareto,
    D.InverseGamma,
    D.Categorical,
)


def _student_t_stand_in(d: D.StudentT) -> torch.Tensor:
    """Its mean where df > 1 and its mode everywhere are both `loc`."""
    return d.loc


def _fisher_snedecor_stand_in(d: D.FisherSnedecor) -> torch.Tensor:
    """Its mean where df2 > 2, else its mode where df1 > 2, else NaN (as torch's)."""
    df1, df2 = d.df1, d.df2
    mean = df2 / (df2 - 2)
    mode = (df1 - 2) / df1 * df2 / (df2 + 2)
    return torch.where(df2 > 2, mean, torch.where(df1 > 2, mode, torch.nan))


#: Stand-ins written out where torch computes a family's mean by indexing with a mask of
#: its parameters' values (`mean[df <= 1] = nan`), which `vmap` cannot batch.
_WRITTEN_OUT: tuple[tuple[type[D.Distribution], Callable[[Any], torch.Tensor]], ...] = (
    (D.StudentT, _student_t_stand_in),
    (D.FisherSnedecor, _fisher_snedecor_stand_in),
)


def stand_in(d: D.Distribution) -> torch.Tensor:
    """The mean where it is finite, else the mode; for the relaxed (Concrete) families,
    which torch gives neither, the draw at zero noise, `sigmoid(logits / temperature)`
    (a relaxed Bernoulli's median) and `softmax(logits / temperature)`.

    Which of the two stands in is decided element by element with `where`, and only for
    the families whose mean may not be finite (`MEAN_MAY_NOT_BE_FINITE`), never by reading
    the values back into Python: NUTS evaluates the chains together under `vmap` and
    records their potential (`inference.many`), and a read stops both (the GRU cells of
    quivers' language models met it at every step). Nor is the mode computed for the
    others: a mode without a finite derivative (a uniform's is NaN) would make the
    gradient through `where` NaN even where the mean is chosen."""
    if isinstance(d, D.RelaxedBernoulli):
        return torch.sigmoid(d.logits / d.temperature)
    if isinstance(d, D.RelaxedOneHotCategorical):
        return torch.softmax(d.logits / d.temperature, dim=-1)
    inner = _innermost(d)
    for family, written_out in _WRITTEN_OUT:
        if isinstance(inner, family):
            return written_out(inner)
    try:
        mean = d.mean
    except NotImplementedError:
        return d.mode
    if not isinstance(inner, MEAN_MAY_NOT_BE_FINITE):
        return mean
    return torch.where(torch.isfinite(mean), mean, d.mode)


def _innermost(d: D.Distribution) -> D.Distribution:
    """`d` without the `Independent` wrappers that only regroup its dimensions."""
    while isinstance(d, D.Independent):
        d = d.base_dist
    return d


class Whole(Family):
    """A family whose one draw is a vector or a matrix filling the codomain's one Real
    object, row by row (a registry's `structured` kernel form, quivers' conditional
    multivariate families). The network gives each parameter whole, its free entries in
    the registry's order: a Cholesky factor's lower triangle (the diagonal softplus'd),
    positive entries softplus'd, the others as they are. `args` are the distribution's
    arguments; a subclass may map them further (a Wishart's degrees of freedom)."""

    @cached_property
    def _layout(self) -> tuple[tuple[Param, tuple[int, ...]], ...]:
        """Each parameter with its shape, in the network's order (fixed at compile time)."""
        return self.spec.structured_layout(self.draw, self.options)

    def args(self, params: torch.Tensor) -> dict[str, torch.Tensor]:
        counts = [free_entries(p, dims) for p, dims in self._layout]
        chunks = torch.split(params, counts, dim=-1)
        return {
            p.name: _tril(chunk, dims[0], p.network_floor)
            if triangular(p)
            else _into(p, chunk.reshape((*params.shape[:-1], *dims)))
            for (p, dims), chunk in zip(self._layout, chunks, strict=True)
        }

    def dist(self, params: torch.Tensor) -> D.Distribution:
        args = self.args(params)
        for p in self.spec.params:  # a covariance given as its Cholesky factor, as quivers does
            if p.constraint.kind == "positive_definite":
                args[p.name] = args[p.name] @ args[p.name].mT
        return make_distribution(self.name, args)

    def rsample(self, params: torch.Tensor, std: torch.Tensor | None) -> torch.Tensor:
        return self._flat(self.dist(params).rsample())

    def mean(self, params: torch.Tensor, std: torch.Tensor | None) -> torch.Tensor:
        """The mean: the first parameter, the location, of the Gaussian families."""
        return self._flat(self.args(params)[self.spec.params[0].name])

    def log_prob(
        self, params: torch.Tensor, std: torch.Tensor | None, value: torch.Tensor
    ) -> torch.Tensor:
        """The density of each draw; -inf for a draw outside the family's support (a
        Wishart draw whose rounding left it not positive definite, where NUTS moved it),
        the point a sampler rejects, where torch's check of the value would raise."""
        dist = self.dist(params)
        draw = value.unflatten(-1, self.draw)
        try:
            inside = None if dist.support is None else dist.support.check(draw)
        except NotImplementedError:
            inside = None
        if inside is None:
            return dist.log_prob(draw)
        dist._validate_args = False  # the check above, kept as a value
        scores = dist.log_prob(draw)
        return torch.where(inside, scores, torch.full_like(scores, -torch.inf))

    def _flat(self, draw: torch.Tensor) -> torch.Tensor:
        """A draw held as the codomain holds it, row by row."""
        return draw.flatten(-len(self.draw)) if len(self.draw) > 1 else draw


class MultivariateNormal(Whole):
    """quivers' `ConditionalMultivariateNormal`: the mean and a Cholesky factor per input."""


class LowRankMVN(Whole):
    """quivers' `ConditionalLowRankMVN`: Σ = W Wᵀ + diag(D), W of rank `rank=` (2 unless
    given) per input."""


class MatrixNormal(Whole):
    """A matrix over the `over=` sets: row-major vec(X) ~ Normal(vec M, U ⊗ V), U and V from
    the network's Cholesky factors (quivers' `ConditionalMatrixNormal`, whose docstring
    gives this meaning)."""


class Wishart(Whole):
    """quivers' `ConditionalWishart`: df = softplus + K (above K - 1, where the density is
    defined) and the scale's Cholesky factor per input; the mean df L Lᵀ is the stand-in."""

    def args(self, params: torch.Tensor) -> dict[str, torch.Tensor]:
        args = super().args(params)
        (df,) = (p for p in self.spec.params if p.rank == 0)
        # quivers: softplus(raw) + K; `_into` added the floor
        args[df.name] = args[df.name] - df.network_floor + self.draw[-1]
        return args

    def rsample(self, params: torch.Tensor, std: torch.Tensor | None) -> torch.Tensor:
        with warnings.catch_warnings():  # torch draws a singular matrix again, and says so
            warnings.filterwarnings("ignore", "Singular sample detected")
            return super().rsample(params, std)

    def mean(self, params: torch.Tensor, std: torch.Tensor | None) -> torch.Tensor:
        args = self.args(params)
        df, tril = (args[p.name] for p in self.spec.params)
        return self._flat(df[..., None, None] * (tril @ tril.mT))

    def draw_constraint(self) -> C.Constraint | None:
        return FlatPositiveDefinite(self.draw[-1])


class InverseWishart(Wishart):
    """quivers' `ConditionalInverseWishart`: the inverse of a Wishart draw of that kernel's
    parameters (an inverse Wishart of scale Ψ = (L Lᵀ)⁻¹); the stand-in is its mean
    Ψ / (df - K - 1) where df > K + 1, else its mode Ψ / (df + K + 1)."""

    def dist(self, params: torch.Tensor) -> D.Distribution:
        args = self.args(params)
        df, tril = (args[p.name] for p in self.spec.params)
        return inverted(RecordableWishart(df, tril, validate_args=False))

    def mean(self, params: torch.Tensor, std: torch.Tensor | None) -> torch.Tensor:
        args = self.args(params)
        df, tril = (args[p.name] for p in self.spec.params)
        k = self.draw[-1]
        psi = torch.cholesky_inverse(tril)
        below = torch.where(df > k + 1, df - k - 1, df + k + 1)
        return self._flat(psi / below[..., None, None])


_GP_EPS = 1e-7  # quivers' EPS inside the Matern distance's square root
GP_JITTER = 1e-6  # quivers' default, added to the covariance's diagonal
#: Covariance functions of a GP kernel, by the names its `kernel=` option takes (`d2`: the
#: squared distances, `inner`: the inner products, `ls`: the length scale).
_GP_COVARIANCES: dict[str, Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]] = {
    "rbf": lambda d2, inner, ls: torch.exp(-0.5 * d2 / ls**2),
    "matern52": lambda d2, inner, ls: _matern52(d2, ls),
    "linear": lambda d2, inner, ls: inner,
}


def _matern52(d2: torch.Tensor, ls: torch.Tensor) -> torch.Tensor:
    """Matern nu = 5/2: (1 + sqrt5 r / l + 5 r^2 / 3 l^2) exp(-sqrt5 r / l), as quivers has it."""
    scaled = math.sqrt(5.0) * (d2 + _GP_EPS).sqrt() / ls
    return (1.0 + scaled + 5.0 / 3.0 * d2 / ls**2) * torch.exp(-scaled)


class _HeldDraw(Family):
    """A family whose one draw is `dist`'s, built from the kernel's held numbers (a
    GP's, the horseshoe's) and not from a network: mean 0, drawn and scored by it."""

    def dist(self, params: torch.Tensor, held: torch.Tensor | None) -> D.Distribution:
        raise NotImplementedError

    def rsample(self, params: torch.Tensor, std: torch.Tensor | None) -> torch.Tensor:
        return self.dist(params, std).rsample()

    def mean(self, params: torch.Tensor, std: torch.Tensor | None) -> torch.Tensor:
        return params.new_zeros(*params.shape[:-1], self.draw[0])

    def log_prob(
        self, params: torch.Tensor, std: torch.Tensor | None, value: torch.Tensor
    ) -> torch.Tensor:
        return self.dist(params, std).log_prob(value)


class GP(_HeldDraw):
    """quivers' `ConditionalGaussianProcess`: the codomain's N numbers are the process at N
    locations, the input's features split into N equal parts (quivers reads an input of
    shape (N, D)); mean 0 and covariance amplitude² k(x_i, x_j) + 1e-6 I. `params` are
    those features, `std` the kernel's held (length scale, amplitude)."""

    def dist(self, params: torch.Tensor, held: torch.Tensor | None) -> D.Distribution:
        assert held is not None
        length_scale, amplitude = held.unbind(-1)
        n = self.draw[0]
        x = params.unflatten(-1, (n, params.shape[-1] // n))
        inner = x @ x.mT
        norms = inner.diagonal(dim1=-2, dim2=-1)
        d2 = (norms[..., :, None] + norms[..., None, :] - 2.0 * inner).clamp(min=0.0)
        k = amplitude**2 * _GP_COVARIANCES[str(self.options["kernel"])](d2, inner, length_scale)
        k = k + GP_JITTER * torch.eye(n, dtype=k.dtype, device=k.device)
        loc = k.new_zeros(k.shape[:-1])
        return D.MultivariateNormal(loc, scale_tril=torch.linalg.cholesky(k), validate_args=False)


class Horseshoe(_HeldDraw):
    """quivers' `ConditionalHorseshoe`: each of the codomain's numbers an independent
    horseshoe draw at the kernel's held global scale, the input giving only the batch
    (`params` has no numbers). The draws and density are the runtime's horseshoe, the
    16-Normal mixture a `sample ... <- Horseshoe(tau)` step draws from."""

    def dist(self, params: torch.Tensor, held: torch.Tensor | None) -> D.Distribution:
        assert held is not None
        (scale,) = held.unbind(-1)
        shape = (*params.shape[:-1], self.draw[0])
        return D.Independent(HorseshoePrior(scale.to(params).expand(shape)), 1)


def _tril(raw: torch.Tensor, n: int, floor: float) -> torch.Tensor:
    """An n x n lower-triangular matrix from its n(n+1)/2 entries, row by row, the diagonal
    softplus'd above `floor` (quivers' Cholesky factors from a network)."""
    rows, cols = torch.tril_indices(n, n, device=raw.device)
    tril = raw.new_zeros(*raw.shape[:-1], n, n)
    on = rows == cols
    tril[..., rows[~on], cols[~on]] = raw[..., ~on]
    tril[..., rows[on], cols[on]] = F.softplus(raw[..., on]) + floor
    return tril


#: The morphism form of each family the registry gives one (`KERNEL_FAMILIES`).
KERNELS: dict[str, type[Family]] = {
    cls.name: cls
    for cls in (
        Normal,
        LogNormal,
        LogitNormal,
        Dirichlet,
        Categorical,
        Bernoulli,
        Deterministic,
        MultivariateNormal,
        LowRankMVN,
        MatrixNormal,
        Wishart,
        InverseWishart,
        GP,
        Horseshoe,
    )
}
KERNELS.update(
    {
        name: type(name, (Parametric,), {"__doc__": spec.doc})
        for name, spec in REGISTRY.items()
        if spec.kernel is not None and spec.kernel.outputs == "parameters"
    }
)


def make_family(
    name: str,
    cod: Product,
    draw: Sequence[int] = (),
    options: Sequence[tuple[str, float | str]] = (),
) -> Family:
    return KERNELS[name](cod, draw, options)
