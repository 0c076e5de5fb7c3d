"""Importing what the features left for their first request, once the server is up.

The server's start is the time to its first diagnostics, so the feature
modules import the core's editing modules (hover, completion, formatting,
the inference runs...) on first use; each lists them in `DEFERRED`. Waiting
for that first use would put the import (a few ms to tens of ms each) on
the first hover or completion instead, so shortly after the first
diagnostics a background thread imports them all. Importing is safe from
any thread (a request that needs a module meanwhile waits for its import
lock), and none of them imports torch or numpy.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import threading
from collections.abc import Iterable

log = logging.getLogger(__name__)

#: How long after the first diagnostics the deferred modules are imported.
DELAY_SECONDS = 0.5


class Warmup:
    """Imports `modules` in a thread, once, `DELAY_SECONDS` after `start_soon` is first called."""

    def __init__(self, modules: Iterable[str], delay: float = DELAY_SECONDS) -> None:
        self.modules = tuple(dict.fromkeys(modules))
        self.delay = delay
        self.done = threading.Event()
        self._scheduled = False

    def start_soon(self, *_: object) -> None:
        """On the event loop (an analysis listener): schedule the imports, the first time."""
        if self._scheduled:
            return
        self._scheduled = True
        asyncio.get_running_loop().call_later(self.delay, self._start)

    def _start(self) -> None:
        threading.Thread(target=self.run, name="qvr-warmup", daemon=True).start()

    def run(self) -> None:
        """Import every module (a failure is logged: its feature imports it again on use)."""
        try:
            for name in self.modules:
                try:
                    importlib.import_module(name)
                except Exception:
                    log.exception("importing %s ahead of its first use failed", name)
        finally:
            self.done.set()
