"""Thinning a long series for display: the run view and the live trace plots draw at most a
few hundred points of a run of thousands, and both must keep its first and newest point."""


def evenly_spaced(n: int, limit: int) -> list[int]:
    """At most `limit` (>= 2) evenly spaced indices of `range(n)`, the first and last kept."""
    if n <= limit:
        return list(range(n))
    return sorted({round(k * (n - 1) / (limit - 1)) for k in range(limit)})
