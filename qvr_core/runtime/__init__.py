"""Compile checked QVR modules into torch modules (see docs/runtime.md).

Importing this package does not import torch; the names below load their
modules (and torch) on first use, so `qvr_core.runtime.errors` stays cheap.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_EXPORTS = {
    "Compiler": "qvr_core.runtime.compile",
    "compile_module": "qvr_core.runtime.compile",
    "Morphism": "qvr_core.runtime.morphisms",
    "ProgramModule": "qvr_core.runtime.program",
    "RunResult": "qvr_core.runtime.program",
    "param_groups": "qvr_core.runtime.paramnet",
    "QvrError": "qvr_core.runtime.errors",
    "QvrRuntimeError": "qvr_core.runtime.errors",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'qvr_core.runtime' has no attribute {name!r}")
