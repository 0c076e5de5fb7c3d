"""qvr_lsp: the QVR language server (pygls 2.x).

It converts positions and types between the protocol and `qvr_core` and runs
analyses off the event loop; every answer is a function of the core's
`CheckedModule`. Importing it never imports torch.
"""

from qvr_core import __version__

__all__ = ["__version__"]
