"""qvr_core: parse, check, draw and run QVR probabilistic programs.

Importing this package (and `check`, `graph`, `syntax`) never imports torch;
only `runtime`, `inference` and `dsl` do, when they are used.
"""

from __future__ import annotations


def __getattr__(name: str) -> str:
    """`__version__`, read on first use (pyproject.toml is the one place it is written)."""
    if name != "__version__":
        raise AttributeError(f"module 'qvr_core' has no attribute {name!r}")
    from qvr_core.version import installed_version

    value = globals()["__version__"] = installed_version()
    return value
