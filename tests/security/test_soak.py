"""A short soak of the real server: RSS after warm-up stays within 20% (bench/soak.py: long)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from soak import GOAL, soak


@pytest.mark.asyncio(loop_scope="function")
async def test_memory_stays_flat_over_opens_edits_and_closes():
    result = await soak(files=8, edits=10, lines=1000, warmup=3)
    assert result.peak_growth <= GOAL, (
        f"RSS grew from {result.after_warmup:.1f} to {max(result.samples):.1f} MiB: "
        f"{result.samples}"
    )
