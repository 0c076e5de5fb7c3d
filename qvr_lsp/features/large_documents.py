"""Large documents: said once, when a document first gets diagnostics only.

Above `analysis.LARGE_DOCUMENT_CHARS` the server checks a document in a
child process and publishes its diagnostics, but the features that need the
checked module answer nothing for it (hover, definition and references,
semantic tokens, inlay hints, folding and selection ranges, the outline,
code lenses, completion from its names, formatting). The user is told so
once per opening, with `window/showMessage`, instead of wondering why.
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlparse

from lsprotocol import types as lsp

from qvr_lsp.analysis import LARGE_DOCUMENT_CHARS, Analysis

if TYPE_CHECKING:
    from qvr_lsp.server import QvrLanguageServer


def notice(uri: str, chars: int) -> str:
    name = PurePosixPath(unquote(urlparse(uri).path)).name or uri
    return (
        f"qvr: {name} is large ({chars / 1e6:.1f} million characters, over"
        f" {LARGE_DOCUMENT_CHARS / 1e6:g} million): it gets diagnostics only; hover,"
        " navigation, semantic tokens, inlay hints, folding, the outline and formatting"
        " are off for it"
    )


def register(server: QvrLanguageServer) -> None:
    told: set[str] = set()

    def on_analysis(analysis: Analysis) -> None:
        if analysis.large and analysis.uri not in told:
            told.add(analysis.uri)
            message = notice(analysis.uri, len(analysis.text))
            server.window_show_message(lsp.ShowMessageParams(lsp.MessageType.Info, message))

    server.analyzer.on_analysis(on_analysis)
    server.analyzer.on_close(told.discard)
