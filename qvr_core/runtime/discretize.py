"""`role=discretize, bins=N`: one bounded real number binned into N bins, as quivers'
`Discretize` (`continuous/boundaries.py`) does it.

The bins' centres are N evenly spaced points from the space's low bound to its high
bound. An input x falls in bin k with probability softmax_k(-(x - c_k)^2 / 0.1), quivers'
soft assignment at its default temperature, which its compiler does not change: a draw
is a bin drawn so, a score the log of that probability, and the mean the nearest centre
(quivers' hard assignment). Nothing is learned. quivers clamps the probability at its
EPS before the log; qvr takes the categorical's log-probability, which agrees wherever
the probability is above it.
"""

from __future__ import annotations

import torch

from qvr_core.check.types import Arrow
from qvr_core.runtime.errors import QvrRuntimeError
from qvr_core.runtime.morphisms import CategoricalRows, value_count

#: quivers' `Discretize(temperature=0.1)`: the spread of the soft assignment.
TEMPERATURE = 0.1


class Discretize(CategoricalRows):
    """Bins a `Real 1 {low=a, high=b}` (or `Unit 1`) value into `bins` bins."""

    centres: torch.Tensor

    def __init__(self, key: str, arrow: Arrow, bins: int) -> None:
        super().__init__(key, arrow)
        [factor] = self.dom_p.factors
        interval = factor.interval
        if interval is None or factor.width != 1 or value_count(self.cod_p) != bins:
            raise QvrRuntimeError(f"{key}: role=discretize needs one bounded number and bins")
        self.register_buffer("centres", torch.linspace(interval[0], interval[1], bins))

    def _logits(self, x: torch.Tensor) -> torch.Tensor:
        centres = self.centres.to(x.dtype)
        return -((x[..., :1] - centres) ** 2) / TEMPERATURE
