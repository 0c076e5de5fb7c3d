"""Ordered vectors, which torch has no constraint or transform for: Stan's `ordered[K]`
and `positive_ordered[K]`, the sets a `sample` step's `[constraint=ordered]` (or
`positive_ordered`) holds its value to (`check.step_constraints`).

NUTS and SVI move such a latent in unconstrained space through Stan's bijections, with
their log-det Jacobians (Stan's reference manual, "Ordered vector" and "Positive ordered
vector"):

- ordered: y_0 = x_0, y_k = y_{k-1} + exp(x_k); log |J| = sum_{k >= 1} x_k;
- positive ordered: y_k = y_{k-1} + exp(x_k) from y_{-1} = 0, so y = cumsum(exp(x));
  log |J| = sum_k x_k.

Both are registered with `torch.distributions.biject_to` and `transform_to` when this
module is imported (the runtime's `distributions` imports it), so inference finds them
as it finds torch's own for the constraint a program reports (`site_constraint`). They
are written with whole-tensor operations only (cat, exp, cumsum, log, comparisons), never
a Python read of a value: the chains' potential is batched by `torch.func.vmap` and
recorded operation by operation (`inference.many`).
"""

from __future__ import annotations

from typing import ClassVar

import torch
from torch import distributions as D
from torch.distributions import constraints as C
from torch.distributions import transforms as T


class _Increasing(C.Constraint):
    """Vectors whose entries strictly increase along the last axis (and, for `positive`,
    start above 0); one flag per vector. NaN is off the set: every comparison with it
    fails, and the first entry is compared with itself (or with 0)."""

    event_dim = 1
    positive: ClassVar[bool]

    def check(self, value: torch.Tensor) -> torch.Tensor:
        first = value[..., 0]
        start = first > 0 if self.positive else first == first
        rising: torch.Tensor = (value[..., 1:] > value[..., :-1]).all(-1)
        return start & rising


class _OrderedVector(_Increasing):
    """Stan's `ordered[K]`: strictly increasing real vectors."""

    positive = False


class _PositiveOrderedVector(_Increasing):
    """Stan's `positive_ordered[K]`: strictly increasing vectors of positive numbers."""

    positive = True


#: The two sets, one object each (torch's constraints are singletons where they have no
#: parameters): what `runtime.distributions.torch_constraint` maps the registry's kinds to.
ordered_vector = _OrderedVector()
positive_ordered_vector = _PositiveOrderedVector()


class _Cumulative(T.Transform):
    """R^K -> an increasing set: the steps between consecutive entries are exp of the
    unconstrained coordinates (the first entry too where the set is positive), and the
    value is their running sum. One-to-one, with a triangular Jacobian whose diagonal is
    1 (a free first entry) and the exp'd steps, so log |det J| is the sum of the
    coordinates that were exponentiated."""

    domain = C.real_vector
    bijective = True
    codomain: C.Constraint
    #: the first entry is exp'd too: the set starts above 0
    positive: ClassVar[bool]

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self)

    def __hash__(self) -> int:
        return hash(type(self))

    def _call(self, x: torch.Tensor) -> torch.Tensor:
        if self.positive:
            return x.exp().cumsum(-1)
        return torch.cat([x[..., :1], x[..., 1:].exp()], -1).cumsum(-1)

    def _inverse(self, y: torch.Tensor) -> torch.Tensor:
        steps = y[..., 1:] - y[..., :-1]
        if self.positive:
            return torch.cat([y[..., :1], steps], -1).log()
        return torch.cat([y[..., :1], steps.log()], -1)

    def log_abs_det_jacobian(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return (x if self.positive else x[..., 1:]).sum(-1)

    def forward_shape(self, shape: torch.Size | tuple[int, ...]) -> torch.Size:
        """K numbers in, K out: the shape is kept (at least one axis, the vector's)."""
        if len(shape) < 1:
            raise ValueError("an ordered vector has one axis at least")
        return torch.Size(shape)

    def inverse_shape(self, shape: torch.Size | tuple[int, ...]) -> torch.Size:
        return self.forward_shape(shape)


class OrderedTransform(_Cumulative):
    """R^K -> `ordered_vector`: y_0 = x_0, y_k = y_{k-1} + exp(x_k)."""

    codomain = ordered_vector
    positive = False


class PositiveOrderedTransform(_Cumulative):
    """R^K -> `positive_ordered_vector`: y = cumsum(exp(x))."""

    codomain = positive_ordered_vector
    positive = True


def _onto_ordered(constraint: C.Constraint) -> T.Transform:
    return OrderedTransform()


def _onto_positive_ordered(constraint: C.Constraint) -> T.Transform:
    return PositiveOrderedTransform()


for _registry in (D.biject_to, D.transform_to):  # both maps are one-to-one here
    _registry.register(_OrderedVector, _onto_ordered)
    _registry.register(_PositiveOrderedVector, _onto_positive_ordered)


__all__ = [
    "OrderedTransform",
    "PositiveOrderedTransform",
    "ordered_vector",
    "positive_ordered_vector",
]
