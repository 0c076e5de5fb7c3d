"""qvr_lsp: the QVR language server (pygls 2.x).

It converts positions and types between the protocol and `qvr_core` and runs
analyses off the event loop; every answer is a function of the core's
`CheckedModule`. Importing it never imports torch.

Nothing the server imports may come from the workspace. Editors start the
server with the workspace as its working directory, and `python -m qvr_lsp`
puts that directory first on `sys.path`, so a `cattrs.py`, `argparse.py` or
`qvr_core/` there would run inside the server:

- started with `-m`, this package takes the working directory (and `''`) off
  `sys.path` before anything else is imported (`_drop_working_directory`);
- the server's start (`cli.main`, for `qvr-lsp`, `qvr lsp` and `-m` alike)
  does it again, so no later import (pygls, lark, the feature modules) can
  come from there whatever the launch;
- `python -m qvr_lsp` cannot protect itself from a `qvr_lsp/` package in the
  working directory, which Python finds before this one: editors start the
  `qvr-lsp` script (whose `sys.path[0]` is its own folder) or `python -P -m
  qvr_lsp` (`-P`: the working directory never on the path), as the VS Code
  extension and the documented Neovim setup do.

The working directory is kept when it is the folder this package was found
in (running from a checkout of qvr itself).
"""

import os as _os
import sys as _sys


def safe_path(entries: list[str], cwd: str, home: str) -> list[str]:
    """`entries` without the working directory: `''`, relative entries (they name folders
    of the working directory) and entries that are `cwd`, unless that is `home`."""
    if cwd and cwd == home:
        return list(entries)  # a checkout of qvr: its folder is the install
    kept = []
    for entry in entries:
        if not entry or not _os.path.isabs(entry):
            continue
        try:
            real = _os.path.realpath(entry)
        except (OSError, ValueError):
            continue
        if real != cwd:
            kept.append(entry)
    return kept


def _drop_working_directory(always: bool = False) -> None:
    """Take the working directory off `sys.path` (unless it holds qvr itself).

    At import only a `-m` launch is changed (unless `always`): a script that
    imports `qvr_lsp` keeps its own directory on the path.
    """
    if not always and (_sys.flags.safe_path or _sys.argv[:1] != ["-m"]):
        return
    try:
        cwd = _os.path.realpath(_os.getcwd())
    except OSError:  # the working directory was removed: "" names nothing useful either
        cwd = ""
    home = _os.path.realpath(_os.path.dirname(_os.path.dirname(_os.path.abspath(__file__))))
    _sys.path[:] = safe_path(_sys.path, cwd, home)


_drop_working_directory()


def __getattr__(name: str) -> str:
    """`__version__`, the core's, read on first use: importing this package imports
    nothing else, so a script that imports it before the server's start has made the
    path safe (`cli.main`) runs nothing from the working directory."""
    if name != "__version__":
        raise AttributeError(f"module 'qvr_lsp' has no attribute {name!r}")
    from qvr_core import __version__ as version

    globals()["__version__"] = version
    return version
