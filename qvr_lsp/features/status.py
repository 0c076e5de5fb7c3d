"""`qvr/serverStatus`: what the server holds, for bug reports and tests.

Reports each open document's version and the version its newest analysis
is of, the settings, the position encoding, the modules of the handler table, and
which heavy libraries are loaded (torch must not be, unless an inference run has
been started).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from qvr_lsp import __version__
from qvr_lsp.protocol.contract import SERVER_STATUS, DocumentStatus, ServerStatus

if TYPE_CHECKING:
    from qvr_lsp.analysis.kinds import Open
    from qvr_lsp.analysis.session import Session

METHOD = SERVER_STATUS
HEAVY_MODULES = ("torch", "pyro", "numpy", "networkx")


async def server_status(session: Session, params: Any, open_documents: Open) -> ServerStatus:
    server = session.server
    documents: list[DocumentStatus] = []
    for doc in server.documents:
        newest = open_documents.newest(doc.uri)
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
        "features": list(session.feature_modules),
        "documents": documents,
        "loadedModules": [m for m in HEAVY_MODULES if m in sys.modules],
    }
