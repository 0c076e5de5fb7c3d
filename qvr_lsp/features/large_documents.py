"""Large documents: said once, when a document first gets diagnostics only.

Above `analysis.analyzer.LARGE_DOCUMENT_CHARS` the server checks a document in a
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

from qvr_lsp.analysis.analyzer import LARGE_DOCUMENT_CHARS

if TYPE_CHECKING:
    from qvr_lsp.analysis.session import Session
    from qvr_lsp.analysis.snapshots import Analysis


def notice(uri: str, chars: int) -> str:
    name = PurePosixPath(unquote(urlparse(uri).path)).name or uri
    return (
        f"qvr: {name} is large ({chars / 1e6:.1f} million characters, over"
        f" {LARGE_DOCUMENT_CHARS / 1e6:g} million): it gets diagnostics only; hover,"
        " navigation, semantic tokens, inlay hints, folding, the outline and formatting"
        " are off for it"
    )


def told(_: Session) -> set[str]:
    """The documents told about since they were opened (the session owns the set)."""
    return set()


def tell(session: Session, analysis: Analysis) -> None:
    """The first analysis of a large document since it was opened: say so, once."""
    said = session.own(told)
    if analysis.large and analysis.uri not in said:
        said.add(analysis.uri)
        message = notice(analysis.uri, len(analysis.text))
        session.server.window_show_message(lsp.ShowMessageParams(lsp.MessageType.Info, message))


def forget(session: Session, uri: str) -> None:
    """Closed: the next opening is told again."""
    session.own(told).discard(uri)
