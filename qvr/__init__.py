"""qvr where other tools look for it: the Pygments lexer and the Jupyter extensions.

`%load_ext qvr` finds `load_ipython_extension` here; Pygments finds `qvr.lexer`
through the `pygments.lexers` entry point. Nothing here is imported by the
checker, the server or the command line.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from qvr_core import __version__

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

__all__ = ["__version__", "load_ipython_extension"]


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    """Where the prebuilt JupyterLab extension lies in this package, for
    `jupyter labextension develop`; a wheel installs it where JupyterLab looks."""
    return [{"src": "labextension", "dest": "jupyterlab-qvr"}]


def load_ipython_extension(ipython: InteractiveShell) -> None:
    """`%load_ext qvr`: register the `%%qvr` cell magic (IPython is imported only now,
    so importing qvr stays cheap)."""
    from qvr.notebook import register

    register(ipython)
