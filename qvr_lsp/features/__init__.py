"""Editor features: every public module here is discovered and its `register(server)` called.

A feature module defines `register(server: QvrLanguageServer) -> None` and
registers its handlers with `@server.feature(...)` and `@guarded(...)`
(docs/lsp.md), and may list in `DEFERRED` the modules its handlers import on
first use rather than at start (`qvr_lsp.warmup` imports them once the first
diagnostics are out). Modules whose name starts with `_` are helpers and are not
registered. A module that fails to import or register is logged and
skipped, so one broken feature never keeps the server from starting.
"""

from __future__ import annotations

import importlib
import logging
import pkgutil
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from qvr_lsp.server import QvrLanguageServer

log = logging.getLogger("qvr_lsp")


def feature_module_names() -> list[str]:
    """The public modules of this package, sorted so registration order is stable."""
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))


def register_all(server: QvrLanguageServer) -> list[str]:
    """Import every feature module and register it; the names of those registered."""
    registered: list[str] = []
    for name in feature_module_names():
        try:
            module = importlib.import_module(f"{__name__}.{name}")
            register = getattr(module, "register", None)
            if register is None:
                log.error("feature module %s has no register(server); skipped", name)
                continue
            register(server)
        except Exception:
            log.exception("feature module %s failed to register; skipped", name)
            continue
        registered.append(name)
    return registered


def deferred_imports(names: list[str]) -> list[str]:
    """The modules the feature modules `names` (registered, so imported) import on first
    use (their `DEFERRED`)."""
    found: list[str] = []
    for name in names:
        module = sys.modules.get(f"{__name__}.{name}")
        found += getattr(module, "DEFERRED", ())
    return found
