"""A family step of a morphism program (`sample h <- Normal(r, 0.5)`) as a morphism.

The checker typed it (`qvr_core.check.family_steps`): the site's named values,
packed side by side, are its input; each is split back out and read as the
parameter it fills, the numbers written in the step fill the others, and the
family draws one value per coordinate (quivers' "the argument's axes being
the plate"). It has no parameters of its own: nothing here is learned.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import distributions as D
from torch.distributions import constraints as C

from qvr_core.builtins import FAMILIES
from qvr_core.check.types import Arrow, ValueType
from qvr_core.runtime.distributions import draw_within, make_distribution, torch_constraint
from qvr_core.runtime.families import stand_in
from qvr_core.runtime.morphisms import Morphism
from qvr_core.runtime.tensors import elem, split

#: Support kinds bounded by numbers, which no object kind says exactly.
_BOUNDED = ("interval", "greater_than", "greater_than_eq")


class FamilyDraw(Morphism):
    """`F(args)` drawn at every coordinate of its named values (`parts`, packed as the
    input); `given`: the parameters written as numbers; `fed`: parameter -> position of
    its value among the parts."""

    def __init__(
        self,
        arrow: Arrow,
        label: str,
        family: str,
        parts: Sequence[ValueType],
        given: Sequence[tuple[str, float]],
        fed: Sequence[tuple[str, int]],
    ) -> None:
        super().__init__(Arrow(elem(arrow.dom), elem(arrow.cod)), label)
        self.family = FAMILIES[family]
        self.parts = [elem(t) for t in parts]
        self.fed = tuple(fed)
        for name, value in given:
            self.register_buffer(f"given_{name}", torch.tensor(value), persistent=False)
        self.given = tuple(name for name, _ in given)
        numbers = {k: torch.tensor(v) for k, v in given}
        self.constraint = torch_constraint(self.family.support, numbers)

    @property
    def stochastic(self) -> bool:
        return True

    def value_support(self) -> str | None:
        return self.family.support.narrower_object

    def value_constraint(self) -> C.Constraint | None:
        """The support's interval where no name says it exactly (a Pareto's written
        scale bounds its draws below)."""
        return self.constraint if self.family.support.kind in _BOUNDED else None

    def dist(self, x: torch.Tensor) -> D.Distribution:
        values = split(x, self.parts, self.dom) if len(self.parts) > 1 else [x]
        args = {name: values[i] for name, i in self.fed}
        for name in self.given:
            number: torch.Tensor = getattr(self, f"given_{name}")
            args[name] = number.to(x)
        return make_distribution(self.family.name, args)

    def _rsample(self, x: torch.Tensor) -> torch.Tensor:
        return draw_within(self.dist(x), self.constraint)

    def _mean(self, x: torch.Tensor) -> torch.Tensor:
        return stand_in(self.dist(x))

    def _log_prob(self, x: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
        lp: torch.Tensor = self.dist(x).log_prob(value)
        return lp.sum(-1)
