"""`qvr/serverStatus`: what the server holds, for bug reports and tests.

Reports each open document's version and the version its newest analysis
is of, the settings, the position encoding, and which heavy libraries are
loaded (torch must not be, unless an inference run has been started).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from qvr_lsp import __version__
from qvr_lsp.contract import SERVER_STATUS, DocumentStatus, ServerStatus
from qvr_lsp.guard import guarded

if TYPE_CHECKING:
    from qvr_lsp.server import QvrLanguageServer

METHOD = SERVER_STATUS
HEAVY_MODULES = ("torch", "pyro", "numpy", "networkx")


def register(server: QvrLanguageServer) -> None:
    @server.feature(METHOD)
    @guarded(dict)
    def server_status(params: Any = None) -> ServerStatus:
        documents: list[DocumentStatus] = []
        for doc in server.documents:
            snap = server.snapshot(doc.uri)
            newest = snap.newest if snap is not None else None
            documents.append(
                {
                    "uri": doc.uri,
                    "version": doc.version,
                    "analysedVersion": newest.version if newest is not None else None,
                    "parsed": newest.parsed if newest is not None else None,
                    "seconds": round(newest.seconds, 4) if newest is not None else None,
                }
            )
        return {
            "version": __version__,
            "encoding": str(getattr(server.encoding, "value", server.encoding)),
            "strict": server.settings.strict,
            "features": list(server.feature_modules),
            "documents": documents,
            "loadedModules": [m for m in HEAVY_MODULES if m in sys.modules],
        }
