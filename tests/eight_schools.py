"""Eight schools (non-centred), with the classic data: one copy for the model tests."""

from __future__ import annotations

import torch

SOURCE = """
object School : FinSet 8

program eight_schools : School -> School
    sample mu <- Normal(0.0, 5.0)
    sample tau <- HalfCauchy(5.0)
    sample theta_raw : School <- Normal(0.0, 1.0)
    let theta = mu + tau * theta_raw
    observe y : School <- Normal(theta, sigma)
    return theta

export eight_schools
"""
Y = torch.tensor([28.0, 8, -3, 7, -1, 1, 18, 12])
SIGMA = torch.tensor([15.0, 10, 16, 11, 9, 11, 10, 18])
