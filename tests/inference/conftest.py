"""Fixtures for the inference tests.

Inference on small models is dominated by per-operation overhead, and on a
busy two-core machine torch's intra-op thread pool makes every tiny operation
wait for a second thread; one thread is faster and keeps timings stable.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch


@pytest.fixture(autouse=True)
def _seed() -> None:
    """torch's global generator at 0 (one thread: tests/conftest.py)."""
    torch.manual_seed(0)


ROOT = Path(__file__).resolve().parents[2]
