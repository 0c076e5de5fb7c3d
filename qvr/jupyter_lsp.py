"""How jupyter-lsp starts qvr's language server for JupyterLab (jupyterlab-lsp).

jupyter-lsp finds language servers through the `jupyter_lsp_spec_v1` entry point:
each is a callable that, given the server's manager, returns specs keyed by name. The
server is started with the interpreter that runs Jupyter, which is the environment qvr
is installed in (the entry point is qvr's own), so no `PATH` lookup can pick another
qvr. jupyterlab-qvr, the JupyterLab extension built from `jupyterlab-extension/`,
tells jupyterlab-lsp which text of a notebook is QVR: the body of each `%%qvr` cell.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping

#: The version of jupyter-lsp's spec schema this spec is written to.
SPEC_VERSION = 2
#: The language id jupyterlab-qvr gives a `%%qvr` cell's document.
LANGUAGE = "qvr"


def spec(_manager: object = None) -> dict[str, Mapping[str, object]]:
    """The `qvr-lsp` spec. `-P` keeps the notebook's folder off `sys.path`, so a file
    there named like one of qvr's modules is never run (see qvr_lsp/__main__.py)."""
    return {
        "qvr-lsp": {
            "version": SPEC_VERSION,
            "argv": [sys.executable, "-P", "-m", "qvr_lsp"],
            "languages": [LANGUAGE],
            "mime_types": ["text/x-qvr"],
            "display_name": "qvr-lsp",
            # the server reads the documents it is sent, never the disk
            "requires_documents_on_disk": False,
            "urls": {
                "home": "https://github.com/qvr-lang/qvr",
                "issues": "https://github.com/qvr-lang/qvr/issues",
            },
            "install": {"pip": "pip install 'qvr[jupyter]'"},
        }
    }
