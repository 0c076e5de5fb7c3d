"""How the server starts a Python child process: never importing from the workspace.

Editors start the server in the workspace, so its working directory is the
user's project. A child started there with `python -m` would put that folder
first on `sys.path`, and a `torch.py` or `lark.py` in it would run in place of
the real module. `-P` keeps the working directory off `sys.path`, and the child
runs in the package's own folder.
"""

from __future__ import annotations

import sys
from pathlib import Path

#: The folder that holds the qvr packages: children run here, never in the workspace.
PACKAGE_ROOT = Path(__file__).resolve().parent.parent


def python_module(module: str) -> tuple[str, ...]:
    """The command that runs `python -m module` in this interpreter, safely (see above)."""
    return (sys.executable, "-P", "-m", module)
