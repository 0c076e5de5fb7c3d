"""The morphism protocol and the declared morphisms (embed, kernel, latent, identity).

Every compiled morphism, leaf or composite, is a `Morphism` with three
public methods:

- `rsample(x)`: a draw, reparameterised where the family allows;
- `mean(x)`: the deterministic path, every kernel replaced by its mean;
- `log_prob(x, value) -> (B,)`: the log-density of `value` along the
  canonical path (every kernel before the last replaced by its mean, the
  value scored under the last one; Dirac kernels score 0).

The public methods check the tensors against the checker's types and turn
shape errors into `QvrRuntimeError`; composites call their parts'
underscored methods so the checks run once, at the boundary. Every method
accepts extra leading batch axes, which is what makes pointwise lifting
over a sequence axis free.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

import torch
import torch.nn.functional as F
from torch import distributions as D
from torch import nn
from torch.distributions import constraints as C

from qvr_core.builtins.algebras import UNDECLARED
from qvr_core.check.module import Given as GivenValue
from qvr_core.check.types import Arrow, Product, ValueType
from qvr_core.runtime.errors import QvrRuntimeError
from qvr_core.runtime.families import Given, constrain, make_family
from qvr_core.runtime.latent_start import initial
from qvr_core.runtime.paramnet import make_paramnet
from qvr_core.runtime.tensors import (
    batch_shape,
    columns,
    describe,
    elem,
    feature_width,
    features,
    is_index,
    received,
    validate,
)

INIT_STD = 1.0  # learned standard deviations start here


def _inverse_softplus(y: float) -> float:
    """The x with softplus(x) = y (y itself past 20, where the two agree in floats)."""
    return math.log(math.expm1(y)) if y < 20.0 else y


_INV_SOFTPLUS_INIT = _inverse_softplus(INIT_STD)


@contextmanager
def runtime_errors(
    who: str,
    x: torch.Tensor | None = None,
    dom: ValueType | None = None,
    *,
    site: str | None = None,
) -> Iterator[None]:
    """Re-raise a torch failure as a QvrRuntimeError that says where and with what input."""
    try:
        yield
    except QvrRuntimeError as e:
        if site is None or e.site is not None:
            raise
        raise QvrRuntimeError(
            f"{who}: {e}", site=site, expected=e.expected, received=e.received
        ) from e
    except (RuntimeError, IndexError) as e:
        expected = describe(dom) if dom is not None else None
        got = received(x) if x is not None else None
        shapes = f" (input {got}, expected {expected})" if expected and got else ""
        raise QvrRuntimeError(
            f"{who}: {e}{shapes}", site=site, expected=expected, received=got
        ) from e


def value_count(p: Product) -> int:
    """How many values a product of FinSets has (rows of a table indexed by it)."""
    return p.size


def flat_index(x: torch.Tensor, p: Product) -> torch.Tensor:
    """The row of a value of a product of FinSets, in row-major order (`(s, t) -> s*|T| + t`)."""
    if is_index(p):
        return x
    cols = columns(x, p)
    index = torch.zeros_like(cols[..., 0])
    for i, f in enumerate(p.factors):
        index = index * f.size + cols[..., i]
    return index


def unflat_index(index: torch.Tensor, p: Product) -> torch.Tensor:
    """The value of a product of FinSets at a row of its table (`flat_index`'s inverse):
    a bare index for one FinSet, else a column per factor."""
    if is_index(p):
        return index
    cols: list[torch.Tensor] = []
    for f in reversed(p.factors):
        cols.append(index % f.size)
        index = torch.div(index, f.size, rounding_mode="floor")
    return torch.stack(cols[::-1], dim=-1)


class Morphism(nn.Module):
    """A compiled morphism expression of type `dom -> cod` (types from the checker)."""

    passthrough = False  # the identity: scoring looks through it

    def __init__(self, arrow: Arrow, label: str) -> None:
        super().__init__()
        self.dom: ValueType = arrow.dom
        self.cod: ValueType = arrow.cod
        self.label = label

    @property
    def stochastic(self) -> bool:
        """False for Dirac morphisms (embeddings, Deterministic kernels, identity, and
        composites of them): a composite is stochastic when one of its leaves is."""
        return any(isinstance(m, Leaf) and m.stochastic for m in self.modules())

    # ------------------------------------------------------------ public

    def value_support(self) -> str | None:
        """`positive`, `unit` or `simplex` when every draw lies there although the codomain
        is a Real object (`~ LogNormal` on `Real`); None when the codomain's kinds say it."""
        return None

    def value_constraint(self) -> C.Constraint | None:
        """The exact support of every draw where no name of `value_support` says it: an
        interval its declaration's numbers bound (`~ Pareto(1.0, 2.0)`: x >= 1)."""
        return None

    def rsample(self, x: torch.Tensor) -> torch.Tensor:
        x = self.check_input(x)
        with runtime_errors(self.label, x, self.dom):
            return self._rsample(x)

    def mean(self, x: torch.Tensor) -> torch.Tensor:
        x = self.check_input(x)
        with runtime_errors(self.label, x, self.dom):
            return self._mean(x)

    def log_prob(self, x: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
        x = self.check_input(x)
        value = validate(value, self.cod, f"{self.label}: value", batch=batch_shape(x, self.dom))
        with runtime_errors(self.label, x, self.dom):
            return self._log_prob(x, value)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.rsample(x)

    def check_input(self, x: torch.Tensor) -> torch.Tensor:
        return validate(x, self.dom, f"{self.label}: input")

    def extra_repr(self) -> str:
        return f"{self.label} : {self.dom.label} -> {self.cod.label}"

    # ------------------------------------------------------ implementation

    def _rsample(self, x: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def _mean(self, x: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def _log_prob(self, x: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def _zeros(self, x: torch.Tensor) -> torch.Tensor:
        """A (batch,) zero log-density: what a Dirac morphism scores."""
        return torch.zeros(
            batch_shape(x, self.dom), dtype=torch.get_default_dtype(), device=x.device
        )


class Leaf(Morphism):
    """A declared morphism (or one replicated copy of one): owns its parameters.

    `key` is its name in the program's `morphisms` table, hence the prefix
    of its parameter names: the declared name, `head_2` for a replicated
    copy, with a `__stack<j>_<i>` suffix inside copy i of the j-th `stack`.
    """

    def __init__(self, key: str, arrow: Arrow) -> None:
        super().__init__(arrow, key)
        self.key = key
        self.dom_p: Product = elem(arrow.dom)
        self.cod_p: Product = elem(arrow.cod)


class Embed(Leaf):
    """`role=embed`: a learnable table with one row per value of the (FinSet) domain.

    Rows are mapped into the codomain's space (identity for Real).
    """

    def __init__(self, key: str, arrow: Arrow) -> None:
        super().__init__(key, arrow)
        self.table = nn.Parameter(torch.randn(value_count(self.dom_p), self.cod_p.width))

    @property
    def stochastic(self) -> bool:
        return False

    def _rsample(self, x: torch.Tensor) -> torch.Tensor:
        return constrain(self.table[flat_index(x, self.dom_p)], self.cod_p)

    _mean = _rsample

    def _log_prob(self, x: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
        return self._zeros(x)


class Kernel(Leaf):
    """`role=kernel ~ F`: a parameter network maps the input's features to F's parameters.

    Normal-like families use the fixed `scale` when given, else a learned
    per-dimension deviation `softplus(raw_scale)`. `~ F(args)` (`given`: the parameters
    the declaration fixes, `network`: those the network gives) is the `Given` family;
    when the declaration fixes them all there is no network, and every input has the
    same distribution.
    """

    def __init__(
        self,
        key: str,
        arrow: Arrow,
        family: str,
        *,
        param_source: str = "mlp",
        hidden_dim: int = 64,
        rank: int | None = None,
        scale: float | None = None,
        given: Sequence[tuple[str, GivenValue]] | None = None,
        network: Sequence[str] = (),
        draw: Sequence[int] = (),
        family_options: Sequence[tuple[str, float | str]] = (),
    ) -> None:
        super().__init__(key, arrow)
        self.family = (
            make_family(family, self.cod_p, draw, family_options)
            if given is None
            else Given(family, self.cod_p, given, network)
        )
        options = dict(family_options)
        for p in self.family.held:  # started where the option of its name says (softplus)
            raw = _inverse_softplus(float(options.get(p.name, 1.0)))
            self.register_parameter(f"raw_{p.name}", nn.Parameter(torch.tensor(raw)))
        self._held_floors = torch.tensor([p.network_floor for p in self.family.held])
        self.net: nn.Module | None = None
        if self.family.param_width:
            self.net = make_paramnet(
                feature_width(self.dom_p), self.family.param_width, param_source, hidden_dim, rank
            )
        self.fixed_scale = scale
        if self.family.uses_scale and scale is not None:
            self.register_buffer("fixed_std", torch.tensor(float(scale)), persistent=False)
        if self.family.uses_scale and scale is None:
            self.raw_scale = nn.Parameter(torch.full((self.cod_p.width,), _INV_SOFTPLUS_INIT))

    @property
    def stochastic(self) -> bool:
        return self.family.stochastic

    def value_support(self) -> str | None:
        if isinstance(self.family, Given):
            name, _ = _named_support(self.family.constraint)
            return None if name is None or {f.kind for f in self.cod_p.factors} == {name} else name
        if {f.kind for f in self.cod_p.factors} != {"real"}:
            return None
        return self.family.spec.support.narrower_object

    def value_constraint(self) -> C.Constraint | None:
        if not isinstance(self.family, Given):
            return self.family.draw_constraint()
        c = self.family.constraint
        _, exact = _named_support(c)
        return None if exact else c

    def std(self) -> torch.Tensor | None:
        """The standard deviation a Normal-like family reads; for a family the kernel holds
        parameters for (a GP), those, positive, in the registry's order."""
        if self.family.held:
            raw = torch.stack([getattr(self, f"raw_{p.name}") for p in self.family.held])
            return F.softplus(raw) + self._held_floors.to(raw)
        if not self.family.uses_scale:
            return None
        if self.fixed_scale is not None:
            return self.fixed_std  # type: ignore[return-value]  # a buffer: a tensor
        return F.softplus(self.raw_scale)

    def params(self, x: torch.Tensor) -> torch.Tensor:
        """The parameter network's output for input x (logits, locations, ...); without a
        network, no numbers for each input."""
        if self.family.reads_input:  # a GP: the locations themselves
            return features(x, self.dom_p)
        if self.net is None:
            shape = (*batch_shape(x, self.dom), 0)
            return torch.zeros(shape, dtype=torch.get_default_dtype(), device=x.device)
        out: torch.Tensor = self.net(features(x, self.dom_p))
        return out

    def _rsample(self, x: torch.Tensor) -> torch.Tensor:
        return self.family.rsample(self.params(x), self.std())

    def _mean(self, x: torch.Tensor) -> torch.Tensor:
        return self.family.mean(self.params(x), self.std() if self.family.mean_reads_std else None)

    def _log_prob(self, x: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
        return self.family.log_prob(self.params(x), self.std(), value)


def _named_support(c: C.Constraint) -> tuple[str | None, bool]:
    """The tightest support `value_support` names (None: real) that holds every value of
    `c`, and whether it is exactly `c`. A Pareto above its scale 1 lies in `positive`
    but is not all of it: inference moves such a latent exactly where it reads the
    program's `site_constraint` (SVI's guide), else in `positive`, where the kernel
    scores the values below 1 -inf."""
    base = c.base_constraint if isinstance(c, C.independent) else c
    if isinstance(base, C._Real):
        return None, True
    if base is C.simplex:
        return "simplex", True
    if base is C.unit_interval:
        return "unit", True
    low = getattr(base, "lower_bound", None)
    high = getattr(base, "upper_bound", None)
    if low is None or not _all(low, lambda t: t >= 0):
        return None, False
    if high is not None and _all(high, lambda t: t <= 1):
        return "unit", _all(low, lambda t: t == 0) and _all(high, lambda t: t == 1)
    return "positive", high is None and _all(low, lambda t: t == 0)


def _all(bound: object, test: Callable[[torch.Tensor], torch.Tensor]) -> bool:
    """`test` holds for a bound, a number or every entry of a tensor."""
    return bool(test(torch.as_tensor(bound)).all())


class CategoricalRows(Leaf):
    """A leaf whose value is a categorical draw over its finite codomain's values (a
    product's in row-major order), from logits its input gives (`_logits`): a draw is a
    value drawn so, the mean the most likely value, a score the log-probability."""

    @property
    def stochastic(self) -> bool:
        return True

    def _logits(self, x: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def _rsample(self, x: torch.Tensor) -> torch.Tensor:
        drawn = D.Categorical(logits=self._logits(x), validate_args=False).sample()
        return unflat_index(drawn, self.cod_p)

    def _mean(self, x: torch.Tensor) -> torch.Tensor:
        return unflat_index(self._logits(x).argmax(-1), self.cod_p)

    def _log_prob(self, x: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
        rows = D.Categorical(logits=self._logits(x), validate_args=False)
        return rows.log_prob(flat_index(value, self.cod_p))


class Latent(CategoricalRows):
    """`role=latent`, or a kernel without a family between finite sets: an N x M
    row-stochastic matrix, the softmax of free `logits` (M: the codomain's values, a
    product's in row-major order); the input's row is drawn from."""

    def __init__(
        self, key: str, arrow: Arrow, scale: float | None = None, init: str | None = None
    ) -> None:
        super().__init__(key, arrow)
        if not (self.dom_p.discrete and self.cod_p.discrete):
            raise QvrRuntimeError(f"{key}: a table needs a FinSet -> FinSet type")
        n, m = value_count(self.dom_p), value_count(self.cod_p)
        # 0 (uniform rows) unless the declaration asks for a drawn start (`latent_start`)
        self.logits = nn.Parameter(initial((n, m), UNDECLARED, max(n, m), scale, init))

    @property
    def matrix(self) -> torch.Tensor:
        return torch.softmax(self.logits, dim=-1)

    def _logits(self, x: torch.Tensor) -> torch.Tensor:
        return self.logits[flat_index(x, self.dom_p)]


class Identity(Morphism):
    """`identity(T)`: returns its input; scoring looks through it."""

    passthrough = True

    @property
    def stochastic(self) -> bool:
        return False

    def _rsample(self, x: torch.Tensor) -> torch.Tensor:
        return x

    _mean = _rsample

    def _log_prob(self, x: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
        return self._zeros(x)
