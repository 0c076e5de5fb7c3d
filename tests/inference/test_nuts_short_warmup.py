"""A short warmup adapts the step size only: a mass matrix from a few draws is worse than none."""

from __future__ import annotations

from qvr_core.inference.adapt import WarmupSchedule


def test_short_warmup_estimates_no_mass_matrix() -> None:
    short = WarmupSchedule(num_warmup=40)
    assert not short.enabled and short.window_ends == set()
    assert not short.in_slow_window(20)


def test_default_warmup_uses_stans_doubling_windows() -> None:
    schedule = WarmupSchedule(num_warmup=1000)
    assert schedule.enabled
    # 75 fast, then slow windows of 25, 50, 100, 200, 500 (stretched), then 50 fast
    assert sorted(schedule.window_ends) == [99, 149, 249, 449, 949]
