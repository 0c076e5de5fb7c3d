"""The horseshoe's quadrature rule: one fact read by the runtime and the three exports.

quivers scores `Horseshoe(scale)` with the 16-point Gauss-Legendre rule over the local
scale lambda = tan(pi t / 2), t in (0, 1). The HalfCauchy(1) density times d lambda / d t
is exactly 1 there, so the log density is log sum_i w_i Normal(x; 0, scale lambda_i):
a mixture of 16 Normals with fixed weights and scales proportional to `scale`. The
runtime scores and draws that mixture (`runtime/horseshoe.py`), and each export writes
it with its library's mixture of Normals, so all four give the same density.

The rule is computed here in plain Python (nothing below the runtime imports numpy):
Newton's method on the Legendre polynomial from the usual first guesses, the weights
from its derivative at the roots.
"""

from __future__ import annotations

import math


def gauss_legendre(n: int) -> tuple[tuple[float, float], ...]:
    """The n-point Gauss-Legendre rule on [-1, 1]: (node, weight) pairs, nodes rising."""
    rule: list[tuple[float, float]] = []
    for i in range(1, n + 1):
        x = math.cos(math.pi * (i - 0.25) / (n + 0.5))
        for _ in range(100):
            p0, p1 = 1.0, x  # P_0, P_1, then up to P_n by the three-term recurrence
            for k in range(2, n + 1):
                p0, p1 = p1, ((2 * k - 1) * x * p1 - (k - 1) * p0) / k
            slope = n * (x * p1 - p0) / (x * x - 1.0)
            step = p1 / slope
            x -= step
            if abs(step) < 1e-16:
                break
        p0, p1 = 1.0, x
        for k in range(2, n + 1):
            p0, p1 = p1, ((2 * k - 1) * x * p1 - (k - 1) * p0) / k
        slope = n * (x * p1 - p0) / (x * x - 1.0)
        rule.append((x, 2.0 / ((1.0 - x * x) * slope * slope)))
    return tuple(sorted(rule))


_RULE = gauss_legendre(16)
#: The local scales lambda_i = tan(pi t_i / 2) at the rule's nodes mapped to (0, 1).
HORSESHOE_SCALES: tuple[float, ...] = tuple(math.tan(math.pi * (1.0 + x) / 4.0) for x, _ in _RULE)
#: Their weights w_i / 2, which add up to 1.
HORSESHOE_WEIGHTS: tuple[float, ...] = tuple(w / 2.0 for _, w in _RULE)
