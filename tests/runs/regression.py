"""A linear regression over a plate of `rows` rows, and data for it: what the subsampling
and distributed tests fit (y = 1.5 - 2 x + noise of sd 0.5)."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def regression(rows: int) -> str:
    """The program, `regression`, over `object Row : FinSet rows`."""
    return f"""
object Row : FinSet {rows}

program regression : Row -> Row
    sample alpha <- Normal(0.0, 10.0)
    sample beta <- Normal(0.0, 10.0)
    sample sigma <- HalfNormal(5.0)
    let mu = alpha + beta * x
    observe y : Row <- Normal(mu, sigma)
    return mu

export regression
"""


def write_rows(path: Path, rows: int, seed: int = 0) -> Path:
    """`x` and `y` for `rows` rows, as an .npz file at `path`."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=rows)
    np.savez(path, x=x, y=1.5 - 2.0 * x + 0.5 * rng.normal(size=rows))
    return path
