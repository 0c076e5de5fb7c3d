"""qvr_lsp: the QVR language server (pygls 2.x).

It converts positions and types between the protocol and `qvr_core` and runs
analyses off the event loop; every answer is a function of the core's
`CheckedModule`. Importing it never imports torch.
"""

__version__ = "0.1.0"
