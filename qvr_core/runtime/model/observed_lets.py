"""The observations a model program computes from its data: its observed `let`s.

`let log_earn = log(earn)` then `observe log_earn : Row <- Normal(mu, sigma)` observes
the let's value (the checker admits it only when the let reads data names and numbers,
through other such lets: `Model.observed_lets`). Stan computes such a value in its
`transformed data` block, once; so does the run: `computed_observations` evaluates each
from the data names before the first pass, and the run goes on with it as one more
observation, which every method (NUTS, SVI, the pointwise likelihood, predictive draws
of a replicate under the let's name) reads as it reads an observed site's data.
"""

from __future__ import annotations

from collections.abc import Mapping

import torch

from qvr_core.check.model import Let, Model
from qvr_core.runtime.errors import QvrRuntimeError
from qvr_core.runtime.evaluate import evaluate_let


def computed_observations(
    lets: Mapping[str, tuple[Model, str]],
    data: Mapping[str, torch.Tensor],
    sizes: Mapping[str, int],
) -> dict[str, torch.Tensor]:
    """Each observed let's value (by its site's name, a template's as `v$name`) from the
    data names: `lets` maps the site's name to its model and the let's name there."""
    out: dict[str, torch.Tensor] = {}
    with torch.no_grad():
        for site, (model, name) in lets.items():
            out[site] = _Values(model, data, sizes).of(name, model.line)
    return out


class _Values:
    """The values of one model's lets of the data, each computed once when first read."""

    def __init__(
        self, model: Model, data: Mapping[str, torch.Tensor], sizes: Mapping[str, int]
    ) -> None:
        self.model = model
        self.data = data
        self.sizes = sizes
        self.lets = {s.name: s for s in model.steps if isinstance(s, Let) and s.kind == "let"}
        self.done: dict[str, torch.Tensor] = {}

    def of(self, name: str, line: int) -> torch.Tensor:
        if name in self.done:
            return self.done[name]
        let = self.lets.get(name)
        if let is None:
            if name in self.data:
                return self.data[name]
            raise QvrRuntimeError(
                f"program {self.model.name} needs data '{name}' (line {line}) to compute "
                "the observations it computes from the data: give it in the data",
                site=name,
            )
        self.done[name] = self._evaluate(let)
        return self.done[name]

    def _evaluate(self, let: Let) -> torch.Tensor:
        doing = f"computing '{let.name}' from the data: "
        return evaluate_let(let, self.of, self.sizes, self.data.get, doing, site=let.name)


__all__ = ["computed_observations"]
