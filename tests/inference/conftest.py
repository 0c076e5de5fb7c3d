"""Fixtures for the inference tests.

Inference on small models is dominated by per-operation overhead, and on a
busy two-core machine torch's intra-op thread pool makes every tiny operation
wait for a second thread; one thread is faster and keeps timings stable.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import torch


@pytest.fixture(autouse=True)
def _single_thread_and_seed() -> Iterator[None]:
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    yield
    torch.set_num_threads(threads)


ROOT = Path(__file__).resolve().parents[2]
