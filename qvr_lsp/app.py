"""The composition root: a language server with its features registered.

The server (`qvr_lsp.server`) holds documents, analyses and settings and knows no
feature; each feature module registers its handlers on it. Wiring the two here
keeps the import graph one way (features import the server's type, the server
imports no feature), and gives every process that serves, the command line and
the tests alike, the same server.
"""

from __future__ import annotations

from qvr_lsp.analysis import DEBOUNCE_SECONDS
from qvr_lsp.features import deferred_imports, register_all
from qvr_lsp.server import QvrLanguageServer


def build_server(*, debounce: float = DEBOUNCE_SECONDS) -> QvrLanguageServer:
    """A server with every feature module registered (a broken one logged and left out)."""
    server = QvrLanguageServer(debounce=debounce)
    names = register_all(server)
    server.use_features(names, deferred_imports(names))
    return server
