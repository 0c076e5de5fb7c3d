"""qvr_lsp: the QVR language server (pygls 2.x).

It converts positions and types between the protocol and `qvr_core` and runs
analyses off the event loop; every answer is a function of the core's
`CheckedModule`. Importing it never imports torch.

`python -m qvr_lsp` started in a workspace puts the workspace first on
`sys.path`, so a `cattrs.py` or `argparse.py` there would run inside the
server. Before anything else is imported, such an entry is dropped (see
`_drop_working_directory`); `python -P -m qvr_lsp` and the `qvr-lsp` script
never add it.
"""

import os as _os
import sys as _sys


def _drop_working_directory() -> None:
    """Under `python -m`, take the working directory off `sys.path` (unless it holds qvr).

    Only a `-m` launch is changed: a script that imports `qvr_lsp` keeps its
    own directory on the path. The entry is kept when it is the directory this
    package was found in (running from a checkout of qvr itself).
    """
    if _sys.flags.safe_path or _sys.argv[:1] != ["-m"]:
        return
    try:
        cwd = _os.path.realpath(_os.getcwd())
    except OSError:  # the working directory was removed: "" names nothing useful either
        cwd = ""
    home = _os.path.realpath(_os.path.dirname(_os.path.dirname(_os.path.abspath(__file__))))
    if cwd == home:
        return
    _sys.path[:] = [e for e in _sys.path if e and _os.path.realpath(e) != cwd]


_drop_working_directory()

from qvr_core import __version__ as __version__  # noqa: E402  # after the path is safe
