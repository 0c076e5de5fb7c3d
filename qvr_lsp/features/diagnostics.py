"""Publish the checker's diagnostics for every analysis of a current text, with its version.

A client that pulls diagnostics (pull_diagnostics.py) is not pushed to.
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


def refresh_support(caps: lsp.ClientCapabilities | None) -> bool:
    path = "workspace.diagnostics.refresh_support"
    return caps is not None and bool(get_capability(caps, path, False))


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
    refreshed_generation = 0

    def publish(analysis: Analysis) -> None:
        nonlocal refreshed_generation
        if client_pulls(server.caps):
            # The client asks for them (pull_diagnostics.py) and is not pushed to;
            # new settings change every file's diagnostics: tell it to ask again.
            if analysis.generation > refreshed_generation and refresh_support(server.caps):
                refreshed_generation = analysis.generation
                server.workspace_diagnostic_refresh(None)
            return
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
