"""Pausing Python's cyclic garbage collector around allocation-heavy work.

Parsing and checking build many small frozen objects and no reference
cycles; on large files the collector's repeated full scans made both
super-linear. Pauses nest: only the outermost one turns collection back on.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused() -> Iterator[None]:
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
