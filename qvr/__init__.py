"""qvr where other tools look for it: the Pygments lexer and the Jupyter extension.

`%load_ext qvr` finds `load_ipython_extension` here; Pygments finds `qvr.lexer`
through the `pygments.lexers` entry point. Nothing here is imported by the
checker, the server or the command line.
"""

from qvr_core import __version__

__all__ = ["__version__"]
