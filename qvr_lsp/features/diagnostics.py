"""Publish the checker's diagnostics for every analysis of a current text, with its version.

A client that pulls diagnostics (pull_diagnostics.py) is not pushed to. With
the `qvr.export.target` setting the analyses carry that target's QVR701
warnings too (`analysis.export_diagnostics`): the analyzer reads the setting
here, and a change of it analyses (so publishes) every open document again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types as lsp
from pygls.capabilities import get_capability

from qvr_lsp import capabilities
from qvr_lsp.analysis import Analysis
from qvr_lsp.convert import to_lsp_diagnostic

if TYPE_CHECKING:
    from qvr_lsp.server import QvrLanguageServer


def client_pulls(caps: lsp.ClientCapabilities | None) -> bool:
    """Whether the client asks for diagnostics itself (LSP 3.17 pull)."""
    return caps is not None and get_capability(caps, "text_document.diagnostic", None) is not None


def lsp_diagnostics(server: QvrLanguageServer, analysis: Analysis) -> list[lsp.Diagnostic]:
    """The analysis's diagnostics in protocol form, as far as the client can show them."""
    caps = server.caps
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


def register(server: QvrLanguageServer) -> None:
    def publish(analysis: Analysis) -> None:
        if client_pulls(server.caps):
            return  # the client asks for them (pull_diagnostics.py)
        params = lsp.PublishDiagnosticsParams(
            uri=analysis.uri,
            diagnostics=lsp_diagnostics(server, analysis),
            version=analysis.version,
        )
        server.text_document_publish_diagnostics(params)

    def clear(uri: str) -> None:
        if not client_pulls(server.caps):
            server.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri, []))

    server.analyzer.on_analysis(publish)
    server.analyzer.on_close(clear)
