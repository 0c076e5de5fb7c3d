"""ELBO: the reparameterised evidence lower bound, as a loss to minimise.

`loss` = -(1/P) sum_p mean_b [log p(x, z_p, y) - log q(z_p)] with z_p ~ q drawn by
reparameterisation, so the gradient flows into both the guide and the model's
parameters. Averaging over the batch (rather than summing) keeps the learning
rate meaningful across batch sizes. Several particles of a batched program are
drawn in one pass, as extra rows of the batch.

Within a step's `runtime.share.Share` (minibatch or data-parallel SVI) the model and
the guide scale their own terms; a seed program's share of the batch is averaged
over the whole batch, so the processes' parts add up to the loss of one process.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from qvr_core.inference.errors import InferenceError
from qvr_core.inference.sites import ProgramLike, batch_shape
from qvr_core.runtime.program import Observed
from qvr_core.runtime.share import current_share


def draw(guide: Any, x: Any) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
    """A guide draw with its log q; uses the guide's fused method when it has one."""
    fused = getattr(guide, "sample_with_log_prob", None)
    if callable(fused):
        return fused(x)
    values = guide.rsample(x)
    return values, guide.log_prob(x, values)


class ELBO:
    """Monte Carlo estimate of the negative ELBO with `num_particles` draws."""

    def __init__(self, num_particles: int = 1) -> None:
        if int(num_particles) < 1:
            raise InferenceError(f"num_particles must be at least 1, got {num_particles}")
        self.num_particles = int(num_particles)

    def loss(
        self,
        model: ProgramLike,
        guide: Any,
        x: Any,
        observations: Mapping[str, Observed] | None = None,
    ) -> torch.Tensor:
        """The negative ELBO (a scalar tensor with gradients)."""
        observations = dict(observations or {})
        missing = sorted(set(getattr(guide, "observed_names", ())) - set(observations))
        if missing:
            raise InferenceError(
                f"no data for the observed site(s) {', '.join(repr(m) for m in missing)}: "
                "pass them in observations"
            )
        share = current_share()
        if self.num_particles > 1 and share is None and _can_stack(model, x, observations):
            # Particles as extra rows of the batch: one pass through the model,
            # the same estimator (every row draws its own value from q).
            x, observations = (
                _stack(x, self.num_particles),
                {k: _stack(v, self.num_particles) for k, v in observations.items()},
            )
            return -self._one_particle(model, guide, x, observations)
        total = self._one_particle(model, guide, x, observations)
        for _ in range(self.num_particles - 1):
            total = total + self._one_particle(model, guide, x, observations)
        return -total / self.num_particles

    @staticmethod
    def _one_particle(
        model: ProgramLike, guide: Any, x: Any, observations: dict[str, Observed]
    ) -> torch.Tensor:
        values, log_q = draw(guide, x)
        clash = sorted(set(values) & set(observations))
        if clash:
            raise InferenceError(f"site(s) {', '.join(clash)} are both observed and in the guide")
        log_p = model.log_joint(x, {**observations, **values})
        share = current_share()
        if share is not None and share.plate is None:  # this process's examples of the batch
            return (log_p - log_q).sum() / share.drawn
        return (log_p - log_q).mean()


def _can_stack(model: Any, x: Any, observations: Mapping[str, Observed]) -> bool:
    """True when examples are independent rows of one batch axis shared by x and the data."""
    if not isinstance(x, torch.Tensor) or batch_shape(model, x) != (x.shape[0],):
        return False
    return all(
        isinstance(v, torch.Tensor) and v.dim() >= 1 and v.shape[0] == x.shape[0]
        for v in observations.values()
    )


def _stack(t: Observed, n: int) -> torch.Tensor:
    assert isinstance(t, torch.Tensor)  # `_can_stack`: only tensors
    return t.repeat(n, *([1] * (t.dim() - 1)))
