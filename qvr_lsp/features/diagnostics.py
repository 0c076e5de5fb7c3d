"""Publish the checker's diagnostics for every analysis of a current text, with its version.

A client that pulls diagnostics (pull_diagnostics.py) is not pushed to. With
the `qvr.export.target` setting the analyses carry that target's QVR701
warnings too (`analysis.analyzer.export_diagnostics`): the session hands the
setting to the analyzer (`Session.configure`), and a change of it analyses (so
publishes) every open document again. Its entries in the handler table are a
`Listener`: these are pushed, not asked for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types as lsp
from pygls.capabilities import get_capability

from qvr_lsp.protocol import capabilities
from qvr_lsp.protocol.convert import to_lsp_diagnostic

if TYPE_CHECKING:
    from qvr_lsp.analysis.session import Session
    from qvr_lsp.analysis.snapshots import Analysis


def client_pulls(caps: lsp.ClientCapabilities | None) -> bool:
    """Whether the client asks for diagnostics itself (LSP 3.17 pull)."""
    return caps is not None and get_capability(caps, "text_document.diagnostic", None) is not None


def lsp_diagnostics(
    caps: lsp.ClientCapabilities | None, analysis: Analysis
) -> list[lsp.Diagnostic]:
    """The analysis's diagnostics in protocol form, as far as the client can show them."""
    related = capabilities.related_information(caps)
    unnecessary = capabilities.unnecessary_tag(caps)
    return [
        to_lsp_diagnostic(
            d,
            analysis.positions,
            analysis.uri,
            related_information=related,
            unnecessary_tag=unnecessary,
        )
        for d in analysis.diagnostics
    ]


def publish(session: Session, analysis: Analysis) -> None:
    """An analysis of a current text was announced: its diagnostics, with its version."""
    server = session.server
    if client_pulls(server.caps):
        return  # the client asks for them (pull_diagnostics.py)
    params = lsp.PublishDiagnosticsParams(
        uri=analysis.uri,
        diagnostics=lsp_diagnostics(server.caps, analysis),
        version=analysis.version,
    )
    server.text_document_publish_diagnostics(params)


def clear(session: Session, uri: str) -> None:
    """A document closed: its diagnostics go with it."""
    server = session.server
    if not client_pulls(server.caps):
        server.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri, []))
