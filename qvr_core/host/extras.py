"""Which optional parts of qvr this Python has: `pip install qvr` is the checker and the
server alone; running a program needs the `run` extra (torch and numpy), comparing runs
the `arviz` one. The command line and the server ask here before they start work that
needs them, so a missing extra is one line naming it, not an ImportError's traceback.
Nothing is imported to find out."""

from __future__ import annotations

import importlib
import importlib.util

#: What running a program needs beyond the checker: the `run` extra.
RUN_MODULES = ("torch", "numpy", "threadpoolctl")
#: What `qvr compare` needs: the `arviz` extra (numpy comes with it).
ARVIZ_MODULES = ("numpy", "arviz")
#: What `qvr run --engine numpyro` needs besides the `run` extra: the `numpyro` extra
#: (funsor: NumPyro's sums over the enumerated sites an export writes for `marginalize`).
NUMPYRO_MODULES = ("numpyro", "jax", "funsor")


def missing(modules: tuple[str, ...]) -> list[str]:
    """The names in `modules` this Python cannot import. The import system's caches are
    cleared first: a long-lived server may see the extra installed while it runs."""
    importlib.invalidate_caches()
    return [name for name in modules if importlib.util.find_spec(name) is None]
