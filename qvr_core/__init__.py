"""qvr_core: parse, check, draw and run QVR probabilistic programs.

Importing this package (and `check`, `graph`, `syntax`) never imports torch;
only `runtime`, `inference` and `dsl` do, when they are used.

This module is also the core's composition root: the checker runs the late passes of
the layers above it (`qvr_core.check.passes.add_late_pass`), and they are added here,
where importing any part of the core starts, so that every check, from the command
line, the editor or Python, reports QVR601 without the checker importing sizing. The
registration is cheap: each pass loads its layer when a check first runs it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from qvr_core.check.passes import add_late_pass

if TYPE_CHECKING:
    from qvr_core.check.context import Context
    from qvr_core.check.passes import Env
    from qvr_core.text.diagnostics import Diagnostic


def _size_warnings(
    ctx: Context, env: Env, exports: tuple[str, ...], budget: int | None
) -> list[Diagnostic]:
    """QVR601 (`qvr_core.sizing.too_large`), loaded by the first check that gets that far:
    importing any part of the core (the lexer, the version) loads neither the checker
    nor sizing."""
    from qvr_core.sizing.too_large import size_warnings

    return size_warnings(ctx, env, exports, budget)


add_late_pass(_size_warnings)


def __getattr__(name: str) -> str:
    """`__version__`, read on first use (pyproject.toml is the one place it is written)."""
    if name != "__version__":
        raise AttributeError(f"module 'qvr_core' has no attribute {name!r}")
    from qvr_core.host.version import installed_version

    value = globals()["__version__"] = installed_version()
    return value
